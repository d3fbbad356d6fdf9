// Convolution, pooling and padding layers on channels-last images (batch, height, width, channels),
// with Keras 3's names, arguments and defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tandem/layer.h"

namespace tandem::layers {

// A (height, width) pair that also accepts one integer for both, like Keras's int-or-tuple
// arguments: `3` and `{3, 3}` are the same. Default-constructed it means "not given" (Keras None).
struct Int2 {
  int64_t h = 0, w = 0;
  bool given = false;
  Int2() = default;
  Int2(int64_t both) : h(both), w(both), given(true) {}
  Int2(int64_t height, int64_t width) : h(height), w(width), given(true) {}
};

struct Conv2DOptions {
  Int2 strides = 1;
  std::string padding = "valid";  // "valid" or "same" (output = ceil(input / stride), TF padding)
  Int2 dilation_rate = 1;
  std::string activation{};        // "" = linear; the names Dense accepts
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint kernel_constraint{};      // applied after each update
  Constraint bias_constraint{};
  std::string name{};
};
// 2-D convolution: kernel (kh, kw, in_channels, filters), bias (filters).
// Conv2D(32, 3, {.activation = "relu"}), Conv2D(64, {3, 5}, {.strides = 2, .padding = "same"}).
LayerRef Conv2D(int64_t filters, Int2 kernel_size, const Conv2DOptions& options = {});

struct Pooling2DOptions {
  Int2 strides{};                 // not given: pool_size
  std::string padding = "valid";  // "valid" or "same"; padded positions never count
  std::string name{};
};
// Max over each window. The gradient goes to the first maximal element of a window (row-major).
LayerRef MaxPooling2D(Int2 pool_size = 2, const Pooling2DOptions& options = {});
// Mean over each window; with "same" padding, over the window's real (unpadded) elements.
LayerRef AveragePooling2D(Int2 pool_size = 2, const Pooling2DOptions& options = {});

struct GlobalPooling2DOptions {
  bool keepdims = false;  // true: (batch, 1, 1, channels); false: (batch, channels)
  std::string name{};
};
LayerRef GlobalAveragePooling2D(const GlobalPooling2DOptions& options = {});

// How many zero rows and columns ZeroPadding2D adds, given as Keras's `padding` argument:
// 1 pads every side by 1; {1, 2} pads top and bottom by 1, left and right by 2;
// {{1, 2}, {3, 4}} pads top 1, bottom 2, left 3, right 4 (Keras's ((1, 2), (3, 4))).
struct Padding2D {
  int64_t top = 1, bottom = 1, left = 1, right = 1;
  Padding2D() = default;  // 1 on every side
  Padding2D(int64_t all) : top(all), bottom(all), left(all), right(all) {}
  Padding2D(int64_t height, int64_t width) : top(height), bottom(height), left(width), right(width) {}
  // Not inlined: GCC 12.2 with -O2 -march=native (SLP vectorisation) folds an inlined
  // `Padding2D p({2, 2}, {0, 0}); f(p);` into (2, 2, 2, 2) at the call site.
  [[gnu::noinline]] Padding2D(Int2 height, Int2 width) : top(height.h), bottom(height.w), left(width.h), right(width.w) {}
};
// Zero rows above and below and zero columns left and right of each image.
LayerRef ZeroPadding2D(Padding2D padding = 1, const std::string& name = "");

struct Conv2DTransposeOptions {
  Int2 strides = 1;
  std::string padding = "valid";  // "valid" or "same"
  // Extra rows (columns) at the bottom (right) of the output, less than the stride; not given
  // (Keras None): "valid" gives (in − 1)·stride + max(k', stride) rows, "same" gives in·stride,
  // where k' = (kernel_size − 1)·dilation_rate + 1. Given: (in − 1)·stride + k' + output_padding
  // with "valid", (in − 1)·stride + (k' mod 2) + output_padding with "same".
  Int2 output_padding{};
  Int2 dilation_rate = 1;
  std::string activation{};  // "" = linear; the names Dense accepts
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint kernel_constraint{};      // applied after each update
  Constraint bias_constraint{};
  std::string name{};
};
// Transposed 2-D convolution (the adjoint of Conv2D in its input; "deconvolution"): kernel
// (kh, kw, filters, in_channels) as Keras stores it, bias (filters).
// Conv2DTranspose(16, 3, {.strides = 2, .padding = "same"}) doubles the height and width.
LayerRef Conv2DTranspose(int64_t filters, Int2 kernel_size, const Conv2DTransposeOptions& options = {});

struct DepthwiseConv2DOptions {
  Int2 strides = 1;
  std::string padding = "valid";  // "valid" or "same"
  int64_t depth_multiplier = 1;   // output channels per input channel
  Int2 dilation_rate = 1;
  std::string activation{};  // "" = linear; the names Dense accepts
  bool use_bias = true;
  std::string depthwise_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer depthwise_regularizer{};  // of the kernel (Keras's argument name)
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};   // of the output, divided by the batch size
  Constraint depthwise_constraint{};    // of the kernel, applied after each update
  Constraint bias_constraint{};
  std::string name{};
};
// Each input channel convolved with its own depth_multiplier kernels: kernel (kh, kw, in_channels,
// depth_multiplier), bias (in_channels·depth_multiplier); output channel c·depth_multiplier + m.
LayerRef DepthwiseConv2D(Int2 kernel_size, const DepthwiseConv2DOptions& options = {});

struct SeparableConv2DOptions {
  Int2 strides = 1;  // of the depthwise step
  std::string padding = "valid";
  int64_t depth_multiplier = 1;
  Int2 dilation_rate = 1;
  std::string activation{};  // "" = linear; the names Dense accepts
  bool use_bias = true;
  std::string depthwise_initializer = "glorot_uniform";
  std::string pointwise_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer depthwise_regularizer{};
  Regularizer pointwise_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint depthwise_constraint{};   // applied after each update
  Constraint pointwise_constraint{};
  Constraint bias_constraint{};
  std::string name{};
};
// A depthwise convolution, then a 1x1 convolution to `filters` channels: weights depthwise_kernel
// (kh, kw, in_channels, depth_multiplier), pointwise_kernel (1, 1, in_channels·depth_multiplier,
// filters), bias (filters).
LayerRef SeparableConv2D(int64_t filters, Int2 kernel_size, const SeparableConv2DOptions& options = {});

// Removes rows and columns at the image's borders; `cropping` reads as ZeroPadding2D's padding:
// 1 (every side), {1, 2} (height, width) or {{top, bottom}, {left, right}}. Keras's default crops
// nothing.
LayerRef Cropping2D(Padding2D cropping = 0, const std::string& name = "");

// Dropout of whole channels: in training each sample drops a channel at every position with
// probability `rate` and scales the kept ones by 1/(1 − rate); in inference the identity. The
// mask is a function of the seed, the step, the sample's global row and the channel (as
// Dropout's): the same on every device and strategy. seed: none draws one from the global seed.
LayerRef SpatialDropout2D(double rate, std::optional<uint64_t> seed = std::nullopt, const std::string& name = "");

// ---- 1-D: sequences (batch, steps, channels), channels last --------------------------------------

struct Conv1DOptions {
  int64_t strides = 1;
  // "valid"; "same" (output = ceil(steps / stride)); or "causal": (kernel_size − 1)·dilation_rate
  // zeros before the first step, then "valid", so output t never sees input after t.
  std::string padding = "valid";
  int64_t dilation_rate = 1;
  std::string activation{};  // "" = linear; the names Dense accepts
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint kernel_constraint{};      // applied after each update
  Constraint bias_constraint{};
  std::string name{};
};
// 1-D convolution over the steps axis: kernel (kernel_size, in_channels, filters), bias (filters).
// Conv1D(16, 3, {.padding = "causal", .dilation_rate = 2}).
LayerRef Conv1D(int64_t filters, int64_t kernel_size, const Conv1DOptions& options = {});

struct Pooling1DOptions {
  std::optional<int64_t> strides{};  // not given: pool_size
  std::string padding = "valid";     // "valid" or "same"; padded positions never count
  std::string name{};
};
// Max over windows of pool_size steps (the gradient goes to the first maximal step of a window).
LayerRef MaxPooling1D(int64_t pool_size = 2, const Pooling1DOptions& options = {});
// Mean over windows of pool_size steps; with "same" padding, over the window's real steps only.
LayerRef AveragePooling1D(int64_t pool_size = 2, const Pooling1DOptions& options = {});

struct GlobalPooling1DOptions {
  bool keepdims = false;  // true: (batch, 1, channels); false: (batch, channels)
  std::string name{};
};
// The mean, or the max, over the steps of each channel.
LayerRef GlobalAveragePooling1D(const GlobalPooling1DOptions& options = {});
LayerRef GlobalMaxPooling1D(const GlobalPooling1DOptions& options = {});
// The max over height and width of each channel.
LayerRef GlobalMaxPooling2D(const GlobalPooling2DOptions& options = {});

}  // namespace tandem::layers
