// conv2d, fused_conv2d (the convolution, then bias and activation in one pass),
// conv2d_backprop_input and conv2d_backprop_filter on channels-last tensors, on CUDA devices with
// cuDNN.
//
// Layouts. Images are NHWC, which cuDNN reads as they are. Tandem's kernels are (kh, kw, C, F), a
// layout no cuDNN filter descriptor expresses, so each kernel instance keeps the filter in a cuDNN
// layout (KRSC, or KCRS where cuDNN has no usable algorithm for KRSC, as may be so for float64) in
// scratch of its own, permuted on the device every step: the filter changes with every update.
//
// Padding. cuDNN pads symmetrically, and "same" with an odd total puts the extra row (column) at
// the bottom (right). Then the image is padded by that row explicitly, into scratch (and the input
// gradient cropped back out of it), and cuDNN pads the rest.
//
// Algorithms: chosen once by the factory, deterministic and FMA-only (see conv_algorithm.h); for
// bfloat16 and float16 also tensor-op math, whose products of 16-bit operands are exact and whose
// sums run in float32 (the descriptor's compute type), rounded once to the output.
//
// depthwise_conv2d and its gradients are the same convolutions with cuDNN's group count = C: the
// depthwise kernel (kh, kw, C, M) read as (kh, kw, 1, C·M) is a grouped filter of C·M outputs
// with one input channel each, output c·M + m in group c, as Tandem's channel order has it.
#include <array>
#include <climits>
#include <optional>
#include <type_traits>

#include "backend/cuda/bias_activation.cuh"
#include "backend/cuda/conv_algorithm.h"
#include "backend/cuda/device_scratch.h"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"
#include "backend/cuda/pad2d.cuh"
#include "ops/conv.h"

namespace tandem::backend::cuda {

namespace {
// A filter's axes, and the order in which a layout stores them, outermost first.
enum FilterAxis { kRows, kCols, kIn, kOut };
using AxisOrder = std::array<int, 4>;
constexpr AxisOrder kTandemOrder{kRows, kCols, kIn, kOut};
struct FilterFormat {
  cudnnTensorFormat_t format;
  AxisOrder order;
};
constexpr FilterFormat kFilterFormats[] = {{CUDNN_TENSOR_NHWC, {kOut, kRows, kCols, kIn}},
                                           {CUDNN_TENSOR_NCHW, {kOut, kIn, kRows, kCols}}};

// dst, packed in one axis order, = src, packed in another.
struct FilterPermute {
  int64_t dims[4];         // dst's axis sizes, outermost first
  int64_t src_strides[4];  // src's stride along each of those axes
  __host__ __device__ int64_t count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};
FilterPermute filter_permute(const std::array<int64_t, 4>& sizes, const AxisOrder& from, const AxisOrder& to) {
  std::array<int64_t, 4> stride{};
  for (int64_t i = 3, step = 1; i >= 0; --i) stride[from[i]] = step, step *= sizes[from[i]];
  FilterPermute p{};
  for (int i = 0; i < 4; ++i) p.dims[i] = sizes[to[i]], p.src_strides[i] = stride[to[i]];
  return p;
}

// D differs from S only for a 16-bit filter gradient written as float32 (output_dtype).
template <class D, class S>
__global__ void permute_kernel(D* dst, const S* src, FilterPermute p) {
  TANDEM_CUDA_LOOP(i, p.count()) {
    int64_t rest = i, offset = 0;
    for (int d = 3; d >= 0; --d) offset += rest % p.dims[d] * p.src_strides[d], rest /= p.dims[d];
    dst[i] = static_cast<D>(src[offset]);
  }
}

// The convolution as cuDNN runs it: the image grown by extra_h rows and extra_w columns of zeros
// (0 or 1: "same" puts the odd one at the bottom, right), then padded symmetrically by pad_top and
// pad_left. "same" pads no more than its last window reaches, so the extra row is always read.
struct Geometry {
  ops::Window2D w;
  int64_t filters, extra_h, extra_w;
  int64_t groups;  // 1, or C for a depthwise convolution
  Geometry(const ops::Window2D& win, int64_t f, int64_t g = 1)
      : w(win), filters(f), extra_h(win.pad_bottom - win.pad_top), extra_w(win.pad_right - win.pad_left), groups(g) {}
  int64_t group_in() const { return w.c / groups; }  // input channels per group
  bool padded() const { return extra_h + extra_w > 0; }
  ShiftedCopy into_padded() const {
    return {.n = w.n, .c = w.c, .src_h = w.h, .src_w = w.w, .dst_h = w.h + extra_h, .dst_w = w.w + extra_w};
  }
  ShiftedCopy out_of_padded() const {
    return {.n = w.n, .c = w.c, .src_h = w.h + extra_h, .src_w = w.w + extra_w, .dst_h = w.h, .dst_w = w.w};
  }
  std::array<int64_t, 4> filter_sizes() const { return {w.kh, w.kw, group_in(), filters}; }  // by FilterAxis
  std::string str() const {
    // Appended, not "(" + ...: GCC 12 raises a false -Wrestrict on that concatenation.
    auto pair = [](int64_t a, int64_t b) { return std::string("(").append(std::to_string(a)).append(", ").append(std::to_string(b)).append(")"); };
    return "input " + Shape{w.n, w.h, w.w, w.c}.str() + ", kernel " + Shape{w.kh, w.kw, group_in(), filters}.str() +
           (groups > 1 ? ", groups " + std::to_string(groups) : std::string()) + ", strides " +
           pair(w.sh, w.sw) + ", dilation " + pair(w.dh, w.dw) + ", padding " + pair(w.pad_top, w.pad_bottom) + " " +
           pair(w.pad_left, w.pad_right);
  }
};

// cuDNN's alpha and beta: double for float64 data, float for the rest (the 16-bit types included).
template <class T> using scale_t = std::conditional_t<std::is_same_v<T, double>, double, float>;
template <class T> constexpr scale_t<T> kOne = 1;
template <class T> constexpr scale_t<T> kZero = 0;

// One conv node's descriptors, algorithm, scratch and launch shapes, fixed by its factory. The
// closures hold a copy; the descriptors and scratch go with the last of them.
template <class T>
class Convolution {
 public:
  Convolution(const KernelInit& k, const Geometry& g, ConvDirection dir)
      : g_(g), dnn_(context(k).dnn), workspace_(context(k).workspace), workspace_bytes_(context(k).workspace_bytes),
        s_(stream(k)), label_(kernel_label(k)) {
    const Context& ctx = context(k);
    CUDA_CHECK(cudaSetDevice(ctx.ordinal), label_);  // cuDNN and the scratch work on the current device
    d_ = std::make_shared<ConvDescriptors>(label_);
    const ops::Window2D& w = g.w;
    check_cudnn(cudnnSetTensor4dDescriptor(d_->image, CUDNN_TENSOR_NHWC, kType, dim(w.n), dim(w.c), dim(w.h + g.extra_h),
                                           dim(w.w + g.extra_w)),
                "cudnnSetTensor4dDescriptor", label_);
    check_cudnn(cudnnSetTensor4dDescriptor(d_->output, CUDNN_TENSOR_NHWC, kType, dim(w.n), dim(g.filters), dim(w.oh), dim(w.ow)),
                "cudnnSetTensor4dDescriptor", label_);
    check_cudnn(cudnnSetConvolution2dDescriptor(d_->conv, dim(w.pad_top), dim(w.pad_left), dim(w.sh), dim(w.sw), dim(w.dh), dim(w.dw),
                                                CUDNN_CROSS_CORRELATION, kCompute),
                "cudnnSetConvolution2dDescriptor", label_);
    check_cudnn(cudnnSetConvolutionGroupCount(d_->conv, dim(g.groups)), "cudnnSetConvolutionGroupCount", label_);
    // FMA math first; float64 may also take DEFAULT (its tensor cores compute exact FP64 FMAs),
    // float32 never: DEFAULT allows TF32. The 16-bit types take tensor-op math first (exact
    // products, float32 sums), then FMA. A math type cuDNN refuses is one more that does not fit.
    constexpr cudnnMathType_t kMaths[] = {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH};
    constexpr cudnnMathType_t kLowMaths[] = {CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH};
    for (int m = 0; m < (kF64 || kLow ? 2 : 1); ++m)
      for (const FilterFormat& f : kFilterFormats) {
        if (cudnnSetConvolutionMathType(d_->conv, kLow ? kLowMaths[m] : kMaths[m]) != CUDNN_STATUS_SUCCESS) break;
        check_cudnn(cudnnSetFilter4dDescriptor(d_->filter, kType, f.format, dim(g.filters), dim(g.group_in()), dim(w.kh), dim(w.kw)),
                    "cudnnSetFilter4dDescriptor", label_);
        check_output_size();
        algo_ = choose_conv_algorithm(ctx, *d_, dir, label_, kLow);
        if (algo_ < 0) continue;
        allocate(ctx, f.order);
        return;
      }
    throw Error(label_ + ": cuDNN offers no deterministic FMA algorithm within the " + std::to_string(ctx.workspace_bytes) +
                "-byte workspace for the " + kTypeName + " convolution of " + g.str());
  }

  void filter_to_dnn(const T* kernel) const { permute(filter_.get(), kernel, to_dnn_); }
  template <class Out>
  void filter_from_dnn(Out* kernel) const { permute(kernel, static_cast<const T*>(filter_.get()), from_dnn_); }
  // The image cuDNN reads: x, or x copied into the padded scratch.
  const T* image(const T* x) const {
    if (!padded_) return x;
    shifted_copy(padded_.get(), x, g_.into_padded(), image_grid_, s_, label_);
    return padded_.get();
  }
  // Where cuDNN writes the input gradient, and the crop that brings it back to dx.
  T* image_grad(T* dx) const { return padded_ ? padded_.get() : dx; }
  void crop_image_grad(T* dx) const {
    if (padded_) shifted_copy(dx, static_cast<const T*>(padded_.get()), g_.out_of_padded(), image_grid_, s_, label_);
  }

  void forward(const T* x, T* y) const {
    check_cudnn(cudnnConvolutionForward(dnn_, &kOne<T>, d_->image, x, d_->filter, filter_.get(), d_->conv,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algo_), workspace_, workspace_bytes_, &kZero<T>,
                                        d_->output, y),
                "cudnnConvolutionForward", label_);
  }
  void backward_data(const T* dy, T* dx) const {
    check_cudnn(cudnnConvolutionBackwardData(dnn_, &kOne<T>, d_->filter, filter_.get(), d_->output, dy, d_->conv,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_), workspace_, workspace_bytes_, &kZero<T>,
                                             d_->image, dx),
                "cudnnConvolutionBackwardData", label_);
  }
  void backward_filter(const T* x, const T* dy) const {  // into the filter scratch
    check_cudnn(cudnnConvolutionBackwardFilter(dnn_, &kOne<T>, d_->image, x, d_->output, dy, d_->conv,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_), workspace_, workspace_bytes_, &kZero<T>,
                                               d_->filter, filter_.get()),
                "cudnnConvolutionBackwardFilter", label_);
  }

 private:
  static constexpr bool kF64 = std::is_same_v<T, double>;
  static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>, kF16 = std::is_same_v<T, __half>, kLow = kBf16 || kF16;
  static constexpr cudnnDataType_t kType =
      kF64 ? CUDNN_DATA_DOUBLE : kBf16 ? CUDNN_DATA_BFLOAT16 : kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  static constexpr cudnnDataType_t kCompute = kF64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;  // the sums' type
  static constexpr const char* kTypeName = kF64 ? "float64" : kBf16 ? "bfloat16" : kF16 ? "float16" : "float32";

  int dim(int64_t v) const {
    if (v > INT_MAX) throw Error(label_ + ": a convolution dimension of " + std::to_string(v) + " is more than cuDNN takes");
    return static_cast<int>(v);
  }
  // The scratch and launch shapes for a filter in cuDNN's `order`.
  void allocate(const Context& ctx, const AxisOrder& order) {
    const std::array<int64_t, 4> sizes = g_.filter_sizes();
    to_dnn_ = filter_permute(sizes, kTandemOrder, order);
    from_dnn_ = filter_permute(sizes, order, kTandemOrder);
    filter_ = device_scratch<T>(ctx, to_dnn_.count(), label_);
    if (g_.padded()) padded_ = device_scratch<T>(ctx, g_.into_padded().count(), label_);
    filter_grid_ = blocks_for(to_dnn_.count(), ctx);
    image_grid_ = blocks_for(g_.into_padded().count(), ctx);
  }
  template <class D>
  void permute(D* dst, const T* src, const FilterPermute& p) const {
    permute_kernel<<<filter_grid_, kBlock, 0, s_>>>(dst, src, p);
    check_launch(label_);
  }
  // cuDNN must agree with Tandem on the output's size, or the padding above is wrong.
  void check_output_size() const {
    int n = 0, c = 0, h = 0, w = 0;
    check_cudnn(cudnnGetConvolution2dForwardOutputDim(d_->conv, d_->image, d_->filter, &n, &c, &h, &w),
                "cudnnGetConvolution2dForwardOutputDim", label_);
    if (h != g_.w.oh || w != g_.w.ow)
      throw Error(label_ + ": internal: cuDNN computes a " + std::to_string(h) + "x" + std::to_string(w) +
                  " output for the convolution of " + g_.str());
  }

  Geometry g_;
  cudnnHandle_t dnn_;
  void* workspace_;
  std::size_t workspace_bytes_;
  cudaStream_t s_;
  std::string label_;
  std::shared_ptr<ConvDescriptors> d_;
  int algo_ = -1;
  FilterPermute to_dnn_{}, from_dnn_{};  // Tandem's filter layout to the chosen one, and back
  std::shared_ptr<T> filter_, padded_;   // the filter in cuDNN's layout; the padded image, if any
  unsigned filter_grid_ = 1, image_grid_ = 1;
};

// The kernel for an empty output (nothing: an empty function) or an empty input (zeros), which
// cuDNN does not take; nullopt when there is a convolution to run.
std::optional<KernelFn> degenerate(const KernelInit& k) {
  if (k.out_type().bytes() == 0) return KernelFn{};
  for (const TensorType& t : k.in_types)
    if (t.bytes() == 0) {
      void* y = k.out[0];
      const std::size_t bytes = k.out_type().bytes();
      cudaStream_t s = stream(k);
      const std::string label = kernel_label(k);
      return KernelFn([=] { check(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync", label); });
    }
  return std::nullopt;
}

// The convolution of a conv2d-family node (kernel (kh, kw, C, F)) or a depthwise one (kernel
// (kh, kw, C, M): C·M filters in C groups); `x` is the image shape, `kernel` the kernel's.
Geometry geometry(const KernelInit& k, const Shape& x, const Shape& kernel) {
  const ops::Window2D w = ops::window2d(x, kernel[0], kernel[1], k.node.attrs, k.node.op.c_str());
  if (k.node.op.starts_with("depthwise_")) return Geometry(w, kernel[2] * kernel[3], kernel[2]);
  return Geometry(w, kernel[3]);
}

// Inputs (x, kernel).
template <class T>
KernelFn make_conv2d(const KernelInit& k) {
  if (std::optional<KernelFn> fn = degenerate(k)) return *fn;
  const Shape& ks = k.in_types[1].shape;
  const Convolution<T> conv(k, geometry(k, k.in_types[0].shape, ks), ConvDirection::Forward);
  const T *x = in<T>(k, 0), *kernel = in<T>(k, 1);
  T* y = out<T>(k);
  return [conv, x, kernel, y] {
    conv.filter_to_dnn(kernel);
    conv.forward(conv.image(x), y);
  };
}

// Inputs (x, kernel, bias), attrs as conv2d's and "activation". An empty image still gives
// activation(bias) everywhere, as the unfused graph does.
template <class T>
KernelFn make_fused_conv2d(const KernelInit& k) {
  if (k.out_type().bytes() == 0) return {};
  const KernelFn conv = make_conv2d<T>(k);
  const BiasActivation<T> epilogue(k, in<T>(k, 2));
  T* y = out<T>(k);
  return [conv, epilogue, y] {
    conv();
    epilogue(y);
  };
}

// Inputs (dy, kernel), attr "input_shape".
template <class T>
KernelFn make_conv2d_backprop_input(const KernelInit& k) {
  if (std::optional<KernelFn> fn = degenerate(k)) return *fn;
  const Shape& ks = k.in_types[1].shape;
  const Geometry g = geometry(k, Shape(k.node.attrs.ints("input_shape")), ks);
  const Convolution<T> conv(k, g, ConvDirection::BackwardData);
  const T *dy = in<T>(k, 0), *kernel = in<T>(k, 1);
  T* dx = out<T>(k);
  return [conv, dy, kernel, dx] {
    conv.filter_to_dnn(kernel);
    conv.backward_data(dy, conv.image_grad(dx));
    conv.crop_image_grad(dx);
  };
}

// Inputs (x, dy), attr "kernel_shape". With output_dtype float32 on 16-bit inputs the gradient is
// written as float32, but cuDNN's backward filter writes the inputs' type: its float32 sums are
// rounded to 16 bits once before they are widened (the CPU kernel keeps them).
template <class T, class Out>
KernelFn make_filter_gradient(const KernelInit& k) {
  if (std::optional<KernelFn> fn = degenerate(k)) return *fn;
  const Shape ks(k.node.attrs.ints("kernel_shape"));
  const Convolution<T> conv(k, geometry(k, k.in_types[0].shape, ks), ConvDirection::BackwardFilter);
  const T *x = in<T>(k, 0), *dy = in<T>(k, 1);
  Out* dkernel = out<Out>(k);
  return [conv, x, dy, dkernel] {
    conv.backward_filter(conv.image(x), dy);
    conv.filter_from_dnn(dkernel);
  };
}

template <class T>
KernelFn make_conv2d_backprop_filter(const KernelInit& k) {
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>)
    if (k.out_type().dtype == DType::F32) return make_filter_gradient<T, float>(k);
  return make_filter_gradient<T, T>(k);
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("conv2d", make_conv2d);
REGISTER_CUDA_16BIT_KERNEL("conv2d", make_conv2d);
REGISTER_CUDA_FLOAT_KERNEL("fused_conv2d", make_fused_conv2d);
REGISTER_CUDA_16BIT_KERNEL("fused_conv2d", make_fused_conv2d);
REGISTER_CUDA_FLOAT_KERNEL("conv2d_backprop_input", make_conv2d_backprop_input);
REGISTER_CUDA_16BIT_KERNEL("conv2d_backprop_input", make_conv2d_backprop_input);
REGISTER_CUDA_FLOAT_KERNEL("conv2d_backprop_filter", make_conv2d_backprop_filter);
REGISTER_CUDA_16BIT_KERNEL("conv2d_backprop_filter", make_conv2d_backprop_filter);
REGISTER_CUDA_FLOAT_KERNEL("depthwise_conv2d", make_conv2d);
REGISTER_CUDA_FLOAT_KERNEL("depthwise_conv2d_backprop_input", make_conv2d_backprop_input);
REGISTER_CUDA_FLOAT_KERNEL("depthwise_conv2d_backprop_filter", make_conv2d_backprop_filter);

}  // namespace tandem::backend::cuda
