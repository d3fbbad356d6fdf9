// batch_norm_train, batch_norm_infer and their gradients on CUDA devices, with x viewed as
// (outer, channels, inner) around the channel axis and the CPU kernels' arithmetic: statistics and
// sums in double, the biased variance, ε inside the square root.
//
// Per-channel sums are a fixed tree: block (g, p) sums slice p of each channel of channel group g
// into a partial (a shared-memory tree over its threads), then one thread per channel adds the
// partials in order. The launch shape depends only
// on x's shape, and there are no atomics, so every run gives bitwise the same result (and the CPU's
// up to the order of the double sums).
#include <algorithm>

#include "backend/cuda/device_scratch.h"
#include "backend/cuda/kernel_util.cuh"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
template <int K>
struct Sums {
  double v[K];
};

// Where the elements of each channel are, and how their sums are cut into blocks. Element t of a
// channel (t < outer·inner) is at (t / inner, c, t % inner). With channels innermost a block takes
// 32 neighbouring channels (each warp reads one row); otherwise one channel, reading along `inner`.
struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
  int lanes = 1;          // channels per block
  int64_t parts = 1;      // blocks along each channel
  int64_t per_part = 0;   // elements of a channel per block
  ChannelView(const Shape& s, int64_t axis_attr) {
    const int axis = ops::normalize_axis(axis_attr, s.rank(), "batch_norm");
    for (int i = 0; i < s.rank(); ++i) (i < axis ? outer : i == axis ? channels : inner) *= s[i];
    lanes = inner == 1 ? 32 : 1;
    constexpr int64_t kMaxParts = 1024, kPerThread = 64;
    const int64_t target = kBlock / lanes * kPerThread;
    parts = std::min(kMaxParts, std::max<int64_t>(1, (count() + target - 1) / target));
    per_part = (count() + parts - 1) / parts;
  }
  __host__ __device__ int64_t count() const { return outer * inner; }  // elements per channel
  __device__ int64_t index(int64_t t, int64_t c) const { return (t / inner * channels + c) * inner + t % inner; }
  __device__ int64_t channel_of(int64_t i) const { return i / inner % channels; }
  dim3 grid() const { return dim3(static_cast<unsigned>((channels + lanes - 1) / lanes), static_cast<unsigned>(parts)); }
};

// partial[(p·K + k)·C + c] = Σ over slice p of channel c of f(index, c).v[k].
template <int K, class F>
__global__ void channel_partials_kernel(ChannelView v, F f, double* partial) {
  __shared__ double buf[K][kBlock];
  const int lane = static_cast<int>(threadIdx.x) % v.lanes, stripe = static_cast<int>(threadIdx.x) / v.lanes;
  const int stripes = kBlock / v.lanes;
  const int64_t c = int64_t(blockIdx.x) * v.lanes + lane;
  const int64_t begin = int64_t(blockIdx.y) * v.per_part;
  const int64_t end = begin + v.per_part < v.count() ? begin + v.per_part : v.count();
  double acc[K] = {};
  if (c < v.channels)
    for (int64_t t = begin + stripe; t < end; t += stripes) {
      const Sums<K> s = f(v.index(t, c), c);
      for (int j = 0; j < K; ++j) acc[j] += s.v[j];
    }
  for (int j = 0; j < K; ++j) buf[j][threadIdx.x] = acc[j];
  __syncthreads();
  for (int half = stripes / 2; half > 0; half /= 2) {  // stripes is a power of two
    if (stripe < half)
      for (int j = 0; j < K; ++j) buf[j][threadIdx.x] += buf[j][threadIdx.x + half * v.lanes];
    __syncthreads();
  }
  if (stripe == 0 && c < v.channels)
    for (int j = 0; j < K; ++j) partial[(int64_t(blockIdx.y) * K + j) * v.channels + c] = buf[j][lane];
}

// finish(c, totals) with the partials of channel c added in order.
template <int K, class F>
__global__ void channel_totals_kernel(ChannelView v, const double* partial, F finish) {
  TANDEM_CUDA_LOOP(c, v.channels) {
    Sums<K> total = {};
    for (int64_t p = 0; p < v.parts; ++p)
      for (int j = 0; j < K; ++j) total.v[j] += partial[(p * K + j) * v.channels + c];
    finish(c, total);
  }
}

template <class F>
__global__ void each_element_kernel(ChannelView v, int64_t n, F f) {
  TANDEM_CUDA_LOOP(i, n) f(i, v.channel_of(i));
}

// The launches of one kernel instance: its view, grids and stream, fixed by the factory.
struct Launcher {
  ChannelView v;
  double* partial;  // v.parts·K·C doubles of the kernel's scratch
  unsigned totals_grid, elements_grid;
  cudaStream_t s;
  std::string label;
  Launcher(const KernelInit& k, const ChannelView& view, double* scratch)
      : v(view), partial(scratch), totals_grid(blocks_for(view.channels, context(k))),
        elements_grid(blocks_for(view.count() * view.channels, context(k))), s(stream(k)), label(kernel_label(k)) {}

  // Sums f over each channel, then finish(c, sums) per channel.
  template <int K, class F, class Finish>
  void channel_sums(F f, Finish finish) const {
    channel_partials_kernel<K><<<v.grid(), kBlock, 0, s>>>(v, f, partial);
    check_launch(label);
    channel_totals_kernel<K><<<totals_grid, kBlock, 0, s>>>(v, partial, finish);
    check_launch(label);
  }
  template <class F>
  void each_element(F f) const {
    const int64_t n = v.count() * v.channels;
    if (n == 0) return;
    each_element_kernel<<<elements_grid, kBlock, 0, s>>>(v, n, f);
    check_launch(label);
  }
};

// 1/sqrt(var + ε) in double, as the CPU computes it.
template <class T>
__device__ double inv_std(const T* var, int64_t c, double eps) { return 1.0 / sqrt(double(var[c]) + eps); }

// The steps of batch_norm_train. m and a are the kernel's scratch: the mean in double and
// gamma/sqrt(var + ε) per channel.
template <class T>
struct Train {
  const T *x, *gamma, *beta;
  T *y, *mean, *var;
  double *m, *a;
  double count, eps;
  struct SumX {
    const Train p;
    __device__ Sums<1> operator()(int64_t i, int64_t) const { return {{double(p.x[i])}}; }
  };
  struct SetMean {
    const Train p;
    __device__ void operator()(int64_t c, Sums<1> t) const { p.m[c] = t.v[0] / p.count; }
  };
  struct SquaredDeviation {
    const Train p;
    __device__ Sums<1> operator()(int64_t i, int64_t c) const {
      const double d = double(p.x[i]) - p.m[c];
      return {{d * d}};
    }
  };
  struct SetVariance {
    const Train p;
    __device__ void operator()(int64_t c, Sums<1> t) const {
      const double s = t.v[0] / p.count;
      p.mean[c] = T(p.m[c]);
      p.var[c] = T(s);
      p.a[c] = double(p.gamma[c]) / sqrt(s + p.eps);
    }
  };
  struct Normalize {
    const Train p;
    __device__ void operator()(int64_t i, int64_t c) const {
      p.y[i] = T((double(p.x[i]) - p.m[c]) * p.a[c] + double(p.beta[c]));
    }
  };
};

// (x, gamma, beta) -> (y, mean, biased variance), the variance from a second pass over the squared
// deviations (accurate when the mean is large), as on the CPU.
template <class T>
KernelFn make_batch_norm_train(const KernelInit& k) {
  const ChannelView v(k.in_types[0].shape, k.node.attrs.i("axis"));
  if (v.channels == 0) return {};
  const int64_t C = v.channels;
  const std::shared_ptr<double> scratch = device_scratch<double>(context(k), v.parts * C + 2 * C, kernel_label(k));
  double* stats = scratch.get() + v.parts * C;
  const Train<T> p{in<T>(k, 0), in<T>(k, 1), in<T>(k, 2), out<T>(k, 0), out<T>(k, 1), out<T>(k, 2), stats, stats + C,
                   static_cast<double>(v.count()), k.node.attrs.f("epsilon")};
  const Launcher run(k, v, scratch.get());
  using S = Train<T>;
  return [run, p, scratch] {
    run.channel_sums<1>(typename S::SumX{p}, typename S::SetMean{p});
    run.channel_sums<1>(typename S::SquaredDeviation{p}, typename S::SetVariance{p});
    run.each_element(typename S::Normalize{p});
  };
}

// y of batch_norm_infer: (x, gamma, beta, mean, variance) with the given statistics.
template <class T>
struct NormalizeGiven {
  const T *x, *gamma, *beta, *mean, *var;
  T* y;
  double eps;
  __device__ void operator()(int64_t i, int64_t c) const {
    const double a = double(gamma[c]) / sqrt(double(var[c]) + eps);
    y[i] = T((double(x[i]) - double(mean[c])) * a + double(beta[c]));
  }
};

template <class T>
KernelFn make_batch_norm_infer(const KernelInit& k) {
  const ChannelView v(k.in_types[0].shape, k.node.attrs.i("axis"));
  const NormalizeGiven<T> f{in<T>(k, 0), in<T>(k, 1), in<T>(k, 2), in<T>(k, 3), in<T>(k, 4), out<T>(k), k.node.attrs.f("epsilon")};
  const Launcher run(k, v, nullptr);
  return [run, f] { run.each_element(f); };
}

// The steps of the gradients. sums is the kernel's scratch: Σ dy, then Σ dy·x̂, per channel.
template <class T>
struct Grad {
  const T *dy, *x, *gamma, *mean, *var;
  T *dx, *dgamma, *dbeta;
  double* sums;
  int64_t channels;
  double count, eps;
  struct GradSums {
    const Grad p;
    __device__ Sums<2> operator()(int64_t i, int64_t c) const {
      const double d = double(p.dy[i]);
      return {{d, d * (double(p.x[i]) - double(p.mean[c])) * inv_std(p.var, c, p.eps)}};
    }
  };
  struct SetParameterGrads {
    const Grad p;
    __device__ void operator()(int64_t c, Sums<2> t) const {
      p.sums[c] = t.v[0], p.sums[p.channels + c] = t.v[1];
      p.dbeta[c] = T(t.v[0]);
      p.dgamma[c] = T(t.v[1]);
    }
  };
  // dx through the given statistics only.
  struct InputGradGiven {
    const Grad p;
    __device__ void operator()(int64_t i, int64_t c) const {
      p.dx[i] = T(double(p.gamma[c]) * inv_std(p.var, c, p.eps) * double(p.dy[i]));
    }
  };
  // dx through the batch statistics too.
  struct InputGradBatch {
    const Grad p;
    __device__ void operator()(int64_t i, int64_t c) const {
      const double r = inv_std(p.var, c, p.eps), xhat = (double(p.x[i]) - double(p.mean[c])) * r;
      const double sum_dy = p.sums[c], sum_dy_xhat = p.sums[p.channels + c];
      p.dx[i] = T(double(p.gamma[c]) * r * (double(p.dy[i]) - sum_dy / p.count - xhat * sum_dy_xhat / p.count));
    }
  };
};

// (dy, x, gamma, mean, variance) -> (dx, dgamma, dbeta). With x̂ = (x − mean)·r, r = 1/sqrt(var + ε):
// dbeta = Σ dy, dgamma = Σ dy·x̂; with given statistics dx = γ·r·dy, and with batch statistics
// (which depend on x) dx = γ·r·(dy − dbeta/M − x̂·dgamma/M).
template <class T>
KernelFn make_batch_norm_grad(const KernelInit& k, bool batch_stats) {
  const ChannelView v(k.in_types[1].shape, k.node.attrs.i("axis"));
  if (v.channels == 0) return {};
  const int64_t C = v.channels;
  const std::shared_ptr<double> scratch = device_scratch<double>(context(k), v.parts * 2 * C + 2 * C, kernel_label(k));
  const Grad<T> p{in<T>(k, 0),  in<T>(k, 1),  in<T>(k, 2),  in<T>(k, 3), in<T>(k, 4), out<T>(k, 0), out<T>(k, 1),
                  out<T>(k, 2), scratch.get() + v.parts * 2 * C, C, static_cast<double>(v.count()), k.node.attrs.f("epsilon")};
  const Launcher run(k, v, scratch.get());
  using G = Grad<T>;
  return [run, p, batch_stats, scratch] {
    run.channel_sums<2>(typename G::GradSums{p}, typename G::SetParameterGrads{p});
    if (batch_stats) run.each_element(typename G::InputGradBatch{p});
    else run.each_element(typename G::InputGradGiven{p});
  };
}

template <class T> KernelFn make_train_grad(const KernelInit& k) { return make_batch_norm_grad<T>(k, true); }
template <class T> KernelFn make_infer_grad(const KernelInit& k) { return make_batch_norm_grad<T>(k, false); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("batch_norm_train", make_batch_norm_train);
REGISTER_CUDA_FLOAT_KERNEL("batch_norm_infer", make_batch_norm_infer);
REGISTER_CUDA_FLOAT_KERNEL("batch_norm_train_grad", make_train_grad);
REGISTER_CUDA_FLOAT_KERNEL("batch_norm_infer_grad", make_infer_grad);

}  // namespace tandem::backend::cuda
