"""Generate reference values for Tandem's convolution and pooling layer tests.

What it makes
-------------
``tests/data/conv_refs.json``: one entry per case, each a Keras-style layer
(Conv2D, MaxPooling2D, AveragePooling2D) applied to a small fixed random
channels-last input x (N, H, W, C).  For each case the file holds the layer's
arguments, x, the weights (Conv2D: kernel (kh, kw, in, filters) and bias
(filters,), Keras's layout), the output y, and the gradients of
L = sum(y * W) for a fixed random W with respect to x and to every weight.
Tensors are stored flat in row-major (channels-last) order.

Inputs and weights are drawn as float32 values (so a float32 implementation
reads exactly the same numbers); everything is computed in float64.

How PyTorch is made to compute Keras's layers
---------------------------------------------
* Layout: x is permuted NHWC -> NCHW and the Keras kernel (kh, kw, in, out)
  to PyTorch's (out, in, kh, kw); results are permuted back.
* padding="same" follows TensorFlow/Keras: out = ceil(in / stride),
  pad_total = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0), with
  pad_total // 2 before and the rest after.  For stride > 1 that can be
  asymmetric, which PyTorch's own padding="same" does not offer, so the input
  is padded explicitly with F.pad and the PyTorch op runs with padding 0.
* Max pooling pads with -inf, so padded positions never win.
* Average pooling with "same" divides by the number of real (unpadded)
  elements of each window, as Keras does: the zero-padded window sums are
  divided by the window sums of a padded mask of ones.

How to run
----------
From the repository root, with a Python that has torch and numpy:

    /usr/bin/python3 tests/data/make_conv_refs.py
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
SEED = 20240612


def same_pads(size, k, stride, dilation):
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def pad_nchw(x, padding, k, strides, dilation, value):
    """Pads an NCHW tensor the way Keras's `padding` argument asks."""
    if padding == "valid":
        return x
    top, bottom = same_pads(x.shape[2], k[0], strides[0], dilation[0])
    left, right = same_pads(x.shape[3], k[1], strides[1], dilation[1])
    return F.pad(x, (left, right, top, bottom), value=value)


def draw(rng, shape, lo=-1.0, hi=1.0):
    return torch.tensor(rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64), requires_grad=True)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def nhwc_to_nchw(x):
    return x.permute(0, 3, 1, 2)


def nchw_to_nhwc(x):
    return x.permute(0, 2, 3, 1)


def activation(y, name):
    return {"": y, "relu": torch.relu(y), "tanh": torch.tanh(y)}[name]


def conv_case(rng, name, input_shape, filters, kernel_size, strides=(1, 1), padding="valid", dilation=(1, 1),
              act=""):
    x = draw(rng, input_shape)
    kernel = draw(rng, tuple(kernel_size) + (input_shape[3], filters), -0.5, 0.5)
    bias = draw(rng, (filters,), -0.5, 0.5)
    xp = pad_nchw(nhwc_to_nchw(x), padding, kernel_size, strides, dilation, 0.0)
    y = F.conv2d(xp, kernel.permute(3, 2, 0, 1).contiguous(), bias, stride=tuple(strides), dilation=tuple(dilation))
    y = activation(nchw_to_nhwc(y), act)
    w = torch.tensor(rng.uniform(-1, 1, size=tuple(y.shape)))
    (y * w).sum().backward()
    return {"name": name, "layer": "Conv2D", "filters": filters, "kernel_size": list(kernel_size),
            "strides": list(strides), "padding": padding, "dilation_rate": list(dilation), "activation": act,
            "input_shape": list(input_shape), "x": flat(x), "kernel": flat(kernel), "bias": flat(bias),
            "w": flat(w), "y_shape": list(y.shape), "y": flat(y), "dx": flat(x.grad), "dkernel": flat(kernel.grad),
            "dbias": flat(bias.grad)}


def pool_case(rng, name, layer, input_shape, pool, strides, padding):
    x = draw(rng, input_shape)
    xc = nhwc_to_nchw(x)
    if layer == "MaxPooling2D":
        y = F.max_pool2d(pad_nchw(xc, padding, pool, strides, (1, 1), -math.inf), tuple(pool), tuple(strides))
    else:
        sums = F.avg_pool2d(pad_nchw(xc, padding, pool, strides, (1, 1), 0.0), tuple(pool), tuple(strides),
                            divisor_override=1)
        ones = torch.ones_like(xc[:, :1])
        counts = F.avg_pool2d(pad_nchw(ones, padding, pool, strides, (1, 1), 0.0), tuple(pool), tuple(strides),
                              divisor_override=1)
        y = sums / counts
    y = nchw_to_nhwc(y)
    w = torch.tensor(rng.uniform(-1, 1, size=tuple(y.shape)))
    (y * w).sum().backward()
    return {"name": name, "layer": layer, "pool_size": list(pool), "strides": list(strides), "padding": padding,
            "input_shape": list(input_shape), "x": flat(x), "w": flat(w), "y_shape": list(y.shape), "y": flat(y),
            "dx": flat(x.grad)}


def main():
    rng = np.random.default_rng(SEED)
    cases = [
        # H 7 -> pads (1, 1); W 8 -> pads (0, 1): asymmetric, as TF pads.
        conv_case(rng, "conv stride 2 same", (2, 7, 8, 3), 4, (3, 3), strides=(2, 2), padding="same"),
        conv_case(rng, "conv stride 2 valid, 3x2 kernel", (2, 7, 8, 3), 5, (3, 2), strides=(2, 2)),
        conv_case(rng, "conv dilation 2 same", (2, 6, 7, 2), 3, (3, 3), padding="same", dilation=(2, 2)),
        conv_case(rng, "conv dilation 2 valid, tanh", (2, 8, 7, 2), 3, (2, 3), dilation=(2, 2), act="tanh"),
        conv_case(rng, "conv stride (1, 2) same, 1 filter", (1, 5, 6, 4), 1, (2, 4), strides=(1, 2), padding="same"),
        pool_case(rng, "max pool 2 valid", "MaxPooling2D", (2, 6, 7, 3), (2, 2), (2, 2), "valid"),
        pool_case(rng, "max pool 3 stride 2 same", "MaxPooling2D", (2, 7, 8, 3), (3, 3), (2, 2), "same"),
        pool_case(rng, "max pool (2, 3) stride 1 same", "MaxPooling2D", (1, 5, 6, 2), (2, 3), (1, 1), "same"),
        pool_case(rng, "avg pool 2 valid", "AveragePooling2D", (2, 6, 7, 3), (2, 2), (2, 2), "valid"),
        pool_case(rng, "avg pool 3 stride 2 same", "AveragePooling2D", (2, 7, 8, 3), (3, 3), (2, 2), "same"),
        pool_case(rng, "avg pool 2 stride 1 valid", "AveragePooling2D", (1, 5, 6, 2), (2, 2), (1, 1), "valid"),
        pool_case(rng, "avg pool (2, 3) stride (2, 1) same", "AveragePooling2D", (1, 5, 6, 2), (2, 3), (2, 1), "same"),
    ]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_refs.json")
    with open(out, "w") as f:
        json.dump({"seed": SEED, "loss": "sum(y * w)", "cases": cases}, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
