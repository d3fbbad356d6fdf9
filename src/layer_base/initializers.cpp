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

Tensor initialize(const Initializer& init, const Shape& shape, DType dtype, const std::string& owner) {
  check_initializer(init, owner);
  Tensor t(shape, DType::F64);
  auto v = t.values<double>();
  // A seeded initializer draws from its own seed alone (the same values whatever else was drawn,
  // as Keras's); an unseeded one takes the next seed of the global stream.
  rng::Stream r(init.seed ? rng::hash(*init.seed, 0x5eedULL) : next_seed());
  const std::string& c = init.class_name;
  if (c == "Zeros") {
  } else if (c == "Ones") {
    for (double& x : v) x = 1.0;
  } else if (c == "Constant") {
    for (double& x : v) x = init.value;
  } else if (c == "Identity") {
    if (shape.rank() != 2)
      throw ValueError(owner + ": the Identity initializer needs a 2-D weight, got shape " + shape.str());
    for (int64_t i = 0; i < std::min(shape[0], shape[1]); ++i) v[static_cast<std::size_t>(i * shape[1] + i)] = init.gain;
  } else if (c == "Orthogonal") {
    if (shape.rank() < 2)
      throw ValueError(owner + ": the Orthogonal initializer needs a weight of at least two dimensions, got shape " + shape.str());
    orthogonal(v, shape, r);
    for (double& x : v) x *= init.gain;
  } else if (c == "RandomNormal") {
    for (double& x : v) x = init.mean + init.stddev * normal(r);
  } else if (c == "TruncatedNormal") {
    for (double& x : v) x = init.mean + init.stddev * truncated_normal(r);
  } else if (c == "RandomUniform") {
    for (double& x : v) x = init.minval + (init.maxval - init.minval) * r.uniform();
  } else {  // VarianceScaling and its presets (check_initializer refused anything else)
    const auto [fan_in, fan_out] = fans(shape);
    const double n = init.mode == "fan_in" ? fan_in : init.mode == "fan_out" ? fan_out : (fan_in + fan_out) / 2;
    const double scale = init.scale / std::max(1.0, n);
    if (init.distribution == "uniform") {
      const double limit = std::sqrt(3.0 * scale);
      for (double& x : v) x = (2 * r.uniform() - 1) * limit;
    } else if (init.distribution == "untruncated_normal") {
      const double stddev = std::sqrt(scale);
      for (double& x : v) x = normal(r) * stddev;
    } else {
      const double stddev = std::sqrt(scale) / 0.87962566103423978;  // Keras's truncation correction
      for (double& x : v) x = truncated_normal(r) * stddev;
    }
  }
  return t.cast(dtype);
}

}  // namespace tandem
