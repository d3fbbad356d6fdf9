#include "layer_base/initializers.h"

#include <cmath>
#include <algorithm>
#include <mutex>
#include <span>
#include <vector>

#include "core/random.h"
#include "tandem/errors.h"
#include "tandem/layer.h"

namespace tandem {

namespace {
struct SeedState {
  std::mutex mutex;
  uint64_t seed = 0;
  uint64_t drawn = 0;
};
SeedState& seed_state() {
  static SeedState s;
  return s;
}

// fan_in, fan_out as Keras computes them: dense (in, out); conv kernels multiply by the receptive field.
std::pair<double, double> fans(const Shape& s) {
  if (s.rank() == 0) return {1, 1};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  double receptive = 1;
  for (int i = 0; i < s.rank() - 2; ++i) receptive *= double(s[i]);
  return {double(s[-2]) * receptive, double(s[-1]) * receptive};
}

double normal(rng::Stream& r) {  // Box–Muller
  const double u1 = 1.0 - r.uniform(), u2 = r.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Keras's Orthogonal (gain 1): the Q of a QR decomposition of a standard normal (max, min) matrix
// with R's diagonal made positive — which is what Gram–Schmidt on its columns gives — transposed
// when the weight has fewer rows than columns. Rows are every axis but the last.
void orthogonal(std::span<double> out, const Shape& shape, rng::Stream& r);

double truncated_normal(rng::Stream& r) {  // resample outside two standard deviations, like Keras
  for (;;) {
    const double z = normal(r);
    if (std::abs(z) <= 2.0) return z;
  }
}
void orthogonal(std::span<double> out, const Shape& shape, rng::Stream& r) {
  const int64_t cols_of_weight = shape.rank() ? shape[-1] : 1;
  const int64_t rows_of_weight = shape.num_elements() / std::max<int64_t>(cols_of_weight, 1);
  const int64_t m = std::max(rows_of_weight, cols_of_weight), n = std::min(rows_of_weight, cols_of_weight);
  std::vector<double> a(static_cast<std::size_t>(m * n));  // (m, n) row-major
  for (double& x : a) x = normal(r);
  auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<std::size_t>(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {  // modified Gram–Schmidt, column by column
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += at(i, k) * at(i, j);
      for (int64_t i = 0; i < m; ++i) at(i, j) -= dot * at(i, k);
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += at(i, j) * at(i, j);
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) at(i, j) /= norm;
  }
  const bool transpose = rows_of_weight < cols_of_weight;
  for (int64_t i = 0; i < rows_of_weight; ++i)
    for (int64_t j = 0; j < cols_of_weight; ++j) out[static_cast<std::size_t>(i * cols_of_weight + j)] = transpose ? at(j, i) : at(i, j);
}
}  // namespace

void set_random_seed(uint64_t seed) {
  std::lock_guard lock(seed_state().mutex);
  seed_state().seed = seed;
  seed_state().drawn = 0;
}

uint64_t next_seed() {
  std::lock_guard lock(seed_state().mutex);
  return rng::hash(seed_state().seed, seed_state().drawn++);
}

RandomState random_state() {
  std::lock_guard lock(seed_state().mutex);
  return {seed_state().seed, seed_state().drawn};
}

void set_random_state(const RandomState& state) {
  std::lock_guard lock(seed_state().mutex);
  seed_state().seed = state.seed;
  seed_state().drawn = state.drawn;
}

Tensor initialize(const std::string& name, const Shape& shape, DType dtype, const std::string& owner) {
  Tensor t(shape, DType::F64);
  auto v = t.values<double>();
  rng::Stream r(next_seed());
  const auto [fan_in, fan_out] = fans(shape);
  if (name == "zeros") {
  } else if (name == "ones") {
    for (double& x : v) x = 1.0;
  } else if (name == "glorot_uniform" || name == "he_uniform" || name == "lecun_uniform") {
    const double n = name == "glorot_uniform" ? (fan_in + fan_out) / 2 : fan_in;
    const double scale = name == "he_uniform" ? 2.0 : 1.0;
    const double limit = std::sqrt(3.0 * scale / n);
    for (double& x : v) x = (2 * r.uniform() - 1) * limit;
  } else if (name == "glorot_normal" || name == "he_normal" || name == "lecun_normal") {
    const double n = name == "glorot_normal" ? (fan_in + fan_out) / 2 : fan_in;
    const double scale = name == "he_normal" ? 2.0 : 1.0;
    const double stddev = std::sqrt(scale / n) / 0.87962566103423978;  // Keras's truncation correction
    for (double& x : v) x = truncated_normal(r) * stddev;
  } else if (name == "uniform" || name == "random_uniform") {
    for (double& x : v) x = (2 * r.uniform() - 1) * 0.05;
  } else if (name == "normal" || name == "random_normal") {
    for (double& x : v) x = normal(r) * 0.05;
  } else if (name == "orthogonal") {
    orthogonal(v, shape, r);
  } else {
    throw ValueError(owner + ": unknown initializer '" + name +
                     "'; expected one of zeros, ones, glorot_uniform, glorot_normal, he_uniform, he_normal, "
                     "lecun_uniform, lecun_normal, uniform, normal, orthogonal");
  }
  return t.cast(dtype);
}

}  // namespace tandem
