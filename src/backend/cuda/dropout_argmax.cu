// dropout (counter-based mask), argmax, equal and binary_accuracy on CUDA devices. The dropout mask
// is rng::uniform of the CPU kernel's own arguments, so a seed, step and row drop the same
// elements on either backend.
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/reduction.cuh"
#include "core/random.h"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
// The step counter changes every step, so it is read here, on the device.
template <class T>
__global__ void dropout_kernel(T* y, const T* x, const int64_t* step, int64_t n, int64_t cols, int64_t period, int64_t row_offset,
                               uint64_t seed, double rate, compute_t<T> keep_scale) {
  using C = compute_t<T>;  // the 16-bit types scale in float32 and round once
  const auto s = static_cast<uint64_t>(*step);
  TANDEM_CUDA_LOOP(i, n) {
    const int64_t r = i / cols, c = i % cols, key = period > 0 ? c % period : c;
    const bool keep = rng::uniform(seed, s, static_cast<uint64_t>(row_offset + r), static_cast<uint64_t>(key)) >= rate;
    // Multiplying by 0 instead of writing 0 keeps a dropped NaN or inf visible (NaN), as on the CPU.
    y[i] = static_cast<T>(static_cast<C>(x[i]) * (keep ? keep_scale : C(0)));
  }
}

template <class T>
KernelFn make_dropout(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const int64_t* step = in<int64_t>(k, 1);
  T* y = out<T>(k);
  const double rate = k.node.attrs.f("rate");
  const auto seed = static_cast<uint64_t>(k.node.attrs.i("seed"));
  // Micro-batch j of a step holds the global rows from j × micro_rows on.
  const int64_t row_offset = k.node.attrs.i("row_offset", 0) + k.micro_batch * k.node.attrs.i("micro_rows", 0);
  const int64_t rows = k.in_types[0].shape[0], cols = numel(k.in_types[0]) / (rows > 1 ? rows : 1);
  const int64_t n = rows * cols;
  const compute_t<T> keep_scale = compute_t<T>(1) / compute_t<T>(1 - rate);
  const int64_t period = k.node.attrs.i("mask_period", 0);  // > 0: columns this far apart share a mask
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) {
    dropout_kernel<<<grid, kBlock, 0, s>>>(y, x, step, n, cols, period, row_offset, seed, rate, keep_scale);
  });
}

// A candidate for argmax. The CPU scan keeps the first NaN if there is one, else the first
// maximum; `better` ranks candidates that way (NaNs first, then larger values, then lower
// indices), a total order, so any tree of it picks the scan's answer.
template <class T>
struct ArgBest {
  T value;
  int64_t index;
};
template <class T>
__device__ ArgBest<T> shuffle_xor(ArgBest<T> v, int lane_mask) {
  return {__shfl_xor_sync(0xffffffffu, v.value, lane_mask), __shfl_xor_sync(0xffffffffu, v.index, lane_mask)};
}
struct Better {
  template <class T>
  __device__ ArgBest<T> operator()(ArgBest<T> a, ArgBest<T> b) const {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

// Lanes start from a sentinel that every element beats; its index n is an empty line's answer, 0,
// as the CPU's.
template <class Group, class T>
__global__ void argmax_kernel(int64_t* y, const T* x, AxisLines ax) {
  for (int64_t l = Group::first_line(); l < ax.count(); l += Group::line_stride()) {
    const T* line = x + ax.base(l);
    const ArgBest<T> none{minus_infinity<T>(), ax.n};
    const ArgBest<T> best = line_reduce<Group>(ax.n, none, Better{}, [&](int64_t j) { return ArgBest<T>{line[j * ax.inner], j}; });
    if (Group::lane() == 0) y[l] = best.index;
  }
}

template <class T>
KernelFn make_argmax(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  const LineLaunch shape(AxisLines(s, ops::normalize_axis(k.node.attrs.i("axis"), s.rank(), "argmax")), context(k));
  const T* x = in<T>(k, 0);
  int64_t* y = out<int64_t>(k);
  const AxisLines lines = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t st) {
    argmax_kernel<decltype(group)><<<grid, kBlock, 0, st>>>(y, x, lines);
  });
}

struct Equal {
  template <class T> __device__ float operator()(T a, T b) const { return a == b ? 1.0f : 0.0f; }
};
template <class T> KernelFn make_equal(const KernelInit& k) { return map2<T, float>(k, Equal{}); }

// y[r] = the fraction of the row's c elements where (p > threshold) == (t > 0.5).
template <class Group, class T>
__global__ void binary_accuracy_kernel(float* y, const T* p, const T* t, AxisLines rows, T threshold) {
  const int64_t c = rows.n;
  for (int64_t r = Group::first_line(); r < rows.count(); r += Group::line_stride()) {
    const int64_t hits = line_reduce<Group>(c, int64_t(0), Plus{}, [&](int64_t j) {
      return int64_t((p[r * c + j] > threshold) == (t[r * c + j] > T(0.5)));
    });
    if (Group::lane() == 0) y[r] = static_cast<float>(hits) / static_cast<float>(c);
  }
}

template <class T>
KernelFn make_binary_accuracy(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  float* y = out<float>(k);
  const T threshold = static_cast<T>(k.node.attrs.f("threshold"));
  const LineLaunch shape(AxisLines::rows(k.in_types[0].shape), context(k));
  const AxisLines rows = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    binary_accuracy_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, p, t, rows, threshold);
  });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("binary_accuracy", make_binary_accuracy);
REGISTER_CUDA_FLOAT_KERNEL("dropout", make_dropout);
REGISTER_CUDA_16BIT_KERNEL("dropout", make_dropout);
REGISTER_CUDA_FLOAT_KERNEL("argmax", make_argmax);
REGISTER_CUDA_FLOAT_KERNEL("equal", make_equal);
REGISTER_KERNEL("equal", DeviceKind::Cuda, DType::I64, make_equal<int64_t>);
REGISTER_KERNEL("equal", DeviceKind::Cuda, DType::I32, make_equal<int32_t>);

}  // namespace tandem::backend::cuda
