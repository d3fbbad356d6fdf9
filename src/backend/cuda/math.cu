// Elementwise math, comparisons, maximum/minimum, select and one_hot on CUDA devices. The
// per-element math is the CPU kernels' (backend/elementwise_math.h).
#include "backend/cuda/elementwise.cuh"
#include "backend/elementwise_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T> KernelFn make_exp(const KernelInit& k) { return map1<T>(k, Exp{}); }
template <class T> KernelFn make_log(const KernelInit& k) { return map1<T>(k, Log{}); }
template <class T> KernelFn make_sqrt(const KernelInit& k) { return map1<T>(k, Sqrt{}); }
template <class T> KernelFn make_square(const KernelInit& k) { return map1<T>(k, Square{}); }
template <class T> KernelFn make_abs(const KernelInit& k) { return map1<T>(k, Abs{}); }
template <class T> KernelFn make_sign(const KernelInit& k) { return map1<T>(k, Sign{}); }

template <class T> KernelFn make_greater(const KernelInit& k) { return broadcast2<T>(k, Greater{}); }
template <class T> KernelFn make_greater_equal(const KernelInit& k) { return broadcast2<T>(k, GreaterEqual{}); }
template <class T> KernelFn make_less(const KernelInit& k) { return broadcast2<T>(k, Less{}); }
template <class T> KernelFn make_less_equal(const KernelInit& k) { return broadcast2<T>(k, LessEqual{}); }
template <class T> KernelFn make_equal_to(const KernelInit& k) { return broadcast2<T>(k, EqualTo{}); }
template <class T> KernelFn make_not_equal(const KernelInit& k) { return broadcast2<T>(k, NotEqual{}); }
template <class T> KernelFn make_maximum(const KernelInit& k) { return broadcast2<T>(k, Maximum{}); }
template <class T> KernelFn make_minimum(const KernelInit& k) { return broadcast2<T>(k, Minimum{}); }

template <class T>
__global__ void select_kernel(T* z, const T* x, const T* y, const T* cond, int64_t n) {
  TANDEM_CUDA_LOOP(i, n) z[i] = cond[i] != T(0) ? x[i] : y[i];
}

template <class T>
KernelFn make_select(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  const T* cond = in<T>(k, 2);
  T* z = out<T>(k);
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { select_kernel<<<grid, kBlock, 0, s>>>(z, x, y, cond, n); });
}

// Every element of the (rows, depth) result is written once, so no zero fill goes first; an id
// outside [0, depth) matches no column and leaves a row of zeros, as on the CPU.
template <class Id, class T>
__global__ void one_hot_kernel(T* y, const Id* ids, int64_t depth, int64_t n) {
  TANDEM_CUDA_LOOP(i, n) y[i] = int64_t(ids[i / depth]) == i % depth ? T(1) : T(0);
}

template <class Id, class T>
KernelFn one_hot_rows(const KernelInit& k) {
  const Id* ids = in<Id>(k, 0);
  T* y = out<T>(k);
  const int64_t depth = k.node.attrs.i("depth"), n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { one_hot_kernel<<<grid, kBlock, 0, s>>>(y, ids, depth, n); });
}
template <class Id>
KernelFn make_one_hot(const KernelInit& k) {
  return k.out_type().dtype == DType::F64 ? one_hot_rows<Id, double>(k) : one_hot_rows<Id, float>(k);
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("exp", make_exp);
REGISTER_CUDA_FLOAT_KERNEL("log", make_log);
REGISTER_CUDA_FLOAT_KERNEL("sqrt", make_sqrt);
REGISTER_CUDA_FLOAT_KERNEL("square", make_square);
REGISTER_CUDA_FLOAT_KERNEL("abs", make_abs);
REGISTER_CUDA_FLOAT_KERNEL("sign", make_sign);
REGISTER_CUDA_FLOAT_KERNEL("greater", make_greater);
REGISTER_CUDA_FLOAT_KERNEL("greater_equal", make_greater_equal);
REGISTER_CUDA_FLOAT_KERNEL("less", make_less);
REGISTER_CUDA_FLOAT_KERNEL("less_equal", make_less_equal);
REGISTER_CUDA_FLOAT_KERNEL("equal_to", make_equal_to);
REGISTER_CUDA_FLOAT_KERNEL("not_equal", make_not_equal);
REGISTER_CUDA_FLOAT_KERNEL("maximum", make_maximum);
REGISTER_CUDA_FLOAT_KERNEL("minimum", make_minimum);
REGISTER_CUDA_FLOAT_KERNEL("select", make_select);
REGISTER_KERNEL("one_hot", DeviceKind::Cuda, DType::I32, make_one_hot<int32_t>);
REGISTER_KERNEL("one_hot", DeviceKind::Cuda, DType::I64, make_one_hot<int64_t>);

}  // namespace tandem::backend::cuda
