// What the strategy tests share: virtual CPU device names, a separable classification dataset,
// and how far two sets of weights are apart.
#pragma once

#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

inline std::vector<std::string> cpus(int k) {
  std::vector<std::string> d;
  for (int i = 0; i < k; ++i) d.push_back("cpu:" + std::to_string(i));
  return d;
}

// `rows` rows of `features` normal values; row r has class r mod `classes`, and the features
// f ≡ r (mod classes) are shifted by 1.5, so the classes separate.
inline tandem::Dataset blobs(int64_t rows, int64_t features, int classes) {
  std::mt19937_64 gen(11);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * features));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % classes);
    for (int64_t f = 0; f < features; ++f)
      x[static_cast<std::size_t>(r * features + f)] = normal(gen) + (f % classes == r % classes ? 1.5f : 0.0f);
  }
  return {tandem::Tensor::from({rows, features}, std::span<const float>(x)), tandem::Tensor::from({rows}, std::span<const int32_t>(y))};
}

// Per weight tensor, the largest elementwise difference relative to the tensor's largest value
// (at least `floor`); the worst over tensors. (Elementwise relative error is meaningless for
// weights near zero.)
inline double max_relative_difference(const std::vector<tandem::Tensor>& a, const std::vector<tandem::Tensor>& b, double floor = 1e-12) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double diff = 0, scale = floor;
    for (int64_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, std::abs(a[i].item(j) - b[i].item(j)));
      scale = std::max(scale, std::abs(b[i].item(j)));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}
