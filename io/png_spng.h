// PNG decoding through libspng for the images where it gives, bit for bit, what libpng's
// simplified API gives (io/image_file.cpp's decoder for every other PNG): straight into the
// channel layout asked for (a gray image stays one channel), where libpng's simplified API would
// expand it to RGBA first. For a 28x28 gray image that is 10 µs instead of 12 (zlib's inflate is
// most of both).
#pragma once

#include <cstdint>
#include <span>

#include "io/image_file.h"

namespace tandem::io {

// Decodes `bytes` (a PNG file) into `out` in `channels` channels (1, 3 or 4; ImagePixels) and
// returns true; returns false, with `out` unspecified, for a PNG it leaves to libpng: samples of 16
// bits (libpng reads them as linear light and encodes them as sRGB), a gAMA chunk libpng corrects
// for, or anything libspng finds wrong (libpng then gives its own message or reading).
bool decode_png_spng(std::span<const uint8_t> bytes, int64_t channels, ImagePixels& out);

}  // namespace tandem::io
