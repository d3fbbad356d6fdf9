// The built-in row transforms: flips, whole-pixel shifts and normalisation of float32 rows.
#include "tandem/augmentation.h"

#include <algorithm>
#include <cmath>

#include "tandem/errors.h"

namespace tandem::datasets {
namespace {
// Uniform in [0, 1) from the generator's raw 64 bits (53 of them), the same on every platform.
double uniform(std::mt19937_64& random) { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

void check_image_row(const Shape& row, const char* who) {
  if (row.rank() != 3)
    throw ShapeError(std::string(who) + ": expected rows of shape (height, width, channels), got " + row.str());
}

// Swaps mirrored pixels in place: the first half of the axis with the second.
void flip_axis(std::span<float> x, const Shape& row, int axis) {
  const int64_t h = row[0], w = row[1], c = row[2];
  const int64_t rows = axis == 0 ? h / 2 : h, cols = axis == 1 ? w / 2 : w;
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t xx = 0; xx < cols; ++xx) {
      const int64_t my = axis == 0 ? h - 1 - y : y, mx = axis == 1 ? w - 1 - xx : xx;
      std::swap_ranges(&x[static_cast<std::size_t>((y * w + xx) * c)], &x[static_cast<std::size_t>((y * w + xx) * c)] + c,
                       &x[static_cast<std::size_t>((my * w + mx) * c)]);
    }
}

int64_t shift(std::mt19937_64& random, double factor, int64_t size) {
  const double limit = factor * double(size);
  return static_cast<int64_t>(std::lround((2 * uniform(random) - 1) * limit));
}

// Moves the image by (dy, dx) whole pixels; what comes in from outside is 0.
void shift_image(std::span<float> x, const Shape& row, int64_t dy, int64_t dx) {
  const int64_t h = row[0], w = row[1], c = row[2];
  std::vector<float> copy(x.begin(), x.end());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t xx = 0; xx < w; ++xx) {
      const int64_t sy = y - dy, sx = xx - dx;
      float* dst = &x[static_cast<std::size_t>((y * w + xx) * c)];
      if (sy < 0 || sy >= h || sx < 0 || sx >= w) std::fill(dst, dst + c, 0.f);
      else std::copy_n(&copy[static_cast<std::size_t>((sy * w + sx) * c)], c, dst);
    }
}
}  // namespace

RowTransform random_flip(const std::string& mode) {
  const bool horizontal = mode == "horizontal" || mode == "horizontal_and_vertical";
  const bool vertical = mode == "vertical" || mode == "horizontal_and_vertical";
  if (!horizontal && !vertical)
    throw ValueError("random_flip: mode must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\", got \"" + mode + "\"");
  return [horizontal, vertical](std::span<float> x, const Shape& row, std::mt19937_64& random) {
    check_image_row(row, "random_flip");
    if (horizontal && uniform(random) < 0.5) flip_axis(x, row, 1);
    if (vertical && uniform(random) < 0.5) flip_axis(x, row, 0);
  };
}

RowTransform random_translation(double height_factor, double width_factor) {
  for (const double f : {height_factor, width_factor})
    if (!(f >= 0.0 && f <= 1.0)) throw ValueError("random_translation: factors must be in [0, 1], got " + std::to_string(f));
  return [height_factor, width_factor](std::span<float> x, const Shape& row, std::mt19937_64& random) {
    check_image_row(row, "random_translation");
    const int64_t dy = shift(random, height_factor, row[0]), dx = shift(random, width_factor, row[1]);
    shift_image(x, row, dy, dx);
  };
}

RowTransform random_crop(int64_t padding) {
  if (padding < 0) throw ValueError("random_crop: padding must be >= 0, got " + std::to_string(padding));
  return [padding](std::span<float> x, const Shape& row, std::mt19937_64& random) {
    check_image_row(row, "random_crop");
    // The window's corner in the padded image, each coordinate uniform in 0 … 2·padding.
    auto corner = [&] { return static_cast<int64_t>(uniform(random) * double(2 * padding + 1)); };
    const int64_t top = corner(), left = corner();
    shift_image(x, row, padding - top, padding - left);
  };
}

RowTransform normalization(std::vector<float> mean, std::vector<float> variance) {
  if (mean.empty() || mean.size() != variance.size())
    throw ValueError("normalization: mean and variance must hold the same number (>= 1) of values, got " +
                     std::to_string(mean.size()) + " and " + std::to_string(variance.size()));
  for (const float v : variance)
    if (!(v > 0)) throw ValueError("normalization: every variance must be positive, got " + std::to_string(v));
  return [mean = std::move(mean), variance = std::move(variance)](std::span<float> x, const Shape& row, std::mt19937_64&) {
    const auto k = static_cast<int64_t>(mean.size());
    const int64_t last = row.rank() ? row[-1] : 1;
    if (k != 1 && k != last)
      throw ShapeError("normalization: " + std::to_string(k) + " statistics for rows of shape " + row.str() +
                       "; expected 1 or " + std::to_string(last));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto j = k == 1 ? 0 : i % static_cast<std::size_t>(k);
      x[i] = (x[i] - mean[j]) / std::sqrt(variance[j]);
    }
  };
}

}  // namespace tandem::datasets
