"""Generate reference values for Tandem's normalisation layer tests.

What it makes
-------------
``tests/data/normalization_refs.json`` with cases for

* BatchNormalization in training mode (rank 2 (N, C) and rank 4 (N, H, W, C)),
* BatchNormalization in inference mode (rank 2 and rank 4),
* BatchNormalization without gamma and beta (center=False, scale=False),
* LayerNormalization over the last axis (rank 2 and rank 3).

Each case holds the input x, the weights in Keras order, the output y, and the
gradients of L = sum(y * w) (w a fixed random tensor, stored too) with respect
to x, gamma and beta.  BatchNormalization training cases also hold the moving
statistics after the step.  All tensors are flat, row-major, channels-last
(Keras layout).  Inputs are drawn in float32 and the math runs in float64.

PyTorch is channels-first, so rank-4 inputs are permuted NHWC -> NCHW before
torch.nn.functional.batch_norm and the output is permuted back.

Moving statistics
-----------------
Keras 3 updates  moving = moving * momentum + batch_stat * (1 - momentum)
with the *biased* batch variance (keras.ops.moments).  PyTorch's running_var
uses the *unbiased* variance and its `momentum` means 1 - keras_momentum, so
the expected moving statistics are computed here by hand from the batch
instead of being read from PyTorch's running buffers.

How to run
----------
From the repository root:   /usr/bin/python3 tests/data/make_normalization_refs.py
"""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

EPSILON = 1e-3
rng = np.random.default_rng(20240607)


def f32(shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


def flat(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def to_channels_first(t):
    return t.permute(0, 3, 1, 2) if t.dim() == 4 else t


def to_channels_last(t):
    return t.permute(0, 2, 3, 1) if t.dim() == 4 else t


def batch_norm_case(name, shape, training, momentum=0.99, affine=True):
    c = shape[-1]
    x = f32(shape, -1.0, 3.0)
    gamma = f32((c,), 0.5, 1.5)
    beta = f32((c,), -0.5, 0.5)
    moving_mean = f32((c,), -0.5, 0.5)
    moving_var = f32((c,), 0.5, 2.0)
    w = f32(shape, -1.0, 1.0)

    xt = torch.tensor(x, requires_grad=True)
    gt = torch.tensor(gamma, requires_grad=True) if affine else None
    bt = torch.tensor(beta, requires_grad=True) if affine else None
    rm = torch.tensor(moving_mean)
    rv = torch.tensor(moving_var)
    y = to_channels_last(F.batch_norm(to_channels_first(xt), rm, rv, gt, bt, training=training,
                                      momentum=1 - momentum, eps=EPSILON))
    (y * torch.tensor(w)).sum().backward()

    case = {"name": name, "shape": list(shape), "training": training, "momentum": momentum,
            "epsilon": EPSILON, "affine": affine, "x": flat(x), "w": flat(w), "y": flat(y.detach().numpy()),
            "dx": flat(xt.grad.numpy()), "moving_mean": flat(moving_mean), "moving_variance": flat(moving_var)}
    if affine:
        case.update({"gamma": flat(gamma), "beta": flat(beta),
                     "dgamma": flat(gt.grad.numpy()), "dbeta": flat(bt.grad.numpy())})
    if training:
        axes = tuple(range(len(shape) - 1))
        batch_mean = x.mean(axis=axes)
        batch_var = x.var(axis=axes)  # biased (ddof=0), as Keras uses for the moving variance
        case["moving_mean_after"] = flat(moving_mean * momentum + batch_mean * (1 - momentum))
        case["moving_variance_after"] = flat(moving_var * momentum + batch_var * (1 - momentum))
    else:
        case["moving_mean_after"] = case["moving_mean"]
        case["moving_variance_after"] = case["moving_variance"]
    return case


def layer_norm_case(name, shape):
    d = shape[-1]
    x = f32(shape, -1.0, 3.0)
    gamma = f32((d,), 0.5, 1.5)
    beta = f32((d,), -0.5, 0.5)
    w = f32(shape, -1.0, 1.0)
    xt = torch.tensor(x, requires_grad=True)
    gt = torch.tensor(gamma, requires_grad=True)
    bt = torch.tensor(beta, requires_grad=True)
    y = F.layer_norm(xt, (d,), gt, bt, eps=EPSILON)
    (y * torch.tensor(w)).sum().backward()
    return {"name": name, "shape": list(shape), "epsilon": EPSILON, "x": flat(x), "w": flat(w),
            "gamma": flat(gamma), "beta": flat(beta), "y": flat(y.detach().numpy()),
            "dx": flat(xt.grad.numpy()), "dgamma": flat(gt.grad.numpy()), "dbeta": flat(bt.grad.numpy())}


def main():
    torch.set_default_dtype(torch.float64)
    refs = {
        "batch_norm": [
            batch_norm_case("train rank 2", (6, 4), True, momentum=0.9),
            batch_norm_case("train rank 4", (2, 3, 3, 5), True),
            batch_norm_case("inference rank 2", (6, 4), False),
            batch_norm_case("inference rank 4", (2, 3, 3, 5), False),
            batch_norm_case("train without gamma and beta", (5, 3), True, momentum=0.8, affine=False),
        ],
        "layer_norm": [
            layer_norm_case("rank 2", (4, 6)),
            layer_norm_case("rank 3", (2, 3, 5)),
        ],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "normalization_refs.json")
    with open(path, "w") as f:
        json.dump(refs, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
