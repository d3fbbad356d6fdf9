// PNG encoding (png_encode.h).
#include "io/png_encode.h"

#include <png.h>

#include <cstring>

#include "tandem/errors.h"

namespace tandem::io {

std::string encode_png(int64_t height, int64_t width, int channels, std::span<const uint8_t> pixels) {
  if (channels != 1 && channels != 3 && channels != 4)
    throw ValueError("encode_png: channels must be 1, 3 or 4, got " + std::to_string(channels));
  if (height < 1 || width < 1 || static_cast<std::size_t>(height * width * channels) != pixels.size())
    throw ValueError("encode_png: " + std::to_string(height) + " x " + std::to_string(width) + " x " + std::to_string(channels) +
                     " pixels do not match the " + std::to_string(pixels.size()) + " bytes given");
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width), image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  // One pass into a buffer of libpng's bound for the image (measuring first would compress twice).
  png_alloc_size_t bytes = PNG_IMAGE_PNG_SIZE_MAX(image);
  std::string out(bytes, '\0');
  if (png_image_write_to_memory(&image, out.data(), &bytes, 0, pixels.data(), 0, nullptr)) {
    out.resize(bytes);
    return out;
  }
  const std::string reason = image.message;
  png_image_free(&image);
  throw Error("encode_png: libpng cannot encode the image: " + reason);
}

}  // namespace tandem::io
