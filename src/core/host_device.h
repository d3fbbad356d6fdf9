// TANDEM_HD marks a small function that both backends compile: the host compiler sees a plain
// inline function, nvcc a __host__ __device__ one. Per-element math written once this way is
// covered by the CPU tests for the GPU kernels too.
#pragma once

#if defined(__CUDACC__)
#define TANDEM_HD __host__ __device__ inline
#else
#define TANDEM_HD inline
#endif
