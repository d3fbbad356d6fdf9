// conv2d (and fused_conv2d), conv2d_backprop_input and conv2d_backprop_filter on channels-last
// tensors, by im2col + GEMM.
//
// Why im2col + gemm<T>, parallel over the batch. Measured on the Fashion-MNIST CNN's shapes, batch
// 128, float32, 3x3 kernels, "valid", one CPU device with 2 threads (2-core AVX-512 Xeon), best of
// 40 runs, in ms:
//                                          forward  backprop_input  backprop_filter
//   28x28x1 -> 32 filters
//     per image, images split over threads   1.62       1.46            1.45
//     whole-batch im2col + threaded GEMM     1.59       1.50            1.98
//     Eigen Tensor patches + contraction     4.8          -               -
//   13x13x32 -> 64 filters
//     per image, images split over threads   2.13       2.03            2.42
//     whole-batch im2col + threaded GEMM     2.30       2.59            3.00
//     Eigen Tensor patches + contraction     3.95         -               -
// "Eigen Tensor" is x.extract_image_patches(...).reshape(...).contract(kernel) on a
// ThreadPoolDevice — the formulation of TensorFlow's SpatialConvolution, which is TensorFlow's
// wrapper and not part of Eigen 3.4 itself. It is about 2-3x slower than im2col + GEMM here, so it was
// not kept. Splitting images over threads is as fast or faster than one big threaded GEMM and needs
// im2col scratch for one image per thread instead of the whole batch; with fewer images than
// threads (predict on a few rows) the images run one by one with a threaded GEMM instead.
#include <Eigen/Core>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_util.h"
#include "backend/cpu/low_precision.h"
#include "ops/conv.h"

namespace tandem::backend::cpu {

namespace {
// Runs GEMMs inside an outer parallel loop without touching the device's pool (no nested pools).
Context& serial_context() {
  static Context ctx(1);
  return ctx;
}

// The window geometry of a conv node; `x` is the input image shape, `k` the kernel shape.
ops::Window2D geometry(const KernelInit& k, const Shape& x, const Shape& kernel) {
  return ops::window2d(x, kernel[0], kernel[1], k.node.attrs, k.node.op.c_str());
}

// One image's patches: col (OH·OW, KH·KW·C), row (oy, ox), column (ky, kx, c) — the kernel's
// (kh, kw, C, F) layout read as a (KH·KW·C, F) matrix. Padded positions are zeros.
template <class T>
void im2col(const ops::Window2D& w, const T* x, T* col) {
  const int64_t c = w.c;
  for (int64_t oy = 0; oy < w.oh; ++oy)
    for (int64_t ox = 0; ox < w.ow; ++ox)
      for (int64_t ky = 0; ky < w.kh; ++ky) {
        const int64_t iy = oy * w.sh - w.pad_top + ky * w.dh;
        for (int64_t kx = 0; kx < w.kw; ++kx, col += c) {
          const int64_t ix = ox * w.sw - w.pad_left + kx * w.dw;
          if (iy < 0 || iy >= w.h || ix < 0 || ix >= w.w) std::fill(col, col + c, T(0));
          else std::memcpy(col, x + (iy * w.w + ix) * c, static_cast<std::size_t>(c) * sizeof(T));
        }
      }
}

// The adjoint of im2col: adds each patch row back onto the image it came from.
template <class T>
void col2im(const ops::Window2D& w, const T* col, T* x) {
  const int64_t c = w.c;
  std::fill(x, x + w.h * w.w * c, T(0));
  for (int64_t oy = 0; oy < w.oh; ++oy)
    for (int64_t ox = 0; ox < w.ow; ++ox)
      for (int64_t ky = 0; ky < w.kh; ++ky) {
        const int64_t iy = oy * w.sh - w.pad_top + ky * w.dh;
        for (int64_t kx = 0; kx < w.kw; ++kx, col += c) {
          const int64_t ix = ox * w.sw - w.pad_left + kx * w.dw;
          if (iy < 0 || iy >= w.h || ix < 0 || ix >= w.w) continue;
          T* dst = x + (iy * w.w + ix) * c;
          for (int64_t i = 0; i < c; ++i) dst[i] += col[i];
        }
      }
}

// A 1x1, stride-1 window without padding: the image already is its own im2col matrix.
bool is_pointwise(const ops::Window2D& w) {
  return w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.pad_top + w.pad_bottom + w.pad_left + w.pad_right == 0;
}

// Sizes shared by the three kernels.
struct Dims {
  ops::Window2D w;
  int64_t rows, patch, filters;  // per image: OH·OW output positions; KH·KW·C; F
  int64_t in_size, out_size;     // elements per image of x and of y
  Dims(const ops::Window2D& win, int64_t f)
      : w(win), rows(win.oh * win.ow), patch(win.kh * win.kw * win.c), filters(f), in_size(win.h * win.w * win.c),
        out_size(win.oh * win.ow * f) {}
};

template <class T>
using Scratch = std::shared_ptr<std::vector<T>>;

// One slot per thread when the batch has at least one image per thread, else a single slot.
int64_t slot_count(Context& ctx, int64_t batch) { return batch >= ctx.threads() ? ctx.threads() : 1; }

// The filter gradient's slots: a number fixed by the batch alone, so its per-slot partial sums, and
// the order they are added in, are the same on any number of threads (bitwise equal results).
constexpr int64_t kFilterSlots = 8;
int64_t filter_slot_count(int64_t batch) { return std::max<int64_t>(1, std::min(batch, kFilterSlots)); }

// Calls fn(gemm_context, slot, image, first_in_slot) for every image, slot s taking the contiguous
// images [batch·s/slots, batch·(s+1)/slots). With several slots, threads take whole slots and run
// their GEMMs serially (measured faster, see the top of the file); with one, images go one by one
// and each GEMM is threaded. The GEMM's result does not depend on its threads, so neither does the
// kernel's.
template <class F>
void for_images(Context& ctx, int64_t batch, int64_t slots, F&& fn) {
  const auto run_slot = [&](Context& gemm_context, int64_t s) {
    const int64_t b = batch * s / slots, e = batch * (s + 1) / slots;
    for (int64_t i = b; i < e; ++i) fn(gemm_context, s, i, i == b);
  };
  if (slots == 1 || ctx.threads() == 1) {
    for (int64_t s = 0; s < slots; ++s) run_slot(ctx, s);
    return;
  }
  ctx.parallel_for(slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) run_slot(serial_context(), s);
  });
}
template <class F>
void for_images(Context& ctx, int64_t batch, F&& fn) {
  for_images(ctx, batch, slot_count(ctx, batch), fn);
}

template <class T>
Scratch<T> scratch_for(int64_t slots, int64_t per_slot) {
  return std::make_shared<std::vector<T>>(static_cast<std::size_t>(slots * per_slot));
}
template <class T>
Scratch<T> scratch_for(Context& ctx, int64_t batch, int64_t per_slot) {
  return scratch_for<T>(slot_count(ctx, batch), per_slot);
}

// conv2d, and fused_conv2d with its bias and activation applied to each image's output by the GEMM.
template <class T>
KernelFn make_convolution(const KernelInit& k, Epilogue<T> epilogue) {
  const Shape& ks = k.in_types[1].shape;
  const Dims d(geometry(k, k.in_types[0].shape, ks), ks[3]);
  const T* x = in<T>(k, 0);
  const T* kernel = in<T>(k, 1);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = d.w.n;
  if (is_pointwise(d.w)) return [=] { gemm<T>(*ctx, false, false, n * d.rows, d.filters, d.patch, x, kernel, y, T(0), epilogue); };
  Scratch<T> scratch = scratch_for<T>(*ctx, n, d.rows * d.patch);
  return [=] {
    for_images(*ctx, n, [&](Context& gc, int64_t slot, int64_t i, bool) {
      T* col = scratch->data() + slot * d.rows * d.patch;
      im2col(d.w, x + i * d.in_size, col);
      gemm<T>(gc, false, false, d.rows, d.filters, d.patch, col, kernel, y + i * d.out_size, T(0), epilogue);
    });
  };
}

template <class T>
KernelFn make_conv2d(const KernelInit& k) {
  return make_convolution<T>(k, {});
}

template <class T>
KernelFn make_fused_conv2d(const KernelInit& k) {
  return make_convolution<T>(k, {in<T>(k, 2), parse_activation(k.node.attrs.s("activation"))});
}

// Inputs (dy, kernel): per image dcol = dy · Kᵀ, then col2im. The overlapping windows' sums run in
// T's compute type: for the 16-bit types dcol and the image are float32, rounded to dx once.
template <class T>
KernelFn make_conv2d_backprop_input(const KernelInit& k) {
  using Acc = compute_t<T>;
  const Shape& ks = k.in_types[1].shape;
  const Dims d(geometry(k, Shape(k.node.attrs.ints("input_shape")), ks), ks[3]);
  const T* dy = in<T>(k, 0);
  const T* kernel = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = d.w.n;
  if (is_pointwise(d.w)) return [=] { gemm<T>(*ctx, false, true, n * d.rows, d.patch, d.filters, dy, kernel, dx); };
  constexpr bool widened = !std::is_same_v<T, Acc>;
  const int64_t per_slot = d.rows * d.patch + (widened ? d.in_size : 0);
  Scratch<Acc> scratch = scratch_for<Acc>(*ctx, n, per_slot);
  return [=] {
    for_images(*ctx, n, [&](Context& gc, int64_t slot, int64_t i, bool) {
      Acc* dcol = scratch->data() + slot * per_slot;
      gemm_wide<T>(gc, false, true, d.rows, d.patch, d.filters, dy + i * d.out_size, kernel, dcol);
      if constexpr (widened) {
        Acc* image = dcol + d.rows * d.patch;
        col2im(d.w, dcol, image);
        std::transform(image, image + d.in_size, dx + i * d.in_size, [](Acc v) { return static_cast<T>(v); });
      } else {
        col2im(d.w, dcol, dx + i * d.in_size);
      }
    });
  };
}

// Inputs (x, dy): dK = Σ over images of colᵀ · dy. Each of filter_slot_count's slots sums its
// images into its own partial (for float and double slot 0 straight into dK), then the partials are
// added in slot order, so the result depends only on the batch size. The partials are in T's
// compute type: for the 16-bit types float32, rounded to dK once at the end, or kept as they are
// where the op's output_dtype is float32 (Out = float: a float32 weight's gradient).
template <class T, class Out>
KernelFn make_filter_gradient(const KernelInit& k) {
  using Acc = compute_t<T>;
  const Shape ks(k.node.attrs.ints("kernel_shape"));
  const Dims d(geometry(k, k.in_types[0].shape, ks), ks[3]);
  const T* x = in<T>(k, 0);
  const T* dy = in<T>(k, 1);
  Out* dk = out<Out>(k);
  Context* ctx = &context(k);
  const int64_t n = d.w.n;
  const int64_t kf = d.patch * d.filters;
  constexpr bool into_dk = std::is_same_v<Out, Acc>;  // dK can hold the sums: no separate partial for slot 0
  if (is_pointwise(d.w)) {
    if constexpr (into_dk) return [=] { gemm_wide<T>(*ctx, true, false, d.patch, d.filters, n * d.rows, x, dy, dk, Acc(0)); };
    else return [=] { gemm<T>(*ctx, true, false, d.patch, d.filters, n * d.rows, x, dy, dk); };
  }
  if (n == 0) return [=] { std::fill(dk, dk + kf, Out(0)); };
  const int64_t slots = filter_slot_count(n);
  Scratch<T> cols = scratch_for<T>(slots, d.rows * d.patch);
  Scratch<Acc> partials = scratch_for<Acc>(slots, kf);
  return [=] {
    for_images(*ctx, n, slots, [&](Context& gc, int64_t slot, int64_t i, bool first) {
      T* col = cols->data() + slot * d.rows * d.patch;
      Acc* part = partials->data() + slot * kf;
      if constexpr (into_dk)
        if (slot == 0) part = dk;
      im2col(d.w, x + i * d.in_size, col);
      gemm_wide<T>(gc, true, false, d.patch, d.filters, d.rows, col, dy + i * d.out_size, part, first ? Acc(0) : Acc(1));
    });
    const Acc* part = partials->data();
    for (int64_t j = 0; j < kf; ++j) {
      Acc sum = into_dk ? static_cast<Acc>(dk[j]) : part[j];
      for (int64_t s = 1; s < slots; ++s) sum += part[s * kf + j];
      dk[j] = static_cast<Out>(sum);
    }
  };
}

template <class T>
KernelFn make_conv2d_backprop_filter(const KernelInit& k) {
  if constexpr (is_low_precision_v<T>)
    if (k.out_type().dtype == DType::F32) return make_filter_gradient<T, float>(k);
  return make_filter_gradient<T, T>(k);
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("conv2d", make_conv2d);
REGISTER_CPU_16BIT_KERNEL("conv2d", make_conv2d);
REGISTER_CPU_FLOAT_KERNEL("fused_conv2d", make_fused_conv2d);
REGISTER_CPU_16BIT_KERNEL("fused_conv2d", make_fused_conv2d);
REGISTER_CPU_FLOAT_KERNEL("conv2d_backprop_input", make_conv2d_backprop_input);
REGISTER_CPU_16BIT_KERNEL("conv2d_backprop_input", make_conv2d_backprop_input);
REGISTER_CPU_FLOAT_KERNEL("conv2d_backprop_filter", make_conv2d_backprop_filter);
REGISTER_CPU_16BIT_KERNEL("conv2d_backprop_filter", make_conv2d_backprop_filter);

}  // namespace tandem::backend::cpu
