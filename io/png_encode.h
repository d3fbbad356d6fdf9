// Encoding 8-bit pixels as PNG (libpng's simplified API), for images written into TensorBoard's
// event files.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tandem::io {

// `pixels` is height × width × channels bytes, rows first; channels 1 (gray), 3 (RGB) or 4 (RGBA).
// Returns the PNG file's bytes; throws tandem::Error with libpng's reason.
std::string encode_png(int64_t height, int64_t width, int channels, std::span<const uint8_t> pixels);

}  // namespace tandem::io
