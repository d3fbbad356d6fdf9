// PNG through libspng where it gives libpng's values exactly (io/png_spng.h), otherwise through
// libpng's simplified API (png_image); JPEG through libjpeg's decompressor with an error handler
// that returns to us: libjpeg's default handler calls exit().
#include "io/image_file.h"

#include <fcntl.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "io/png_spng.h"
#include "tandem/errors.h"

namespace tandem::io {

namespace {
// The whole file into `buffer` (resized to it) with open, fstat and one read for a regular file:
// a fifth cheaper than an ifstream for the small files of an image folder.
void read_file(const std::string& path, std::vector<uint8_t>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("image " + path + ": cannot open the file: " + std::strerror(errno));
  struct stat info {};
  const bool sized = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  // A regular file is read to its size; anything else until read() says the end.
  buffer.resize(sized ? static_cast<std::size_t>(info.st_size) : 65536);
  std::size_t n = 0;
  for (;;) {
    if (n == buffer.size()) {
      if (sized) break;
      buffer.resize(buffer.size() * 2);
    }
    const ssize_t got = ::read(fd, buffer.data() + n, buffer.size() - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw Error("image " + path + ": cannot read the file: " + std::strerror(error));
    }
    if (got == 0) break;  // shorter than fstat said: it shrank meanwhile
    n += static_cast<std::size_t>(got);
  }
  ::close(fd);
  buffer.resize(n);
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

void reduce_channels(const uint8_t* in, int64_t from, int64_t pixels, int64_t to, uint8_t* out) {
  for (int64_t p = 0; p < pixels; ++p) {
    const uint8_t r = in[p * from], g = in[p * from + 1], b = in[p * from + 2], a = from == 4 ? in[p * from + 3] : 255;
    uint8_t* dst = out + p * to;
    if (to == 1) {
      // PIL's "L": ITU-R 601-2 luma in 16-bit fixed point, rounded (gray r = g = b gives r back).
      dst[0] = static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
    } else {
      dst[0] = r, dst[1] = g, dst[2] = b;
      if (to == 4) dst[3] = a;
    }
  }
}

DecodedImage decode_image(const std::string& path) {
  ImagePixels pixels;
  decode_image(path, 4, pixels);
  return {pixels.height, pixels.width, std::move(pixels.values)};
}

DecodedImage decode_image_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  ImagePixels pixels;
  decode_image_bytes(path, bytes, 4, pixels);
  return {pixels.height, pixels.width, std::move(pixels.values)};
}

void decode_image(const std::string& path, int64_t channels, ImagePixels& out) {
  // Each decoding thread keeps its file buffer; one that a large file grew is let go afterwards.
  thread_local std::vector<uint8_t> buffer;
  read_file(path, buffer);
  decode_image_bytes(path, buffer, channels, out);
  if (buffer.capacity() > (std::size_t{4} << 20)) std::vector<uint8_t>().swap(buffer);
}

void decode_image_bytes(const std::string& path, std::span<const uint8_t> bytes, int64_t channels, ImagePixels& out) {
  if (channels != 1 && channels != 3 && channels != 4)
    throw Error("image " + path + ": channels must be 1, 3 or 4, got " + std::to_string(channels));
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G'};
  static const uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF};
  DecodedImage rgba;
  if (bytes.size() >= 4 && std::equal(kPng, kPng + 4, bytes.begin())) {
    if (decode_png_spng(bytes, channels, out)) return;
    rgba = decode_png(path, bytes);
  } else if (bytes.size() >= 3 && std::equal(kJpeg, kJpeg + 3, bytes.begin())) {
    rgba = decode_jpeg(path, bytes);
  } else {
    throw Error("image " + path + ": neither a PNG nor a JPEG file (its first bytes match neither format)");
  }
  out.height = rgba.height, out.width = rgba.width, out.channels = channels;
  if (channels == 4) {
    out.values.swap(rgba.rgba);
    return;
  }
  out.values.resize(static_cast<std::size_t>(rgba.height * rgba.width * channels));
  reduce_channels(rgba.rgba.data(), 4, rgba.height * rgba.width, channels, out.values.data());
}

}  // namespace tandem::io
