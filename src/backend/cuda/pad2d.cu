// pad2d (zero border around H and W) and crop2d on channels-last tensors, on CUDA devices.
#include "backend/cuda/pad2d.cuh"

namespace tandem::backend::cuda {

namespace {
// attr `key` = {top, bottom, left, right}: a pad puts x at (top, left) of y; a crop reads y from
// (top, left) of x.
template <class T>
KernelFn make_border(const KernelInit& k, const char* key, bool pad) {
  const std::vector<int64_t> p = k.node.attrs.ints(key);
  const Shape& xs = k.in_types[0].shape;
  const Shape& ys = k.out_type().shape;
  const ShiftedCopy g{.n = ys[0], .c = ys[3], .src_h = xs[1], .src_w = xs[2], .dst_h = ys[1], .dst_w = ys[2],
                      .top = pad ? p[0] : -p[0], .left = pad ? p[2] : -p[2]};
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const unsigned grid = blocks_for(g.count(), context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] { shifted_copy(y, x, g, grid, s, label); };
}

template <class T> KernelFn make_pad2d(const KernelInit& k) { return make_border<T>(k, "padding", true); }
template <class T> KernelFn make_crop2d(const KernelInit& k) { return make_border<T>(k, "cropping", false); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("pad2d", make_pad2d);
REGISTER_CUDA_FLOAT_KERNEL("crop2d", make_crop2d);

}  // namespace tandem::backend::cuda
