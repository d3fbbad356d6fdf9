// Decoding PNG and JPEG files (libspng, libpng's simplified API and libjpeg-turbo) to 8-bit pixels.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::io {

struct DecodedImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgba;  // height × width × 4, rows first; opaque images get alpha 255
};

// An image in the channel layout a dataset reads, 8 bits a value: 1 (grayscale: PIL's integer
// luma "L" of the RGB values), 3 (RGB, alpha dropped, as TensorFlow's decoder does with
// channels=3) or 4 (RGBA, as DecodedImage).
struct ImagePixels {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> values;  // height × width × channels, rows first
};

// Whether the file name ends in an extension decode_image reads (.png, .jpg, .jpeg, any case).
bool is_supported_image_name(const std::string& path);

// Decides PNG or JPEG by the file's first bytes, not its name. Gray and palette images come out as
// RGB with gray replicated and the palette applied; 16-bit PNG samples are reduced to 8 bits.
// Throws tandem::Error naming the file and the decoder's reason for a file that cannot be read,
// is neither format, or is damaged.
DecodedImage decode_image(const std::string& path);
// The same for a file's bytes already in memory (a member of a tar shard); `name` is for messages.
DecodedImage decode_image_bytes(const std::string& name, std::span<const uint8_t> bytes);

// decode_image's pixels reduced to `channels` (1, 3 or 4; ImagePixels), the same values bit for bit
// and the same errors, for reading many images: PNGs of up to 8 bits a sample decode straight into
// that layout, the file is read into a buffer the calling thread keeps, and `out` keeps its
// storage from one call to the next.
void decode_image(const std::string& path, int64_t channels, ImagePixels& out);
void decode_image_bytes(const std::string& name, std::span<const uint8_t> bytes, int64_t channels, ImagePixels& out);

// Reduces `pixels` pixels of `from` channels (3 or 4: RGB or RGBA) to `to` channels (1, 3 or 4, at
// most `from`) as ImagePixels defines them. `out` may be `in` (the values move down in place).
void reduce_channels(const uint8_t* in, int64_t from, int64_t pixels, int64_t to, uint8_t* out);

}  // namespace tandem::io
