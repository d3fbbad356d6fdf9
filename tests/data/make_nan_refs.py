"""Generate reference values for Tandem's NaN-propagation tests (tests/test_nan.cpp).

What it makes
-------------
``tests/data/nan_refs.json``: one entry per case.  Each case applies one op, as PyTorch computes
it, to small hand-written inputs that hold NaN (and for some ops +-inf) at chosen places, and stores
the inputs, a weighting W of the output (the upstream gradient; some cases put NaN in it too), the
output y and the gradients of L = sum(y * W) with respect to every differentiated input.
Everything is float64, stored flat in row-major order as {"shape": [...], "data": [...]}, with the
non-finite numbers written as the strings "nan", "inf" and "-inf" (JSON has no literal for them).
Integer inputs (labels) are stored as numbers.

Tandem's ops are channels-last and follow Keras; where PyTorch's layout differs the script
permutes (NHWC <-> NCHW for pooling and convolution, (kh, kw, in, out) <-> (out, in, kh, kw) for
kernels) and leaves the numbers alone.  Cases, with what PyTorch decides:

* ``relu``: relu(NaN) = NaN; its gradient is threshold_backward(W, y, 0): W where y > 0 or y is
  NaN, else 0 -- also where W is NaN (W holds NaN at a negative and at a positive input).
* ``sigmoid``, ``tanh``, ``gelu``, ``gelu_tanh``: NaN in, NaN out, gradient NaN at the NaN.
* ``softmax``, ``log_softmax``: over the last axis; one NaN makes its whole row NaN, forward and
  backward, and leaves the other rows alone.
* ``max_pool2d``: 2x2 windows, stride 2, valid: a NaN wins its window; with two NaNs in a window
  the gradient goes to the later one (PyTorch's `val > max || isnan(val)` scan); +inf with NaN
  gives NaN.  ``max_pool2d_overlap``: 2x2 windows, stride 1, one NaN in the middle of a 3x3
  image: every window is NaN and the middle pixel gets every window's gradient.
  ``avg_pool2d``: the NaN reaches only its own window.
* ``reduce_sum_rows``, ``reduce_mean_cols``: the NaN's row (column) sum is NaN.
* ``argmax``: torch.argmax along the last axis: the index of the first NaN, if any.
* ``cross_entropy_sparse_logits``, ``cross_entropy_dense_logits``: F.cross_entropy per row.
  ``cross_entropy_probabilities``: -sum t log(p / sum p) (Keras's normalisation; inputs are far
  from the clip range, so its clipping changes nothing).
* ``binary_cross_entropy_logits``: F.binary_cross_entropy_with_logits, mean over the last axis.
  ``binary_cross_entropy_probabilities``: -(t log p + (1 - t) log(1 - p)), mean over the last axis,
  written out because F.binary_cross_entropy refuses a NaN input (far from Keras's clip range the
  two are the same function).
* ``squared_error``: F.mse_loss, mean over the last axis, with a NaN in the prediction and one in
  the target.  ``absolute_error``: F.l1_loss, mean over the last axis; PyTorch's gradient at a NaN
  prediction is 0 (sign(NaN) = 0 there).
* ``dense``: F.linear(x, kernel.T, bias) with one NaN in x: its row of y is NaN, x's gradient is
  finite, and the kernel gradient is NaN in the NaN's input row.
* ``conv2d``: valid 3x3 convolution of a 5x5 image with 2 channels and one NaN pixel in channel 0.
* ``batch_norm_train``: F.batch_norm with batch statistics (epsilon 1e-3), channels last, one NaN:
  its channel is NaN; beta's gradient (sum of W) stays finite.
* ``layer_norm``: F.layer_norm over the last axis (epsilon 1e-3), one NaN: its row is NaN, every
  gamma gradient is NaN, beta's is finite.

How to run
----------
From the repository root, with a Python that has torch (Debian: apt-get install python3-torch):

    /usr/bin/python3 tests/data/make_nan_refs.py
"""

import json
import math
import os

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
NAN = float("nan")
INF = float("inf")


def number(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor_json(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "data": [number(float(v)) for v in t.reshape(-1).tolist()]}


def labels_json(t):
    return {"shape": list(t.shape), "data": t.reshape(-1).tolist()}


def case(fn, inputs, w, fixed=None):
    """Runs fn(*inputs, *fixed) and the backward of sum(y * w); inputs are differentiated."""
    leaves = [t.clone().requires_grad_() for t in inputs]
    fixed = fixed or []
    y = fn(*leaves, *fixed)
    (y * w).sum().backward()
    return {
        "inputs": [tensor_json(t) for t in inputs],
        "fixed": [labels_json(t) if not t.is_floating_point() else tensor_json(t) for t in fixed],
        "w": tensor_json(w),
        "y": tensor_json(y),
        "grads": [tensor_json(t.grad) for t in leaves],
    }


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def nhwc(fn):
    """Applies an NCHW PyTorch op to an NHWC tensor."""
    return lambda x, *rest: fn(x.permute(0, 3, 1, 2), *rest).permute(0, 2, 3, 1)


def main():
    refs = {}
    gen = torch.Generator().manual_seed(20241002)

    def uniform(shape, lo=-1.0, hi=1.0):
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    x_act = t([[NAN, -1.5, 0.5, 2.0], [-INF, INF, -0.25, 0.0], [0.3, -0.7, NAN, -0.0]])
    w_act = t([[0.5, NAN, -1.0, 2.0], [NAN, NAN, 1.5, -0.5], [0.25, -2.0, 1.0, 3.0]])
    refs["relu"] = case(F.relu, [x_act], w_act)
    x_smooth = t([[NAN, -1.5, 0.5, 2.0], [0.1, 1.2, -0.25, 0.7], [0.3, -0.7, NAN, -0.4]])
    w_smooth = t([[0.5, 1.0, -1.0, 2.0], [0.75, -1.25, 1.5, -0.5], [0.25, -2.0, 1.0, 3.0]])
    refs["sigmoid"] = case(torch.sigmoid, [x_smooth], w_smooth)
    refs["tanh"] = case(torch.tanh, [x_smooth], w_smooth)
    refs["gelu"] = case(F.gelu, [x_smooth], w_smooth)
    refs["gelu_tanh"] = case(lambda x: F.gelu(x, approximate="tanh"), [x_smooth], w_smooth)
    x_rows = t([[0.2, -1.0, 0.7, 1.5], [0.4, NAN, -0.3, 0.9], [-2.0, 0.1, 0.6, -0.8]])
    refs["softmax"] = case(lambda x: F.softmax(x, dim=-1), [x_rows], w_smooth)
    refs["log_softmax"] = case(lambda x: F.log_softmax(x, dim=-1), [x_rows], w_smooth)

    # (1, 4, 4, 2) NHWC. Channel 0: window (0,0) has one NaN; window (0,1) NaNs at (0,2) and
    # (1,3); window (1,0) +inf and a NaN; window (1,1) finite. Channel 1 is finite.
    ch0 = t([[NAN, 1.0, NAN, 2.0], [3.0, -1.0, 0.5, NAN], [INF, 0.2, 4.0, -3.0], [NAN, 0.1, 5.0, 1.5]])
    ch1 = uniform((4, 4))
    x_pool = torch.stack([ch0, ch1], dim=-1).unsqueeze(0)
    w_pool = uniform((1, 2, 2, 2))
    refs["max_pool2d"] = case(nhwc(lambda x: F.max_pool2d(x, 2, 2)), [x_pool], w_pool)
    refs["avg_pool2d"] = case(nhwc(lambda x: F.avg_pool2d(x, 2, 2)), [x_pool], w_pool)
    x_overlap = t([[0.5, 1.0, -2.0], [3.0, NAN, 0.25], [-1.0, 2.0, 0.75]]).reshape(1, 3, 3, 1)
    refs["max_pool2d_overlap"] = case(nhwc(lambda x: F.max_pool2d(x, 2, 1)), [x_overlap], uniform((1, 2, 2, 1)))

    x_red = t([[1.0, 2.0, 3.0, 4.0], [5.0, NAN, 7.0, 8.0], [-1.0, -2.0, -3.0, -4.0]])
    refs["reduce_sum_rows"] = case(lambda x: x.sum(dim=1), [x_red], uniform((3,)))
    refs["reduce_mean_cols"] = case(lambda x: x.mean(dim=0), [x_red], uniform((4,)))
    x_argmax = t([[1.0, NAN, 3.0, NAN], [INF, 2.0, NAN, 1.0], [0.5, 2.0, 2.0, -1.0], [NAN, NAN, 0.0, 0.0],
                  [-INF, -INF, -INF, -INF]])
    refs["argmax"] = {"inputs": [tensor_json(x_argmax)], "y": labels_json(torch.argmax(x_argmax, dim=-1))}

    logits = t([[0.2, -1.0, 0.7, 1.5], [0.4, NAN, -0.3, 0.9], [-2.0, 0.1, 0.6, -0.8]])
    labels = torch.tensor([2, 0, 3], dtype=torch.int64)
    w_rows = t([0.5, -1.5, 2.0])
    refs["cross_entropy_sparse_logits"] = case(lambda z, y: F.cross_entropy(z, y, reduction="none"), [logits], w_rows, [labels])
    dense = t([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]])
    refs["cross_entropy_dense_logits"] = case(lambda z, y: F.cross_entropy(z, y, reduction="none"), [logits], w_rows, [dense])
    probs = t([[0.2, 0.3, 0.1, 0.4], [0.5, NAN, 0.2, 0.3], [0.6, 0.1, 0.2, 0.3]])
    refs["cross_entropy_probabilities"] = case(lambda p, y: -(y * torch.log(p / p.sum(-1, keepdim=True))).sum(-1),
                                               [probs], w_rows, [dense])
    binary_t = t([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    refs["binary_cross_entropy_logits"] = case(
        lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="none").mean(-1), [logits], w_rows, [binary_t])
    refs["binary_cross_entropy_probabilities"] = case(
        lambda p, y: (-(y * torch.log(p) + (1 - y) * torch.log(1 - p))).mean(-1), [probs], w_rows, [binary_t])
    pred = t([[0.2, -1.0, 0.7], [0.4, NAN, -0.3], [-2.0, 0.1, 0.6], [1.0, 2.0, 3.0]])
    target = t([[0.0, 1.0, 0.5], [1.0, 1.0, -1.0], [-1.5, 0.0, 0.5], [1.5, NAN, 2.0]])
    w_reg = t([0.5, -1.5, 2.0, 1.0])
    refs["squared_error"] = case(lambda p, y: F.mse_loss(p, y, reduction="none").mean(-1), [pred], w_reg, [target])
    refs["absolute_error"] = case(lambda p, y: F.l1_loss(p, y, reduction="none").mean(-1), [pred], w_reg, [target])

    x_dense = uniform((3, 4))
    x_dense[1, 2] = NAN
    kernel = uniform((4, 5))
    bias = uniform((5,))
    refs["dense"] = case(lambda x, k, b: F.linear(x, k.T, b), [x_dense, kernel, bias], uniform((3, 5)))

    x_conv = uniform((1, 5, 5, 2))
    x_conv[0, 1, 1, 0] = NAN
    conv_kernel = uniform((3, 3, 2, 3))  # Keras layout (kh, kw, in, out)
    refs["conv2d"] = case(lambda x, k: F.conv2d(x.permute(0, 3, 1, 2), k.permute(3, 2, 0, 1)).permute(0, 2, 3, 1),
                          [x_conv, conv_kernel], uniform((1, 3, 3, 3)))

    x_bn = uniform((4, 3))
    x_bn[2, 1] = NAN
    gamma, beta = uniform((3,), 0.5, 1.5), uniform((3,))
    refs["batch_norm_train"] = case(lambda x, g, b: F.batch_norm(x, None, None, g, b, training=True, eps=1e-3),
                                    [x_bn, gamma, beta], uniform((4, 3)))
    x_ln = uniform((3, 4))
    x_ln[1, 2] = NAN
    ln_gamma, ln_beta = uniform((4,), 0.5, 1.5), uniform((4,))
    refs["layer_norm"] = case(lambda x, g, b: F.layer_norm(x, (4,), g, b, eps=1e-3), [x_ln, ln_gamma, ln_beta],
                              uniform((3, 4)))

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nan_refs.json")
    with open(path, "w") as f:
        json.dump(refs, f, allow_nan=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
