// A copy between channels-last images of different heights and widths at an offset, with zeros
// wherever the destination has no source pixel: pad2d and crop2d, and the explicit padding conv2d
// adds where cuDNN's symmetric padding cannot express "same".
#pragma once

#include "backend/cuda/kernel_util.cuh"

namespace tandem::backend::cuda {

// dst (n, dst_h, dst_w, c) at (y, x) = src (n, src_h, src_w, c) at (y − top, x − left), or 0
// outside src.
struct ShiftedCopy {
  int64_t n = 0, c = 0, src_h = 0, src_w = 0, dst_h = 0, dst_w = 0, top = 0, left = 0;
  __host__ __device__ int64_t count() const { return n * dst_h * dst_w * c; }
};

template <class T>
__global__ void shifted_copy_kernel(T* dst, const T* src, ShiftedCopy g) {
  TANDEM_CUDA_LOOP(i, g.count()) {
    const int64_t ch = i % g.c, pixel = i / g.c;
    const int64_t x = pixel % g.dst_w - g.left, row = pixel / g.dst_w;
    const int64_t y = row % g.dst_h - g.top, image = row / g.dst_h;
    const bool inside = y >= 0 && y < g.src_h && x >= 0 && x < g.src_w;
    dst[i] = inside ? src[((image * g.src_h + y) * g.src_w + x) * g.c + ch] : T(0);
  }
}

// Enqueues the copy on `s` with `grid` blocks (blocks_for(g.count(), ...), chosen by the factory).
template <class T>
void shifted_copy(T* dst, const T* src, const ShiftedCopy& g, unsigned grid, cudaStream_t s, const std::string& label) {
  if (g.count() == 0) return;
  shifted_copy_kernel<<<grid, kBlock, 0, s>>>(dst, src, g);
  check_launch(label);
}

}  // namespace tandem::backend::cuda
