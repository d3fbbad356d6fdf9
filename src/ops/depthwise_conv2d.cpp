// depthwise_conv2d (channels-last): each input channel c is convolved with its own kernel
// kernel[:, :, c, m] for m < multiplier, into output channel c·multiplier + m (Keras's
// DepthwiseConv2D, PyTorch's conv2d with groups = C). With its two gradient ops it forms the same
// closed family as conv2d: each is linear in each input, so each one's gradient is again one of
// the three.
#include "ops/conv.h"
#include "ops/conv_attrs.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
using namespace conv_detail;

// Checks x against kernel (kh, kw, C, M) and returns the output shape (N, OH, OW, C·M).
Shape depthwise_output(const Attrs& a, const Shape& x, const Shape& k, const char* op) {
  if (k.rank() != 4)
    throw ShapeError(std::string(op) + ": expected a kernel of rank 4 (kh, kw, in_channels, depth_multiplier), got " + k.str());
  const Window2D w = window2d(x, k[0], k[1], a, op);
  if (k[2] != w.c)
    throw ShapeError(std::string(op) + ": the kernel " + k.str() + " expects " + std::to_string(k[2]) +
                     " input channels, the input " + x.str() + " has " + std::to_string(w.c));
  return Shape{w.n, w.oh, w.ow, k[2] * k[3]};
}

Pair strides_of(const Attrs& a) { return pair_attr(a, "strides"); }
Pair dilation_of(const Attrs& a) { return pair_attr(a, "dilation"); }
}  // namespace

REGISTER_OP(
    .name = "depthwise_conv2d",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("depthwise_conv2d", in[0], in[1]);
      return one({depthwise_output(a, in[0].shape, in[1].shape, "depthwise_conv2d"), in[0].dtype});
    },
    .grad = [](GradContext& c) {
      const Pair s = strides_of(c.attrs()), d = dilation_of(c.attrs());
      const std::string& p = c.attrs().s("padding");
      c.set(0, depthwise_conv2d_backprop_input(c.g, c.dy(), c.input(1), c.input_type(0).shape, s, d, p));
      c.set(1, depthwise_conv2d_backprop_filter(c.g, c.input(0), c.dy(), c.input_type(1).shape, s, d, p));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}, {1}}}));

// Inputs (dy, kernel); attr "input_shape". As for conv2d_backprop_input: for
// L = ⟨Bᵢ(dy, K), G⟩ = ⟨dw(G, K), dy⟩, dL/ddy = dw(G, K) and dL/dK = B_f(G, dy).
REGISTER_OP(
    .name = "depthwise_conv2d_backprop_input",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("depthwise_conv2d_backprop_input", in[0], in[1]);
      const Shape x = shape_attr(a, "input_shape");
      check_dy("depthwise_conv2d_backprop_input", in[0].shape,
               depthwise_output(a, x, in[1].shape, "depthwise_conv2d_backprop_input"));
      return one({x, in[0].dtype});
    },
    .grad = [](GradContext& c) {
      const Pair s = strides_of(c.attrs()), d = dilation_of(c.attrs());
      const std::string& p = c.attrs().s("padding");
      c.set(0, depthwise_conv2d(c.g, c.dy(), c.input(1), s, d, p));
      c.set(1, depthwise_conv2d_backprop_filter(c.g, c.dy(), c.input(0), c.input_type(1).shape, s, d, p));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}, {1}}}), .localize = local_batch_extent("input_shape"));

// Inputs (x, dy); attr "kernel_shape". For L = ⟨B_f(x, dy), G⟩ = ⟨dw(x, G), dy⟩:
// dL/dx = Bᵢ(dy, G) and dL/ddy = dw(x, G).
REGISTER_OP(
    .name = "depthwise_conv2d_backprop_filter",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("depthwise_conv2d_backprop_filter", in[0], in[1]);
      const Shape k = shape_attr(a, "kernel_shape");
      check_dy("depthwise_conv2d_backprop_filter", in[1].shape,
               depthwise_output(a, in[0].shape, k, "depthwise_conv2d_backprop_filter"));
      return one({k, in[0].dtype});
    },
    .grad = [](GradContext& c) {
      const Pair s = strides_of(c.attrs()), d = dilation_of(c.attrs());
      const std::string& p = c.attrs().s("padding");
      c.set(0, depthwise_conv2d_backprop_input(c.g, c.input(1), c.dy(), c.input_type(0).shape, s, d, p));
      c.set(1, depthwise_conv2d(c.g, c.input(0), c.dy(), s, d, p));
    }, .layout = rows({.batch_inputs = {0, 1}, .partial_outputs = {0}}));

Value depthwise_conv2d(Graph& g, Value x, Value kernel, Pair strides, Pair dilation, const std::string& padding) {
  return g.add("depthwise_conv2d", {x, kernel}, conv_attrs(strides, dilation, padding));
}

Value depthwise_conv2d_backprop_input(Graph& g, Value dy, Value kernel, const Shape& input_shape, Pair strides, Pair dilation,
                                      const std::string& padding) {
  Attrs a = conv_attrs(strides, dilation, padding);
  a.set("input_shape", input_shape.dims());
  return g.add("depthwise_conv2d_backprop_input", {dy, kernel}, std::move(a));
}

Value depthwise_conv2d_backprop_filter(Graph& g, Value x, Value dy, const Shape& kernel_shape, Pair strides, Pair dilation,
                                       const std::string& padding) {
  Attrs a = conv_attrs(strides, dilation, padding);
  a.set("kernel_shape", kernel_shape.dims());
  return g.add("depthwise_conv2d_backprop_filter", {x, dy}, std::move(a));
}

}  // namespace tandem::ops
