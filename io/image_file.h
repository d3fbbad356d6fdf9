// Decoding PNG and JPEG files (libpng's simplified API and libjpeg-turbo) to 8-bit RGBA pixels.
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

// Whether the file name ends in an extension decode_image reads (.png, .jpg, .jpeg, any case).
bool is_supported_image_name(const std::string& path);

// Decides PNG or JPEG by the file's first bytes, not its name. Gray and palette images come out as
// RGB with gray replicated and the palette applied; 16-bit PNG samples are reduced to 8 bits.
// Throws tandem::Error naming the file and the decoder's reason for a file that cannot be read,
// is neither format, or is damaged.
DecodedImage decode_image(const std::string& path);
// The same for a file's bytes already in memory (a member of a tar shard); `name` is for messages.
DecodedImage decode_image_bytes(const std::string& name, std::span<const uint8_t> bytes);

}  // namespace tandem::io
