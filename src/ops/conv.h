// Convolution, pooling and spatial padding on channels-last (N, H, W, C) tensors: the graph-building
// functions, and the window geometry that shape inference and the kernels share.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "graph/op_registry.h"

namespace tandem::ops {

using Pair = std::array<int64_t, 2>;  // (height, width)

// Where a sliding window (a kernel or a pool) sits on one image. With padding "same" (Keras/TF):
// out = ceil(in / stride), pad_total = max((out − 1)·stride + (k − 1)·dilation + 1 − in, 0),
// pad_top/left = pad_total / 2 (floor) and the rest at the bottom/right. With "valid" no padding
// and out = (in − (k − 1)·dilation − 1) / stride + 1.
struct Window2D {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 0, kw = 0;              // window size
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t oh = 0, ow = 0;              // output
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

// Reads "strides", "dilation" (optional, default 1) and "padding" from `attrs`; `input` is (N,H,W,C).
// Throws ShapeError naming `op` for a bad rank, non-positive sizes, an unknown padding, or a window
// larger than the input with "valid" padding.
Window2D window2d(const Shape& input, int64_t kh, int64_t kw, const Attrs& attrs, const char* op);

// y = x ⋆ kernel: x (N,H,W,C), kernel (kh,kw,C,F) -> (N,OH,OW,F). padding "valid" or "same".
Value conv2d(Graph& g, Value x, Value kernel, Pair strides = {1, 1}, Pair dilation = {1, 1},
             const std::string& padding = "valid");
// The adjoint of conv2d in x: dy (N,OH,OW,F), kernel -> dx of `input_shape`.
Value conv2d_backprop_input(Graph& g, Value dy, Value kernel, const Shape& input_shape, Pair strides, Pair dilation,
                            const std::string& padding);
// The gradient of conv2d in its kernel: x, dy -> dkernel of `kernel_shape`.
Value conv2d_backprop_filter(Graph& g, Value x, Value dy, const Shape& kernel_shape, Pair strides, Pair dilation,
                             const std::string& padding);

// The gradients (dx, dkernel) of conv2d(x, kernel) with `attrs` (conv2d's) for the output gradient
// dy (also fused_conv2d's).
std::pair<Value, Value> conv2d_gradients(Graph& g, Value x, Value kernel, Value dy, const Attrs& attrs);

// Depthwise convolution: x (N,H,W,C), kernel (kh,kw,C,M) -> (N,OH,OW,C·M), output channel c·M + m
// is x's channel c convolved with kernel[:, :, c, m] (Keras's DepthwiseConv2D; PyTorch's conv2d
// with groups = C). Its adjoints in x and in the kernel:
Value depthwise_conv2d(Graph& g, Value x, Value kernel, Pair strides = {1, 1}, Pair dilation = {1, 1},
                       const std::string& padding = "valid");
Value depthwise_conv2d_backprop_input(Graph& g, Value dy, Value kernel, const Shape& input_shape, Pair strides, Pair dilation,
                                      const std::string& padding);
Value depthwise_conv2d_backprop_filter(Graph& g, Value x, Value dy, const Shape& kernel_shape, Pair strides, Pair dilation,
                                       const std::string& padding);

// Keras's Conv2DTranspose (the adjoint of conv2d in x): x (N,H,W,C), kernel (kh,kw,F,C) -> (N,OH,OW,F)
// with Keras 3's output size: "valid": (H − 1)·s + k' + output_padding, where k' = (k − 1)·dilation + 1
// and output_padding defaults to max(k', s) − k'; "same": H·s, or (H − 1)·s + k' mod 2 + output_padding
// when output_padding is given. Built from conv2d_backprop_input (and, where no conv2d padding has
// that geometry, a crop or zero pad of its "valid" result).
struct ConvTransposeGeometry {
  int64_t out = 0;        // the output size along one axis
  int64_t crop_top = 0;   // rows of the full (H − 1)·s + k' result before the output's first
};
ConvTransposeGeometry conv_transpose_geometry(int64_t in, int64_t k, int64_t stride, int64_t dilation, const std::string& padding,
                                              std::optional<int64_t> output_padding);
Value conv2d_transpose(Graph& g, Value x, Value kernel, Pair strides, Pair dilation, const std::string& padding,
                       std::optional<Pair> output_padding = std::nullopt);

// Dropout of whole channels (the last axis): each row drops a channel at every position or none;
// the "dropout" op with attribute mask_period = channels (see src/ops/dropout.cpp).
Value spatial_dropout(Graph& g, Value x, Value step, double rate, uint64_t seed);

// Pooling over (pool_h, pool_w) windows; padded positions never count: max ignores them and the
// average divides by the number of real elements in each window (as Keras/TF do).
Value max_pool2d(Graph& g, Value x, Pair pool, Pair strides, const std::string& padding = "valid");
Value avg_pool2d(Graph& g, Value x, Pair pool, Pair strides, const std::string& padding = "valid");

// Zero padding of H and W by {top, bottom, left, right}; crop2d removes that much (its adjoint).
Value pad2d(Graph& g, Value x, std::array<int64_t, 4> padding);
Value crop2d(Graph& g, Value x, std::array<int64_t, 4> cropping);

}  // namespace tandem::ops
