// conv2d (channels-last, kernel (kh, kw, C, F)) and its two gradient ops. All three are linear in
// each input, so each one's gradient is again one of the three.
#include "ops/conv.h"
#include "ops/conv_attrs.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/widened.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
using namespace conv_detail;

// Checks x against kernel and returns the output shape (N, OH, OW, F).
Shape conv_output(const Attrs& a, const Shape& x, const Shape& k, const char* op) {
  if (k.rank() != 4)
    throw ShapeError(std::string(op) + ": expected a kernel of rank 4 (kh, kw, in_channels, filters), got " + k.str());
  const Window2D w = window2d(x, k[0], k[1], a, op);
  if (k[2] != w.c)
    throw ShapeError(std::string(op) + ": the kernel " + k.str() + " expects " + std::to_string(k[2]) +
                     " input channels, the input " + x.str() + " has " + std::to_string(w.c));
  return Shape{w.n, w.oh, w.ow, k[3]};
}

}  // namespace

REGISTER_OP(
    .name = "conv2d",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("conv2d", in[0], in[1]);
      return one({conv_output(a, in[0].shape, in[1].shape, "conv2d"), in[0].dtype});
    },
    .grad = [](GradContext& c) {
      const auto [dx, dkernel] = conv2d_gradients(c.g, c.input(0), c.input(1), c.dy(), c.attrs());
      c.set(0, dx);
      c.set(1, dkernel);
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}, {1}}}));

std::pair<Value, Value> conv2d_gradients(Graph& g, Value x, Value kernel, Value dy, const Attrs& attrs) {
  const Pair s = pair_attr(attrs, "strides"), d = pair_attr(attrs, "dilation");
  const std::string& p = attrs.s("padding");
  return {conv2d_backprop_input(g, dy, kernel, g.type(x).shape, s, d, p), conv2d_backprop_filter(g, x, dy, g.type(kernel).shape, s, d, p)};
}

// Inputs (dy, kernel); attr "input_shape". dx = Bᵢ(dy, K) with ⟨conv(x, K), dy⟩ = ⟨x, Bᵢ(dy, K)⟩, so
// for L = ⟨Bᵢ(dy, K), G⟩ = ⟨conv(G, K), dy⟩: dL/ddy = conv(G, K) and dL/dK = B_f(G, dy).
REGISTER_OP(
    .name = "conv2d_backprop_input",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("conv2d_backprop_input", in[0], in[1]);
      const Shape x = shape_attr(a, "input_shape");
      check_dy("conv2d_backprop_input", in[0].shape, conv_output(a, x, in[1].shape, "conv2d_backprop_input"));
      return one({x, in[0].dtype});
    },
    .grad = [](GradContext& c) {
      const Pair s = pair_attr(c.attrs(), "strides"), d = pair_attr(c.attrs(), "dilation");
      const std::string& p = c.attrs().s("padding");
      c.set(0, conv2d(c.g, c.dy(), c.input(1), s, d, p));
      c.set(1, conv2d_backprop_filter(c.g, c.dy(), c.input(0), c.input_type(1).shape, s, d, p));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}, {1}}}), .localize = local_batch_extent("input_shape"));

// Inputs (x, dy); attr "kernel_shape". For L = ⟨B_f(x, dy), G⟩ = ⟨conv(x, G), dy⟩:
// dL/dx = Bᵢ(dy, G) and dL/ddy = conv(x, G).
REGISTER_OP(
    .name = "conv2d_backprop_filter",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_float_pair("conv2d_backprop_filter", in[0], in[1]);
      const Shape k = shape_attr(a, "kernel_shape");
      check_dy("conv2d_backprop_filter", in[1].shape, conv_output(a, in[0].shape, k, "conv2d_backprop_filter"));
      // output_dtype float32 on 16-bit inputs: the float32 sums kept, not rounded (a weight's gradient).
      return one({k, output_dtype(a, in[0].dtype, "conv2d_backprop_filter")});
    },
    .grad = [](GradContext& c) {
      const Pair s = pair_attr(c.attrs(), "strides"), d = pair_attr(c.attrs(), "dilation");
      const std::string& p = c.attrs().s("padding");
      c.set(0, conv2d_backprop_input(c.g, c.input(1), c.dy(), c.input_type(0).shape, s, d, p));
      c.set(1, conv2d(c.g, c.input(0), c.dy(), s, d, p));
    }, .layout = rows({.batch_inputs = {0, 1}, .partial_outputs = {0}}));

Value conv2d(Graph& g, Value x, Value kernel, Pair strides, Pair dilation, const std::string& padding) {
  return g.add("conv2d", {x, kernel}, conv_attrs(strides, dilation, padding));
}

Value conv2d_backprop_input(Graph& g, Value dy, Value kernel, const Shape& input_shape, Pair strides, Pair dilation,
                            const std::string& padding) {
  Attrs a = conv_attrs(strides, dilation, padding);
  a.set("input_shape", input_shape.dims());
  return g.add("conv2d_backprop_input", {dy, kernel}, std::move(a));
}

Value conv2d_backprop_filter(Graph& g, Value x, Value dy, const Shape& kernel_shape, Pair strides, Pair dilation,
                             const std::string& padding) {
  Attrs a = conv_attrs(strides, dilation, padding);
  a.set("kernel_shape", kernel_shape.dims());
  return g.add("conv2d_backprop_filter", {x, dy}, std::move(a));
}

}  // namespace tandem::ops
