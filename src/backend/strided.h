// Index plans for broadcasting and reductions, shared by the backends (the CUDA kernels copy a
// plan's merged dims and strides into their launch arguments). Adjacent axes that behave alike are
// merged first, so common cases ((N,D)+(D), column sums) become one or two flat loops.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tandem/tensor.h"

namespace tandem::backend {

constexpr int kMaxRank = 8;  // after merging axes

// out[i] = f(a[ia], b[ib]) over the broadcast of a and b into `out`.
struct BroadcastPlan {
  std::vector<int64_t> dims, a_strides, b_strides;  // merged axes; strides 0 where broadcast
  BroadcastPlan(const Shape& out, const Shape& a, const Shape& b);
  template <class F>
  void run(F&& f) const;  // f(out_index, a_index, b_index), innermost axis in a tight loop
};

// For a reduction over some axes: the merged input dims and, per merged axis, the output stride
// (0 for reduced axes).
struct ReducePlan {
  std::vector<int64_t> dims, out_strides;
  int64_t in_count = 1, out_count = 1;
  ReducePlan(const Shape& in, const std::vector<int64_t>& axes);
  template <class F>
  void run(F&& f) const;  // f(in_index, out_index) over all input elements, in order
};

// A transpose as the output's axes in order, each with the input stride it walks: axes of size 1
// dropped and runs that are contiguous in the input merged (at least one axis remains), so
// (B,T,N,H) -> (B,N,T,H) walks contiguous H-runs.
struct TransposePlan {
  std::vector<int64_t> dims, strides;
  TransposePlan(const Shape& in, const std::vector<int64_t>& perm);
};

template <class F>
void BroadcastPlan::run(F&& f) const {
  const int r = static_cast<int>(dims.size());
  if (r == 0) return f(0, 0, 0);
  const int64_t inner = dims.back(), sa = a_strides.back(), sb = b_strides.back();
  int64_t outer = 1;
  for (int i = 0; i < r - 1; ++i) outer *= dims[static_cast<std::size_t>(i)];
  std::array<int64_t, kMaxRank> idx{};  // no allocation per step
  for (int64_t o = 0; o < outer; ++o) {
    int64_t ia = 0, ib = 0;
    for (int i = 0; i < r - 1; ++i) {
      ia += idx[static_cast<std::size_t>(i)] * a_strides[static_cast<std::size_t>(i)];
      ib += idx[static_cast<std::size_t>(i)] * b_strides[static_cast<std::size_t>(i)];
    }
    const int64_t base = o * inner;
    for (int64_t j = 0; j < inner; ++j) f(base + j, ia + j * sa, ib + j * sb);
    for (int i = r - 2; i >= 0; --i) {
      if (++idx[static_cast<std::size_t>(i)] < dims[static_cast<std::size_t>(i)]) break;
      idx[static_cast<std::size_t>(i)] = 0;
    }
  }
}

template <class F>
void ReducePlan::run(F&& f) const {
  const int r = static_cast<int>(dims.size());
  if (r == 0) return f(0, 0);
  const int64_t inner = dims.back(), so = out_strides.back();
  std::array<int64_t, kMaxRank> idx{};  // no allocation per step
  for (int64_t base = 0; base < in_count; base += inner) {
    int64_t io = 0;
    for (int i = 0; i < r - 1; ++i) io += idx[static_cast<std::size_t>(i)] * out_strides[static_cast<std::size_t>(i)];
    for (int64_t j = 0; j < inner; ++j) f(base + j, io + j * so);
    for (int i = r - 2; i >= 0; --i) {
      if (++idx[static_cast<std::size_t>(i)] < dims[static_cast<std::size_t>(i)]) break;
      idx[static_cast<std::size_t>(i)] = 0;
    }
  }
}

}  // namespace tandem::backend
