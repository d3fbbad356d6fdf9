// The 16-bit float types of the CUDA kernels: a kernel for DType::BF16 or DType::F16 is the float
// kernel's template on __nv_bfloat16 or __half (the same bits as tandem::bfloat16 and
// tandem::float16). As on the CPU (backend/cpu/low_precision.h), per-element math runs in float32
// and rounds once, at the store.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/kernel_registry.h"

namespace tandem::backend::cuda {

template <class T> struct ComputeType { using type = T; };
template <> struct ComputeType<__nv_bfloat16> { using type = float; };
template <> struct ComputeType<__half> { using type = float; };
// The type a kernel on T computes and accumulates in: float for the 16-bit types, T otherwise.
template <class T> using compute_t = typename ComputeType<T>::type;

// f applied in the arguments' compute type, its result rounded once to R.
template <class R, class F, class... Args>
__device__ __forceinline__ R apply_rounded(const F& f, Args... args) {
  return static_cast<R>(f(static_cast<compute_t<Args>>(args)...));
}

}  // namespace tandem::backend::cuda

// Registers make<__nv_bfloat16> and make<__half> for an op on CUDA devices.
#define REGISTER_CUDA_16BIT_KERNEL(op, make)                                                              \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cuda, ::tandem::DType::BF16, make<__nv_bfloat16>); \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cuda, ::tandem::DType::F16, make<__half>)
