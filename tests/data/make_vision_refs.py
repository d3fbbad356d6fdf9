"""Generate reference values for Tandem's vision layer tests (tests/test_vision_layers.cpp).

What it makes
-------------
``tests/data/vision_refs.json``: one entry per case, a Keras-style layer (Conv2DTranspose,
DepthwiseConv2D, SeparableConv2D, GroupNormalization) applied to a small fixed random
channels-last input x (N, H, W, C).  Each case holds the layer's arguments, x, the weights in
Keras's layouts and order, the output y, and the gradients of L = sum(y * W) for a fixed random W
with respect to x and to every weight.  Tensors are flat, row-major (channels last).  Inputs and
weights are float32 values; everything is computed in float64.

How PyTorch is made to compute Keras's layers
---------------------------------------------
* Conv2DTranspose: Keras 3's output size and padding are its own
  (keras/src/backend/common/backend_utils.py): with k' = (k - 1) * dilation + 1,
  "valid": out = (in - 1) * s + k' + output_padding (output_padding None: max(k', s) - k'), and
  the scatter starts at row 0; "same": out = in * s (output_padding None) or
  (in - 1) * s + k' % 2 + output_padding, and the scatter starts P rows above the output, where
  P = k' - 1 - lo, lo = min(ceil(pad / 2), k' - 1), pad = s + k' - 2 (None) or
  k' + k' % 2 - 2 + output_padding.  PyTorch's conv_transpose2d with padding=P scatters the same
  way (output row i*s + t*d - P); its result is cut, or extended with zero rows (plus bias), to
  `out`.  Kernel (kh, kw, filters, in) -> PyTorch's (in, filters, kh, kw).
* DepthwiseConv2D: conv2d with groups = C, the Keras kernel (kh, kw, C, M) as PyTorch's
  (C * M, 1, kh, kw) (output channel c * M + m in both); "same" pads as TensorFlow, explicitly.
* SeparableConv2D: that depthwise convolution, then a 1x1 conv2d with the pointwise kernel.
* GroupNormalization: F.group_norm on NCHW (channels last axis of Keras's NHWC), eps as Keras's.

How to run
----------
From the repository root, with a Python that has torch and numpy:

    /usr/bin/python3 tests/data/make_vision_refs.py
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
SEED = 20261207


def draw(rng, shape, lo=-1.0, hi=1.0):
    return torch.tensor(rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64), requires_grad=True)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def nchw(x):
    return x.permute(0, 3, 1, 2)


def nhwc(x):
    return x.permute(0, 2, 3, 1)


def activation(y, name):
    return {"": y, "relu": torch.relu(y), "tanh": torch.tanh(y)}[name]


def same_pads(size, k, stride, dilation):
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def pad_same(x, padding, k, strides, dilation):
    if padding == "valid":
        return x
    top, bottom = same_pads(x.shape[2], k[0], strides[0], dilation[0])
    left, right = same_pads(x.shape[3], k[1], strides[1], dilation[1])
    return F.pad(x, (left, right, top, bottom))


def transpose_geometry(size, k, stride, dilation, padding, output_padding):
    """Keras 3's output size and the rows above the output where the scatter starts (P)."""
    span = (k - 1) * dilation + 1
    if padding == "valid":
        extra = max(span, stride) - span if output_padding is None else output_padding
        return (size - 1) * stride + span + extra, 0
    pad = stride + span - 2 if output_padding is None else span + span % 2 - 2 + output_padding
    lo = min(pad // 2 + pad % 2, span - 1)
    out = size * stride if output_padding is None else (size - 1) * stride + span % 2 + output_padding
    return out, span - 1 - lo


def fit_rows(y, axis, size):
    """Cuts y (NCHW) along `axis` to `size`, or appends zero rows."""
    have = y.shape[axis]
    if have >= size:
        return y.narrow(axis, 0, size)
    shape = list(y.shape)
    shape[axis] = size - have
    return torch.cat([y, torch.zeros(shape)], dim=axis)


def gradients(y, tensors):
    w = torch.tensor(np.random.default_rng(len(flat(y))).uniform(-1, 1, size=tuple(y.shape)))
    (y * w).sum().backward()
    return w, [flat(t.grad) for t in tensors]


def conv_transpose_case(rng, name, input_shape, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                        dilation=(1, 1), act=""):
    x = draw(rng, input_shape)
    kernel = draw(rng, tuple(kernel_size) + (filters, input_shape[3]), -0.5, 0.5)
    bias = draw(rng, (filters,), -0.5, 0.5)
    geo = [transpose_geometry(input_shape[1 + i], kernel_size[i], strides[i], dilation[i], padding,
                              None if output_padding is None else output_padding[i]) for i in range(2)]
    y = F.conv_transpose2d(nchw(x), kernel.permute(3, 2, 0, 1), None, stride=tuple(strides), padding=(geo[0][1], geo[1][1]),
                           dilation=tuple(dilation))
    y = fit_rows(fit_rows(y, 2, geo[0][0]), 3, geo[1][0]) + bias.reshape(1, -1, 1, 1)
    y = activation(nhwc(y), act)
    w, (dx, dk, db) = gradients(y, [x, kernel, bias])
    return {"name": name, "layer": "Conv2DTranspose", "filters": filters, "kernel_size": list(kernel_size),
            "strides": list(strides), "padding": padding, "output_padding": output_padding, "dilation_rate": list(dilation),
            "activation": act, "input_shape": list(input_shape), "x": flat(x), "weights": [flat(kernel), flat(bias)],
            "w": flat(w), "y_shape": list(y.shape), "y": flat(y), "dx": dx, "dweights": [dk, db]}


def depthwise(x_nchw, kernel, strides, padding, dilation):
    kh, kw, c, m = kernel.shape
    xp = pad_same(x_nchw, padding, (kh, kw), strides, dilation)
    weight = kernel.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)
    return F.conv2d(xp, weight, None, stride=tuple(strides), dilation=tuple(dilation), groups=c)


def depthwise_case(rng, name, input_shape, kernel_size, multiplier=1, strides=(1, 1), padding="valid", dilation=(1, 1), act=""):
    c = input_shape[3]
    x = draw(rng, input_shape)
    kernel = draw(rng, tuple(kernel_size) + (c, multiplier), -0.5, 0.5)
    bias = draw(rng, (c * multiplier,), -0.5, 0.5)
    y = depthwise(nchw(x), kernel, strides, padding, dilation) + bias.reshape(1, -1, 1, 1)
    y = activation(nhwc(y), act)
    w, (dx, dk, db) = gradients(y, [x, kernel, bias])
    return {"name": name, "layer": "DepthwiseConv2D", "kernel_size": list(kernel_size), "depth_multiplier": multiplier,
            "strides": list(strides), "padding": padding, "dilation_rate": list(dilation), "activation": act,
            "input_shape": list(input_shape), "x": flat(x), "weights": [flat(kernel), flat(bias)], "w": flat(w),
            "y_shape": list(y.shape), "y": flat(y), "dx": dx, "dweights": [dk, db]}


def separable_case(rng, name, input_shape, filters, kernel_size, multiplier=1, strides=(1, 1), padding="valid",
                   dilation=(1, 1), act=""):
    c = input_shape[3]
    x = draw(rng, input_shape)
    dk = draw(rng, tuple(kernel_size) + (c, multiplier), -0.5, 0.5)
    pk = draw(rng, (1, 1, c * multiplier, filters), -0.5, 0.5)
    bias = draw(rng, (filters,), -0.5, 0.5)
    d = depthwise(nchw(x), dk, strides, padding, dilation)
    y = F.conv2d(d, pk.permute(3, 2, 0, 1), bias)
    y = activation(nhwc(y), act)
    w, (dx, ddk, dpk, db) = gradients(y, [x, dk, pk, bias])
    return {"name": name, "layer": "SeparableConv2D", "filters": filters, "kernel_size": list(kernel_size),
            "depth_multiplier": multiplier, "strides": list(strides), "padding": padding, "dilation_rate": list(dilation),
            "activation": act, "input_shape": list(input_shape), "x": flat(x),
            "weights": [flat(dk), flat(pk), flat(bias)], "w": flat(w), "y_shape": list(y.shape), "y": flat(y), "dx": dx,
            "dweights": [ddk, dpk, db]}


def group_norm_case(rng, name, input_shape, groups, epsilon=1e-3):
    c = input_shape[-1]
    x = draw(rng, input_shape, -2, 2)
    gamma = draw(rng, (c,), 0.5, 1.5)
    beta = draw(rng, (c,), -0.5, 0.5)
    xc = x.movedim(-1, 1)  # (N, C, ...)
    y = F.group_norm(xc, groups, gamma, beta, eps=epsilon).movedim(1, -1)
    w, (dx, dg, db) = gradients(y, [x, gamma, beta])
    return {"name": name, "layer": "GroupNormalization", "groups": groups, "epsilon": epsilon, "input_shape": list(input_shape),
            "x": flat(x), "weights": [flat(gamma), flat(beta)], "w": flat(w), "y_shape": list(y.shape), "y": flat(y),
            "dx": dx, "dweights": [dg, db]}


def main():
    rng = np.random.default_rng(SEED)
    cases = [
        conv_transpose_case(rng, "transpose 3x3 valid", (2, 4, 5, 3), 2, (3, 3)),
        conv_transpose_case(rng, "transpose stride 2 same", (2, 4, 3, 3), 4, (3, 3), strides=(2, 2), padding="same"),
        conv_transpose_case(rng, "transpose stride 2 same output_padding 1", (2, 4, 3, 2), 3, (3, 3), strides=(2, 2),
                            padding="same", output_padding=(1, 1)),
        conv_transpose_case(rng, "transpose 4x4 stride 2 same output_padding 0 (cropped)", (1, 3, 4, 2), 3, (4, 4),
                            strides=(2, 2), padding="same", output_padding=(0, 0)),
        conv_transpose_case(rng, "transpose stride (3, 2) valid output_padding (2, 1), relu", (2, 3, 3, 2), 2, (2, 3),
                            strides=(3, 2), output_padding=(2, 1), act="relu"),
        conv_transpose_case(rng, "transpose 2x2 stride 3 valid (default output padding)", (1, 3, 2, 2), 2, (2, 2),
                            strides=(3, 3)),
        conv_transpose_case(rng, "transpose dilation 2 same", (2, 4, 4, 2), 3, (3, 2), padding="same", dilation=(2, 2)),
        conv_transpose_case(rng, "transpose 4x4 stride 2 same, tanh", (1, 3, 3, 2), 2, (4, 4), strides=(2, 2), padding="same",
                            act="tanh"),
        depthwise_case(rng, "depthwise 3x3 valid", (2, 5, 6, 3), (3, 3)),
        depthwise_case(rng, "depthwise multiplier 2 stride 2 same", (2, 7, 6, 3), (3, 3), multiplier=2, strides=(2, 2),
                       padding="same"),
        depthwise_case(rng, "depthwise (2, 3) dilation 2 same, relu", (1, 6, 7, 2), (2, 3), multiplier=3, padding="same",
                       dilation=(2, 2), act="relu"),
        separable_case(rng, "separable 3x3 valid", (2, 5, 5, 3), 4, (3, 3)),
        separable_case(rng, "separable multiplier 2 stride 2 same, tanh", (2, 6, 7, 2), 3, (3, 3), multiplier=2,
                       strides=(2, 2), padding="same", act="tanh"),
        group_norm_case(rng, "group norm 2 groups", (2, 3, 4, 6), 2),
        group_norm_case(rng, "group norm 1 group eps 1e-5", (2, 3, 3, 4), 1, epsilon=1e-5),
        group_norm_case(rng, "group norm one per channel, sequences", (3, 5, 4), 4),
    ]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vision_refs.json")
    with open(out, "w") as f:
        json.dump({"seed": SEED, "loss": "sum(y * w)", "cases": cases}, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
