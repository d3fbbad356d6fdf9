// resize2d and its adjoint resize2d_grad on CUDA devices: the per-axis taps of ops::resize_axis
// are copied to the device once, when the kernel is made; the gradient gathers each input pixel's
// sum from the reverse taps in a fixed order (no atomics), as the CPU kernel does.
#include <vector>

#include "backend/cuda/device_scratch.h"
#include "backend/cuda/kernel_util.cuh"
#include "ops/resize.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
std::shared_ptr<T> upload(const Context& ctx, const std::vector<T>& v, const std::string& label) {
  std::shared_ptr<T> d = device_scratch<T>(ctx, static_cast<int64_t>(v.size()), label);
  if (!v.empty()) CUDA_CHECK(cudaMemcpy(d.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "copying the taps of " + label);
  return d;
}

// One axis's taps on the device (pointers into `keep`, which the closure holds).
template <class T>
struct AxisView {
  const int64_t *index, *start, *source;
  const T *weight, *share;
};
template <class T>
struct DeviceAxis {
  std::shared_ptr<int64_t> index, start, source;
  std::shared_ptr<T> weight, share;
  DeviceAxis(const Context& ctx, const ops::ResizeAxis& a, const std::string& label)
      : index(upload(ctx, a.index, label)),
        start(upload(ctx, a.start, label)),
        source(upload(ctx, a.source, label)),
        weight(upload(ctx, std::vector<T>(a.weight.begin(), a.weight.end()), label)),
        share(upload(ctx, std::vector<T>(a.share.begin(), a.share.end()), label)) {}
  AxisView<T> view() const { return {index.get(), start.get(), source.get(), weight.get(), share.get()}; }
};

struct Dims {
  int64_t n, ih, iw, oh, ow, c;
};

template <class T>
__global__ void resize2d_kernel(T* y, const T* x, Dims d, AxisView<T> ty, AxisView<T> tx) {
  TANDEM_CUDA_LOOP(i, d.n * d.oh * d.ow * d.c) {
    const int64_t ch = i % d.c, ox = (i / d.c) % d.ow, oy = (i / (d.c * d.ow)) % d.oh, b = i / (d.c * d.ow * d.oh);
    const T* row0 = x + (b * d.ih + ty.index[2 * oy]) * d.iw * d.c;
    const T* row1 = x + (b * d.ih + ty.index[2 * oy + 1]) * d.iw * d.c;
    const int64_t c0 = tx.index[2 * ox] * d.c + ch, c1 = tx.index[2 * ox + 1] * d.c + ch;
    const T b0 = tx.weight[2 * ox], b1 = tx.weight[2 * ox + 1];
    y[i] = ty.weight[2 * oy] * (b0 * row0[c0] + b1 * row0[c1]) + ty.weight[2 * oy + 1] * (b0 * row1[c0] + b1 * row1[c1]);
  }
}

template <class T>
__global__ void resize2d_grad_kernel(T* dx, const T* dy, Dims d, AxisView<T> ty, AxisView<T> tx) {
  TANDEM_CUDA_LOOP(i, d.n * d.ih * d.iw * d.c) {
    const int64_t ch = i % d.c, ix = (i / d.c) % d.iw, iy = (i / (d.c * d.iw)) % d.ih, b = i / (d.c * d.iw * d.ih);
    T sum = 0;
    for (int64_t p = ty.start[iy]; p < ty.start[iy + 1]; ++p) {
      const T* src = dy + (b * d.oh + ty.source[p]) * d.ow * d.c + ch;
      for (int64_t q = tx.start[ix]; q < tx.start[ix + 1]; ++q) sum += ty.share[p] * tx.share[q] * src[tx.source[q] * d.c];
    }
    dx[i] = sum;
  }
}

// `grad`: the kernel of resize2d_grad, whose input is dy and output dx.
template <class T>
KernelFn make_resize(const KernelInit& k, bool grad) {
  const Shape& a = k.in_types[0].shape;
  const Shape& b = k.out_type().shape;
  const Shape& images = grad ? b : a;  // the un-resized side
  const Shape& resized = grad ? a : b;
  const Dims d{images[0], images[1], images[2], resized[1], resized[2], images[3]};
  const auto method = static_cast<ops::ResizeMethod>(k.node.attrs.i("method"));
  const std::string label = kernel_label(k);
  auto ty = std::make_shared<const DeviceAxis<T>>(context(k), ops::resize_axis(d.ih, d.oh, method), label);
  auto tx = std::make_shared<const DeviceAxis<T>>(context(k), ops::resize_axis(d.iw, d.ow, method), label);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t count = grad ? d.n * d.ih * d.iw * d.c : d.n * d.oh * d.ow * d.c;
  return launch_over(k, count, [=](unsigned grid, cudaStream_t s) {
    if (grad) resize2d_grad_kernel<<<grid, kBlock, 0, s>>>(y, x, d, ty->view(), tx->view());
    else resize2d_kernel<<<grid, kBlock, 0, s>>>(y, x, d, ty->view(), tx->view());
  });
}

template <class T> KernelFn make_resize2d(const KernelInit& k) { return make_resize<T>(k, false); }
template <class T> KernelFn make_resize2d_grad(const KernelInit& k) { return make_resize<T>(k, true); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("resize2d", make_resize2d);
REGISTER_CUDA_FLOAT_KERNEL("resize2d_grad", make_resize2d_grad);

}  // namespace tandem::backend::cuda
