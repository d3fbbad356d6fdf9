// image_affine_transform, its adjoint image_affine_transform_grad, and random_image_params on CUDA
// devices, with the CPU kernels' per-pixel math (backend/image_transform.h): the same taps,
// weights and order of summation, and the same draws for a seed, step and row.
#include "backend/cuda/kernel_util.cuh"
#include "backend/image_transform.h"
#include "ops/image.h"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
struct Geometry {
  int64_t n, h, w, c;
  int interpolation, mode;
};
Geometry geometry(const KernelInit& k, const char* op) {
  const Shape& s = k.in_types[0].shape;
  return {s[0], s[1], s[2], s[3], ops::interpolation_code(k.node.attrs.s("interpolation"), op), ops::fill_mode_code(k.node.attrs.s("fill_mode"), op)};
}

// One thread per output element.
template <class T>
__global__ void transform_kernel(T* y, const T* x, const T* t, Geometry g, T fill) {
  const int64_t total = g.n * g.h * g.w * g.c;
  TANDEM_CUDA_LOOP(i, total) {
    const int64_t ch = i % g.c, ox = (i / g.c) % g.w, oy = (i / (g.c * g.w)) % g.h, b = i / (g.c * g.w * g.h);
    int64_t pixel[4];
    T weight[4];
    const int taps = image::sample_taps(t + b * 8, ox, oy, g.h, g.w, g.interpolation, g.mode, pixel, weight);
    const T* image = x + b * g.h * g.w * g.c;
    T sum = T(0);
    for (int j = 0; j < taps; ++j) sum += weight[j] * (pixel[j] < 0 ? fill : image[pixel[j] * g.c + ch]);
    y[i] = sum;
  }
}

// One thread per (image, channel), visiting the output pixels in the CPU kernel's order: no atomics,
// so the sums are deterministic and equal to the CPU's.
template <class T>
__global__ void transform_grad_kernel(T* dx, const T* dy, const T* t, Geometry g) {
  TANDEM_CUDA_LOOP(line, g.n * g.c) {
    const int64_t b = line / g.c, ch = line % g.c;
    T* image = dx + b * g.h * g.w * g.c;
    for (int64_t p = 0; p < g.h * g.w; ++p) image[p * g.c + ch] = T(0);
    int64_t pixel[4];
    T weight[4];
    for (int64_t oy = 0; oy < g.h; ++oy)
      for (int64_t ox = 0; ox < g.w; ++ox) {
        const int taps = image::sample_taps(t + b * 8, ox, oy, g.h, g.w, g.interpolation, g.mode, pixel, weight);
        const T d = dy[((b * g.h + oy) * g.w + ox) * g.c + ch];
        for (int j = 0; j < taps; ++j)
          if (pixel[j] >= 0) image[pixel[j] * g.c + ch] += weight[j] * d;
      }
  }
}

// The step counter changes every step, so it is read here, on the device.
template <class T>
__global__ void params_kernel(T* y, const int64_t* step, image::ParamSpec p, int64_t rows, int64_t row_offset) {
  const auto s = static_cast<uint64_t>(*step);
  const int count = image::param_count(p.kind);
  TANDEM_CUDA_LOOP(r, rows) image::draw_params(p, s, static_cast<uint64_t>(row_offset + r), y + r * count);
}

template <class T>
KernelFn make_transform(const KernelInit& k) {
  const Geometry g = geometry(k, "image_affine_transform");
  const T* x = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* y = out<T>(k);
  const T fill = static_cast<T>(k.node.attrs.f("fill_value"));
  return launch_over(k, g.n * g.h * g.w * g.c, [=](unsigned grid, cudaStream_t s) { transform_kernel<<<grid, kBlock, 0, s>>>(y, x, t, g, fill); });
}

template <class T>
KernelFn make_transform_grad(const KernelInit& k) {
  const Geometry g = geometry(k, "image_affine_transform_grad");
  const T* dy = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* dx = out<T>(k);
  return launch_over(k, g.n * g.c, [=](unsigned grid, cudaStream_t s) { transform_grad_kernel<<<grid, kBlock, 0, s>>>(dx, dy, t, g); });
}

template <class T>
KernelFn make_random_image_params(const KernelInit& k) {
  const auto& a = k.node.attrs;
  const image::ParamSpec p = image::param_spec(a, k.in_types[0].shape);
  // Micro-batch j of a step holds the global rows from j × micro_rows on.
  const int64_t row_offset = a.i("row_offset", 0) + k.micro_batch * a.i("micro_rows", 0);
  const int64_t rows = k.in_types[0].shape[0];
  const int64_t* step = in<int64_t>(k, 1);
  T* y = out<T>(k);
  return launch_over(k, rows, [=](unsigned grid, cudaStream_t s) { params_kernel<<<grid, kBlock, 0, s>>>(y, step, p, rows, row_offset); });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("image_affine_transform", make_transform);
REGISTER_CUDA_FLOAT_KERNEL("image_affine_transform_grad", make_transform_grad);
REGISTER_CUDA_FLOAT_KERNEL("random_image_params", make_random_image_params);

}  // namespace tandem::backend::cuda
