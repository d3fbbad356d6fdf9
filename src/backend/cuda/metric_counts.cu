// confusion_counts and in_top_k (ops/metric_counts.cpp) on CUDA devices. Counts (or the weights of
// the counted elements) are summed in double by block trees, in a fixed order and without atomics:
// exact for counts and 0/1 weights.
#include "backend/cuda/reduction.cuh"
#include "backend/loss_math.h"

namespace tandem::backend::cuda {

namespace {
// Block c < thresholds counts the positives and the negatives predicted above threshold c; block
// `thresholds` counts all positives and negatives. Layout: (T positives, T negatives, P, N).
template <class T>
__global__ void confusion_counts_kernel(T* y, const T* p, const T* t, const T* w, int64_t n, int64_t thresholds, double single) {
  for (int64_t c = blockIdx.x; c <= thresholds; c += gridDim.x) {
    const bool totals = c == thresholds;
    const T cut = totals ? T(0) : loss::confusion_threshold<T>(c, thresholds, single);
    double positives = 0, negatives = 0;
    for (int64_t e = threadIdx.x; e < n; e += kBlock) {
      if (!totals && !(p[e] > cut)) continue;
      const double weight = w ? double(w[e]) : 1.0;
      if (t[e] != T(0)) positives += weight;
      else negatives += weight;
    }
    positives = block_reduce(positives, Plus{});
    negatives = block_reduce(negatives, Plus{});
    if (threadIdx.x != 0) continue;
    y[totals ? 2 * thresholds : c] = T(positives);
    y[totals ? 2 * thresholds + 1 : thresholds + c] = T(negatives);
  }
}

template <class T>
KernelFn make_confusion_counts(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  const T* w = k.in.size() == 3 ? in<T>(k, 2) : nullptr;
  T* y = out<T>(k);
  const int64_t n = numel(k.in_types[0]), thresholds = k.node.attrs.i("num_thresholds");
  const double single = thresholds == 1 ? k.node.attrs.f("threshold") : 0.0;
  const int64_t cap = int64_t(context(k).sm_count > 0 ? context(k).sm_count : 1) * 8;
  const unsigned grid = static_cast<unsigned>(thresholds + 1 < cap ? thresholds + 1 : cap);
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    confusion_counts_kernel<<<grid, kBlock, 0, s>>>(y, p, t, w, n, thresholds, single);
    check_launch(label);
  };
}

// y[r] = 1 where fewer than `top` classes score above the row's class; a miss where there is no
// class to find (an id out of range, or a NaN score), as in Keras.
template <class Group, class T, class Id>
__global__ void in_top_k_kernel(T* y, const T* p, const Id* ids, int64_t rows, int64_t classes, int64_t top) {
  for (int64_t r = Group::first_line(); r < rows; r += Group::line_stride()) {
    const T* row = p + r * classes;
    const int64_t id = static_cast<int64_t>(ids[r]);
    const bool findable = id >= 0 && id < classes && row[id] == row[id];
    const int64_t above = !findable ? 0 : line_reduce<Group>(classes, int64_t(0), Plus{}, [&](int64_t c) { return int64_t(row[c] > row[id]); });
    if (Group::lane() == 0) y[r] = findable && above < top ? T(1) : T(0);
  }
}

template <class T, class Id>
KernelFn top_k_rows(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const Id* ids = in<Id>(k, 1);
  T* y = out<T>(k);
  const int64_t rows = k.in_types[0].shape[0], classes = k.in_types[0].shape[1], top = k.node.attrs.i("k");
  return line_kernel(k, LineLaunch(AxisLines(rows, classes, 1), context(k)), [=](auto group, unsigned grid, cudaStream_t s) {
    in_top_k_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, p, ids, rows, classes, top);
  });
}
template <class T>
KernelFn make_in_top_k(const KernelInit& k) {
  return k.in_types[1].dtype == DType::I64 ? top_k_rows<T, int64_t>(k) : top_k_rows<T, int32_t>(k);
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("confusion_counts", make_confusion_counts);
REGISTER_CUDA_FLOAT_KERNEL("in_top_k", make_in_top_k);

}  // namespace tandem::backend::cuda
