#include "io/png_spng.h"

#include <png.h>  // libpng's default image size limits, kept here
#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace tandem::io {

namespace {
struct CtxFree {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};

// Whether every chunk up to IEND has a type of four ASCII letters and the file reaches IEND.
// libpng refuses a file with any other chunk type; libspng skips such a chunk when it is
// ancillary (its CRC fails). Files that fail this go to libpng for its message.
bool chunk_types_are_letters(std::span<const uint8_t> png) {
  const auto letter = [](uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  std::size_t at = 8;  // after the signature
  while (png.size() - at >= 8) {
    const uint8_t* chunk = png.data() + at;
    const std::size_t length = std::size_t{chunk[0]} << 24 | std::size_t{chunk[1]} << 16 | std::size_t{chunk[2]} << 8 | chunk[3];
    if (!letter(chunk[4]) || !letter(chunk[5]) || !letter(chunk[6]) || !letter(chunk[7])) return false;
    if (std::memcmp(chunk + 4, "IEND", 4) == 0) return true;
    if (png.size() - at - 8 < length + 4) return false;  // cut inside this chunk
    at += length + 12;  // length, type, data, CRC
  }
  return false;
}

// Whether libpng's simplified API leaves 8-bit samples as stored. It converts them from the
// file's gamma to sRGB's when the gAMA chunk's value times sRGB's 2.2 is more than 5 % away from 1
// (PNG_GAMMA_THRESHOLD_FIXED); no gAMA chunk means sRGB. Kept well inside that band (1 %), so a
// value near libpng's threshold goes to libpng itself.
bool gamma_is_srgb(spng_ctx* ctx) {
  uint32_t gama = 0;  // gamma × 100000
  const int status = spng_get_gama_int(ctx, &gama);
  if (status == SPNG_ECHUNKAVAIL) return true;
  return status == 0 && std::abs(static_cast<int64_t>(gama) * 22 / 10 - 100000) <= 1000;
}
}  // namespace

bool decode_png_spng(std::span<const uint8_t> bytes, int64_t channels, ImagePixels& out) {
  if (bytes.size() < 8 || !chunk_types_are_letters(bytes)) return false;
  const std::unique_ptr<spng_ctx, CtxFree> owner(spng_ctx_new(0));
  spng_ctx* ctx = owner.get();
  if (!ctx) return false;
  spng_ihdr ihdr{};
  // libpng refuses images wider or taller than its user limits: so must this path.
  if (spng_set_image_limits(ctx, PNG_USER_WIDTH_MAX, PNG_USER_HEIGHT_MAX) || spng_set_png_buffer(ctx, bytes.data(), bytes.size()) ||
      spng_get_ihdr(ctx, &ihdr) || ihdr.bit_depth > 8 || !gamma_is_srgb(ctx))
    return false;
  // Gray asked of a gray image is its samples; RGB and RGBA come expanded from every color type
  // (palette applied, gray replicated; tRNS as alpha only where alpha is asked for); gray asked of a
  // color image is the luma of its RGB.
  const bool gray = channels == 1 && ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE;
  const int format = gray ? SPNG_FMT_G8 : channels == 4 ? SPNG_FMT_RGBA8 : SPNG_FMT_RGB8;
  std::size_t size = 0;
  if (spng_decoded_image_size(ctx, format, &size)) return false;
  out.values.resize(size);
  // libpng reads on to IEND and fails a file cut anywhere before it: so does spng_decode_chunks.
  if (spng_decode_image(ctx, out.values.data(), size, format, format == SPNG_FMT_RGBA8 ? SPNG_DECODE_TRNS : 0) ||
      spng_decode_chunks(ctx))
    return false;
  out.height = ihdr.height, out.width = ihdr.width, out.channels = channels;
  if (channels == 1 && !gray) {
    reduce_channels(out.values.data(), 3, out.height * out.width, 1, out.values.data());
    out.values.resize(static_cast<std::size_t>(out.height * out.width));
  }
  return true;
}

}  // namespace tandem::io
