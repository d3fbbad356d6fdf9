// PNG through libpng's simplified API (png_image), JPEG through libjpeg's decompressor with an
// error handler that returns to us: libjpeg's default handler calls exit().
#include "io/image_file.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "tandem/errors.h"

namespace tandem::io {

namespace {
std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("image " + path + ": cannot open the file: " + std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

DecodedImage decode_png(const std::string& path, std::span<const uint8_t> bytes) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw Error("image " + path + ": not a readable PNG: " + image.message);
  // sRGB 8-bit RGBA: libpng keeps the stored 8-bit values (no gamma change) and drops 16-bit to 8.
  image.format = PNG_FORMAT_RGBA;
  DecodedImage out{image.height, image.width, std::vector<uint8_t>(PNG_IMAGE_SIZE(image))};
  if (!png_image_finish_read(&image, nullptr, out.rgba.data(), 0, nullptr)) {
    const std::string reason = image.message;
    png_image_free(&image);
    throw Error("image " + path + ": damaged PNG: " + reason);
  }
  return out;
}

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf back;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->back, 1);
}

// The C++ objects live in the caller's frame and are reached through references, so the longjmp
// back from libjpeg leaves none of this frame's locals indeterminate and skips no destructor.
bool read_jpeg(jpeg_decompress_struct& info, JpegErrors& errors, std::span<const uint8_t> bytes, DecodedImage& out,
               std::vector<uint8_t>& row) {
  if (setjmp(errors.back)) return false;
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;  // gray is replicated; libjpeg refuses CMYK with a message
  jpeg_start_decompress(&info);
  out.height = info.output_height;
  out.width = info.output_width;
  out.rgba.assign(static_cast<std::size_t>(out.height * out.width * 4), 255);
  row.resize(static_cast<std::size_t>(out.width * 3));
  while (info.output_scanline < info.output_height) {
    uint8_t* dst = out.rgba.data() + static_cast<int64_t>(info.output_scanline) * out.width * 4;
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&info, rows, 1);
    for (int64_t x = 0; x < out.width; ++x) std::copy_n(&row[static_cast<std::size_t>(x * 3)], 3, dst + x * 4);
  }
  jpeg_finish_decompress(&info);
  return true;
}

DecodedImage decode_jpeg(const std::string& path, std::span<const uint8_t> bytes) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpeg_fail;
  errors.manager.output_message = [](j_common_ptr) {};  // warnings (a missing end marker) are not errors
  DecodedImage out;
  std::vector<uint8_t> row;
  const bool ok = read_jpeg(info, errors, bytes, out, row);
  jpeg_destroy_decompress(&info);
  if (!ok) throw Error("image " + path + ": damaged JPEG: " + errors.message);
  return out;
}
}  // namespace

bool is_supported_image_name(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.ends_with(".png") || lower.ends_with(".jpg") || lower.ends_with(".jpeg");
}

DecodedImage decode_image(const std::string& path) { return decode_image_bytes(path, read_bytes(path)); }

DecodedImage decode_image_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G'};
  static const uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF};
  if (bytes.size() >= 4 && std::equal(kPng, kPng + 4, bytes.begin())) return decode_png(path, bytes);
  if (bytes.size() >= 3 && std::equal(kJpeg, kJpeg + 3, bytes.begin())) return decode_jpeg(path, bytes);
  throw Error("image " + path + ": neither a PNG nor a JPEG file (its first bytes match neither format)");
}

}  // namespace tandem::io
