// batch_norm_train, batch_norm_infer and their gradients, with x viewed as (outer, channels, inner)
// around the channel axis (inner = 1 when channels are last). Per-channel sums are taken in double
// over fixed blocks of rows and the blocks are combined in order, so the result is the same
// whatever the number of threads.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
constexpr int64_t kBlockElements = 1 << 14;

struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t rows_per_block = 1, blocks = 1;
  ChannelView(const Shape& s, int64_t axis_attr) {
    const int axis = ops::normalize_axis(axis_attr, s.rank(), "batch_norm");
    for (int i = 0; i < s.rank(); ++i) (i < axis ? outer : i == axis ? channels : inner) *= s[i];
    rows_per_block = std::max<int64_t>(1, kBlockElements / std::max<int64_t>(1, channels * inner));
    blocks = (outer + rows_per_block - 1) / rows_per_block;
  }
  int64_t count() const { return outer * inner; }  // elements per channel
};

// sums[k·C + c] = Σ over the elements of channel c of f(index, c)[k], for K sums in one pass.
// `partial` holds blocks·K·C doubles.
template <int K, class F>
void channel_sums(Context& ctx, const ChannelView& v, double* partial, double* sums, const F& f) {
  const int64_t C = v.channels;
  ctx.parallel_for(v.blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double* p = partial + b * K * C;
      std::fill(p, p + K * C, 0.0);
      const int64_t end = std::min(v.outer, (b + 1) * v.rows_per_block);
      for (int64_t o = b * v.rows_per_block; o < end; ++o)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t base = (o * C + c) * v.inner;
          for (int64_t i = 0; i < v.inner; ++i) {
            const std::array<double, K> t = f(base + i, c);
            for (int j = 0; j < K; ++j) p[j * C + c] += t[static_cast<std::size_t>(j)];
          }
        }
    }
  });
  std::fill(sums, sums + K * C, 0.0);
  for (int64_t b = 0; b < v.blocks; ++b)
    for (int64_t j = 0; j < K * C; ++j) sums[j] += partial[b * K * C + j];
}

// Calls f(index, channel) for every element, rows split across threads.
template <class F>
void for_each_element(Context& ctx, const ChannelView& v, const F& f) {
  ctx.parallel_for(v.outer, kElementwiseGrain / (v.channels * v.inner) + 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < v.channels; ++c) {
        const int64_t base = (o * v.channels + c) * v.inner;
        for (int64_t i = 0; i < v.inner; ++i) f(base + i, c);
      }
  });
}

using Scratch = std::shared_ptr<std::vector<double>>;
Scratch scratch(int64_t n) { return std::make_shared<std::vector<double>>(static_cast<std::size_t>(n)); }

// (x, gamma, beta) -> (y, mean, biased variance). Two passes for the statistics (mean, then the
// squared deviations) keep the variance accurate when the mean is large.
template <class T>
KernelFn make_batch_norm_train(const KernelInit& k) {
  const ChannelView v(k.in_types[0].shape, k.node.attrs.i("axis"));
  const double eps = k.node.attrs.f("epsilon");
  const T *x = in<T>(k, 0), *gamma = in<T>(k, 1), *beta = in<T>(k, 2);
  T *y = out<T>(k, 0), *mean = out<T>(k, 1), *var = out<T>(k, 2);
  const int64_t C = v.channels;
  const double count = static_cast<double>(v.count());
  const Scratch buf = scratch(v.blocks * C + 3 * C);
  Context* ctx = &context(k);
  return [=] {
    double* partial = buf->data();
    double *m = partial + v.blocks * C, *s = m + C, *a = s + C;
    channel_sums<1>(*ctx, v, partial, m, [&](int64_t i, int64_t) { return std::array<double, 1>{double(x[i])}; });
    for (int64_t c = 0; c < C; ++c) m[c] /= count;
    channel_sums<1>(*ctx, v, partial, s, [&](int64_t i, int64_t c) {
      const double d = double(x[i]) - m[c];
      return std::array<double, 1>{d * d};
    });
    for (int64_t c = 0; c < C; ++c) {
      s[c] /= count;
      mean[c] = T(m[c]);
      var[c] = T(s[c]);
      a[c] = double(gamma[c]) / std::sqrt(s[c] + eps);
    }
    for_each_element(*ctx, v, [&](int64_t i, int64_t c) { y[i] = T((double(x[i]) - m[c]) * a[c] + double(beta[c])); });
  };
}

// (x, gamma, beta, mean, variance) -> y with the given statistics.
template <class T>
KernelFn make_batch_norm_infer(const KernelInit& k) {
  const ChannelView v(k.in_types[0].shape, k.node.attrs.i("axis"));
  const double eps = k.node.attrs.f("epsilon");
  const T *x = in<T>(k, 0), *gamma = in<T>(k, 1), *beta = in<T>(k, 2), *mean = in<T>(k, 3), *var = in<T>(k, 4);
  T* y = out<T>(k);
  const int64_t C = v.channels;
  const Scratch buf = scratch(C);
  Context* ctx = &context(k);
  return [=] {
    double* a = buf->data();
    for (int64_t c = 0; c < C; ++c) a[c] = double(gamma[c]) / std::sqrt(double(var[c]) + eps);
    for_each_element(*ctx, v, [&](int64_t i, int64_t c) {
      y[i] = T((double(x[i]) - double(mean[c])) * a[c] + double(beta[c]));
    });
  };
}

// (dy, x, gamma, mean, variance) -> (dx, dgamma, dbeta). With x̂ = (x − mean)·r, r = 1/sqrt(var + ε):
// dbeta = Σ dy, dgamma = Σ dy·x̂; with given statistics dx = γ·r·dy, and with batch statistics
// (which depend on x) dx = γ·r·(dy − dbeta/M − x̂·dgamma/M).
template <class T>
KernelFn make_batch_norm_grad(const KernelInit& k, bool batch_stats) {
  const ChannelView v(k.in_types[1].shape, k.node.attrs.i("axis"));
  const double eps = k.node.attrs.f("epsilon");
  const T *dy = in<T>(k, 0), *x = in<T>(k, 1), *gamma = in<T>(k, 2), *mean = in<T>(k, 3), *var = in<T>(k, 4);
  T *dx = out<T>(k, 0), *dgamma = out<T>(k, 1), *dbeta = out<T>(k, 2);
  const int64_t C = v.channels;
  const double count = static_cast<double>(v.count());
  const Scratch buf = scratch(2 * v.blocks * C + 3 * C);
  Context* ctx = &context(k);
  return [=] {
    double* partial = buf->data();
    double *sums = partial + 2 * v.blocks * C, *r = sums + 2 * C;
    for (int64_t c = 0; c < C; ++c) r[c] = 1.0 / std::sqrt(double(var[c]) + eps);
    channel_sums<2>(*ctx, v, partial, sums, [&](int64_t i, int64_t c) {
      const double d = double(dy[i]);
      return std::array<double, 2>{d, d * (double(x[i]) - double(mean[c])) * r[c]};
    });
    const double *sum_dy = sums, *sum_dy_xhat = sums + C;
    for (int64_t c = 0; c < C; ++c) {
      dbeta[c] = T(sum_dy[c]);
      dgamma[c] = T(sum_dy_xhat[c]);
    }
    if (!batch_stats) {
      for_each_element(*ctx, v, [&](int64_t i, int64_t c) { dx[i] = T(double(gamma[c]) * r[c] * double(dy[i])); });
      return;
    }
    for_each_element(*ctx, v, [&](int64_t i, int64_t c) {
      const double xhat = (double(x[i]) - double(mean[c])) * r[c];
      dx[i] = T(double(gamma[c]) * r[c] * (double(dy[i]) - sum_dy[c] / count - xhat * sum_dy_xhat[c] / count));
    });
  };
}

template <class T> KernelFn make_train_grad(const KernelInit& k) { return make_batch_norm_grad<T>(k, true); }
template <class T> KernelFn make_infer_grad(const KernelInit& k) { return make_batch_norm_grad<T>(k, false); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("batch_norm_train", make_batch_norm_train);
REGISTER_CPU_FLOAT_KERNEL("batch_norm_infer", make_batch_norm_infer);
REGISTER_CPU_FLOAT_KERNEL("batch_norm_train_grad", make_train_grad);
REGISTER_CPU_FLOAT_KERNEL("batch_norm_infer_grad", make_infer_grad);

}  // namespace tandem::backend::cpu
