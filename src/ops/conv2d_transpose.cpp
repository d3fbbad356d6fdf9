// conv2d_transpose: Keras 3's Conv2DTranspose as graph, from conv2d_backprop_input.
//
// The transposed convolution scatters x[i]·K[t] to output row i·s + t·d − P, for a P that Keras
// fixes through the explicit padding it gives JAX (keras/src/backend/common/backend_utils.py,
// _convert_conv_transpose_padding_args_from_keras_to_jax): lo = P' and P = k' − 1 − lo. The adjoint
// of conv2d in x scatters the same way with P = conv2d's top padding for the output's size, so
// wherever conv2d's "valid" or "same" geometry on the output has that P and gives back x's size,
// one conv2d_backprop_input is the whole op. Where none does ("same" with an even k' and
// output_padding 0), the "valid" result of size (H − 1)·s + k' (P = 0) is cropped by P at the top
// and cropped or zero-padded to the output's size at the bottom.
#include <algorithm>

#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

ConvTransposeGeometry conv_transpose_geometry(int64_t in, int64_t k, int64_t stride, int64_t dilation, const std::string& padding,
                                              std::optional<int64_t> output_padding) {
  const int64_t span = (k - 1) * dilation + 1;
  if (padding == "valid") {
    // No padding: the full result, then output_padding more rows (zeros) at the bottom.
    const int64_t extra = output_padding ? *output_padding : std::max(span, stride) - span;
    return {(in - 1) * stride + span + extra, 0};
  }
  if (padding != "same") throw ValueError("conv2d_transpose: padding must be \"valid\" or \"same\", got \"" + padding + "\"");
  // Keras's total padding for JAX, its left part at most k' − 1.
  const int64_t total = output_padding ? span + span % 2 - 2 + *output_padding : stride + span - 2;
  const int64_t lo = std::min(total / 2 + total % 2, span - 1);
  const int64_t out = output_padding ? (in - 1) * stride + span % 2 + *output_padding : in * stride;
  return {out, span - 1 - lo};
}

namespace {
// Whether conv2d's `padding` on an output of (oh, ow) has the transposed geometry along both axes.
bool conv2d_geometry_fits(const Shape& x, const Shape& out, const Shape& k, Pair s, Pair d, const std::string& padding,
                          int64_t crop_h, int64_t crop_w) {
  const Attrs a{{"strides", std::vector<int64_t>{s[0], s[1]}}, {"dilation", std::vector<int64_t>{d[0], d[1]}}, {"padding", padding}};
  if (padding == "valid" && ((k[0] - 1) * d[0] + 1 > out[1] || (k[1] - 1) * d[1] + 1 > out[2])) return false;
  const Window2D w = window2d(out, k[0], k[1], a, "conv2d_transpose");
  return w.oh == x[1] && w.ow == x[2] && w.pad_top == crop_h && w.pad_left == crop_w;
}
}  // namespace

Value conv2d_transpose(Graph& g, Value x, Value kernel, Pair strides, Pair dilation, const std::string& padding,
                       std::optional<Pair> output_padding) {
  const Shape& xs = g.type(x).shape;
  const Shape& ks = g.type(kernel).shape;
  if (xs.rank() != 4)
    throw ShapeError("conv2d_transpose: expected an input of rank 4 (batch, height, width, channels), got " + xs.str());
  if (ks.rank() != 4 || ks[3] != xs[3])
    throw ShapeError("conv2d_transpose: expected a kernel (kh, kw, filters, " + std::to_string(xs[3]) + ") for the input " + xs.str() +
                     ", got " + ks.str());
  auto op = [&](int i) { return output_padding ? std::optional<int64_t>((*output_padding)[static_cast<std::size_t>(i)]) : std::nullopt; };
  const ConvTransposeGeometry h = conv_transpose_geometry(xs[1], ks[0], strides[0], dilation[0], padding, op(0));
  const ConvTransposeGeometry w = conv_transpose_geometry(xs[2], ks[1], strides[1], dilation[1], padding, op(1));
  const Shape out{xs[0], h.out, w.out, ks[2]};
  for (const char* p : {"valid", "same"})
    if (conv2d_geometry_fits(xs, out, ks, strides, dilation, p, h.crop_top, w.crop_top))
      return conv2d_backprop_input(g, x, kernel, out, strides, dilation, p);
  const int64_t full_h = (xs[1] - 1) * strides[0] + (ks[0] - 1) * dilation[0] + 1;
  const int64_t full_w = (xs[2] - 1) * strides[1] + (ks[1] - 1) * dilation[1] + 1;
  Value y = conv2d_backprop_input(g, x, kernel, {xs[0], full_h, full_w, ks[2]}, strides, dilation, "valid");
  const int64_t below_h = full_h - h.crop_top - h.out, below_w = full_w - w.crop_top - w.out;
  const std::array<int64_t, 4> crop{h.crop_top, std::max<int64_t>(below_h, 0), w.crop_top, std::max<int64_t>(below_w, 0)};
  if (crop[0] + crop[1] + crop[2] + crop[3] > 0) y = crop2d(g, y, crop);
  if (below_h < 0 || below_w < 0) y = pad2d(g, y, {0, std::max<int64_t>(-below_h, 0), 0, std::max<int64_t>(-below_w, 0)});
  return y;
}

}  // namespace tandem::ops
