// Deterministic cooperative reductions for the CUDA kernels (.cu files only): a fixed tree of warp
// shuffles plus one shared-memory step, and "lines" (a row, or the elements along one axis) each
// reduced by one thread, one warp or one block. The group size is chosen from the shapes when the
// plan is built, so a plan always sums in the same order and gives the same bits on every run.
#pragma once

#include <cuda/std/limits>

#include "backend/cuda/kernel_util.cuh"

namespace tandem::backend::cuda {

struct Plus {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
// max where a NaN wins, as NumPy's and PyTorch's max.
struct MaxNanWins {
  template <class T> __device__ T operator()(T a, T b) const { return (b != b || b > a) ? b : a; }
};
template <class T>
__device__ T minus_infinity() { return -::cuda::std::numeric_limits<T>::infinity(); }

// Overloaded (found by argument-dependent lookup) for a kernel's own pair types.
template <class T>
__device__ T shuffle_xor(T v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }

// Every lane gets op over the warp's 32 values: a butterfly that pairs the same lanes every run.
template <class T, class Op>
__device__ T warp_reduce(T v, Op op) {
  for (int m = 16; m > 0; m >>= 1) v = op(v, shuffle_xor(v, m));
  return v;
}

// Every thread of a kBlock-thread block gets op over the block's values. All threads must call it.
template <class T, class Op>
__device__ T block_reduce(T v, Op op) {
  __shared__ T partial[kBlock / 32];
  v = warp_reduce(v, op);
  __syncthreads();  // the readers of a previous call are done with `partial`
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kBlock / 32; ++w) v = op(v, partial[w]);
  return v;
}

// G threads cooperate on each line: lanes take the line's elements G apart, then reduce. Blocks
// have kBlock threads and walk lines with a grid stride, so a block's threads (for G = kBlock) or
// a warp's (for G = 32) always stay on the same line together.
template <int G>
struct LineGroup {
  static_assert(G == 1 || G == 32 || G == kBlock);
  static constexpr int kThreads = G;
  static constexpr int kLinesPerBlock = kBlock / G;
  __device__ static int lane() { return static_cast<int>(threadIdx.x) % G; }
  __device__ static int64_t first_line() { return int64_t(blockIdx.x) * kLinesPerBlock + threadIdx.x / G; }
  __device__ static int64_t line_stride() { return int64_t(gridDim.x) * kLinesPerBlock; }
  template <class T, class Op>
  __device__ static T reduce(T v, Op op) {
    if constexpr (G == 1) return v;
    else if constexpr (G == 32) return warp_reduce(v, op);
    else return block_reduce(v, op);
  }
};

// op over f(j) for j in [0, n) on the calling group's line; every thread of the group gets it.
template <class Group, class T, class Op, class F>
__device__ T line_reduce(int64_t n, T init, Op op, F&& f) {
  T acc = init;
  for (int64_t j = Group::lane(); j < n; j += Group::kThreads) acc = op(acc, f(j));
  return Group::reduce(acc, op);
}

// A tensor viewed as (outer, n, inner) around one axis: line l holds the n elements along the axis
// at base(l) + j·inner, and a reduction's output for it is element l.
struct AxisLines {
  int64_t outer = 1, n = 1, inner = 1;
  AxisLines(int64_t outer_, int64_t n_, int64_t inner_) : outer(outer_), n(n_), inner(inner_) {}
  AxisLines(const Shape& s, int axis) {
    for (int i = 0; i < s.rank(); ++i) (i < axis ? outer : i == axis ? n : inner) *= s[i];
  }
  // Rows of the last axis.
  static AxisLines rows(const Shape& s) {
    const int64_t n = s.rank() ? s.back() : 1;
    return AxisLines(s.num_elements() / (n > 0 ? n : 1), n, 1);
  }
  __host__ __device__ int64_t count() const { return outer * inner; }
  __host__ __device__ int64_t base(int64_t l) const { return (l / inner) * n * inner + l % inner; }
};

// Threads per line: one when lines are interleaved (adjacent threads then read adjacent
// elements), a warp for short lines, the block for long ones.
inline int line_threads(int64_t n, int64_t inner) { return inner >= 32 ? 1 : n > 1024 ? kBlock : 32; }

inline unsigned line_blocks(int64_t lines, int threads, const Context& c) {
  const int64_t per_block = kBlock / threads, needed = (lines + per_block - 1) / per_block;
  const int64_t cap = int64_t(c.sm_count > 0 ? c.sm_count : 1) * 8;
  return static_cast<unsigned>(needed < 1 ? 1 : (needed < cap ? needed : cap));
}

// Calls launch(LineGroup<threads>{}), so one generic lambda launches the kernel for any group.
template <class F>
void with_line_group(int threads, F&& launch) {
  if (threads == 1) launch(LineGroup<1>{});
  else if (threads == 32) launch(LineGroup<32>{});
  else launch(LineGroup<kBlock>{});
}

// A line kernel's launch shape: the geometry, its group size and grid.
struct LineLaunch {
  AxisLines lines;
  int threads;
  unsigned grid;
  LineLaunch(const AxisLines& l, int threads_, const Context& c) : lines(l), threads(threads_), grid(line_blocks(l.count(), threads, c)) {}
  LineLaunch(const AxisLines& l, const Context& c) : LineLaunch(l, line_threads(l.n, l.inner), c) {}
};

// The closure of a line kernel: launch(group, grid, stream) starts it with the group size chosen
// here (a generic lambda with the <<<grid, kBlock, 0, stream>>> launch), then the launch is checked.
template <class Launch>
KernelFn line_kernel(const KernelInit& k, const LineLaunch& shape, Launch launch) {
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    if (shape.lines.count() == 0) return;
    with_line_group(shape.threads, [&](auto group) { launch(group, shape.grid, s); });
    check_launch(label);
  };
}

}  // namespace tandem::backend::cuda
