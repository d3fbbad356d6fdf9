// Keras's TensorBoard weight images (weight_images.h).
#include "callbacks/weight_images.h"

#include <algorithm>
#include <cmath>

namespace tandem::callbacks::detail {

std::optional<WeightImages> weight_images(const Tensor& weight) {
  std::vector<int64_t> d;  // ops.squeeze
  for (int64_t n : weight.shape().dims())
    if (n != 1) d.push_back(n);
  const Tensor values = weight.cast(DType::F64);
  const std::span<const double> v = values.values<double>();
  WeightImages out;
  std::vector<double> ordered;  // the values in [count, height, width, channels] order
  if (d.size() == 1) {
    out = {1, d[0], 1, 1};
    ordered.assign(v.begin(), v.end());
  } else if (d.size() == 2) {
    const bool transpose = d[0] > d[1];  // a Dense kernel lies on its long side
    out = {1, transpose ? d[1] : d[0], transpose ? d[0] : d[1], 1};
    for (int64_t i = 0; i < out.height; ++i)
      for (int64_t j = 0; j < out.width; ++j) ordered.push_back(transpose ? v[j * d[1] + i] : v[i * d[1] + j]);
  } else if (d.size() == 3) {  // channels_last: each of the last axis's slices is an image
    out = {d[2], d[0], d[1], 1};
    for (int64_t k = 0; k < d[2]; ++k)
      for (int64_t i = 0; i < d[0]; ++i)
        for (int64_t j = 0; j < d[1]; ++j) ordered.push_back(v[(i * d[1] + j) * d[2] + k]);
  } else if (d.size() == 4 && (d[3] == 1 || d[3] == 3 || d[3] == 4)) {
    out = {d[0], d[1], d[2], static_cast<int>(d[3])};
    ordered.assign(v.begin(), v.end());
  } else {
    return std::nullopt;
  }
  out.count = std::min<int64_t>(out.count, 3);
  ordered.resize(static_cast<std::size_t>(out.count * out.height * out.width * out.channels));
  const bool f32 = weight.dtype() == DType::F32;
  for (double x : ordered) {
    const double scaled = f32 ? static_cast<double>(static_cast<float>(x) * 255.5f) : x * 255.5;
    out.pixels.push_back(std::isnan(scaled) ? 0 : static_cast<uint8_t>(std::clamp(scaled, 0.0, 255.0)));
  }
  return out;
}

}  // namespace tandem::callbacks::detail
