// layer_norm and its gradient over the last axis (rows of n elements). Row statistics are taken in
// double with two passes; dgamma and dbeta are summed over fixed blocks of rows combined in order,
// so the result is the same whatever the number of threads.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
constexpr int64_t kBlockElements = 1 << 14;

struct Rows {
  int64_t rows = 0, n = 1;
  explicit Rows(const TensorType& t) : rows(numel(t) / std::max<int64_t>(1, t.shape.back())), n(t.shape.back()) {}
};

// Mean and 1/sqrt(var + ε) of one row, var biased.
template <class T>
std::pair<double, double> row_stats(const T* x, int64_t n, double eps) {
  double mean = 0;
  for (int64_t j = 0; j < n; ++j) mean += double(x[j]);
  mean /= double(n);
  double var = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = double(x[j]) - mean;
    var += d * d;
  }
  return {mean, 1.0 / std::sqrt(var / double(n) + eps)};
}

template <class T>
KernelFn make_layer_norm(const KernelInit& k) {
  const Rows s(k.in_types[0]);
  const double eps = k.node.attrs.f("epsilon");
  const T *x = in<T>(k, 0), *gamma = in<T>(k, 1), *beta = in<T>(k, 2);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(s.rows, kElementwiseGrain / s.n + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * s.n;
        T* yr = y + r * s.n;
        const auto [mean, rstd] = row_stats(xr, s.n, eps);
        for (int64_t j = 0; j < s.n; ++j) yr[j] = T((double(xr[j]) - mean) * rstd * double(gamma[j]) + double(beta[j]));
      }
    });
  };
}

// (dy, x, gamma) -> (dx, dgamma, dbeta). Per row, with x̂ = (x − mean)·r and g = dy·γ:
// dx = r·(g − mean(g) − x̂·mean(g·x̂)); over rows dgamma = Σ dy·x̂ and dbeta = Σ dy.
template <class T>
KernelFn make_layer_norm_grad(const KernelInit& k) {
  const Rows s(k.in_types[1]);
  const double eps = k.node.attrs.f("epsilon");
  const T *dy = in<T>(k, 0), *x = in<T>(k, 1), *gamma = in<T>(k, 2);
  T *dx = out<T>(k, 0), *dgamma = out<T>(k, 1), *dbeta = out<T>(k, 2);
  const int64_t rows_per_block = std::max<int64_t>(1, kBlockElements / s.n);
  const int64_t blocks = (s.rows + rows_per_block - 1) / rows_per_block;
  // Per block: Σ dy·x̂ (n values) then Σ dy (n values).
  const auto partial = std::make_shared<std::vector<double>>(static_cast<std::size_t>(blocks * 2 * s.n));
  Context* ctx = &context(k);
  return [=] {
    double* part = partial->data();
    ctx->parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double* pg = part + b * 2 * s.n;
        double* pb = pg + s.n;
        std::fill(pg, pg + 2 * s.n, 0.0);
        const int64_t end = std::min(s.rows, (b + 1) * rows_per_block);
        for (int64_t r = b * rows_per_block; r < end; ++r) {
          const T *xr = x + r * s.n, *dyr = dy + r * s.n;
          T* dxr = dx + r * s.n;
          const auto [mean, rstd] = row_stats(xr, s.n, eps);
          double sum_g = 0, sum_gx = 0;
          for (int64_t j = 0; j < s.n; ++j) {
            const double xhat = (double(xr[j]) - mean) * rstd, d = double(dyr[j]), g = d * double(gamma[j]);
            sum_g += g;
            sum_gx += g * xhat;
            pg[j] += d * xhat;
            pb[j] += d;
          }
          const double mg = sum_g / double(s.n), mgx = sum_gx / double(s.n);
          for (int64_t j = 0; j < s.n; ++j) {
            const double xhat = (double(xr[j]) - mean) * rstd;
            dxr[j] = T(rstd * (double(dyr[j]) * double(gamma[j]) - mg - xhat * mgx));
          }
        }
      }
    });
    for (int64_t j = 0; j < s.n; ++j) {
      double g = 0, bsum = 0;
      for (int64_t b = 0; b < blocks; ++b) g += part[b * 2 * s.n + j], bsum += part[b * 2 * s.n + s.n + j];
      dgamma[j] = T(g);
      dbeta[j] = T(bsum);
    }
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("layer_norm", make_layer_norm);
REGISTER_CPU_FLOAT_KERNEL("layer_norm_grad", make_layer_norm_grad);

}  // namespace tandem::backend::cpu
