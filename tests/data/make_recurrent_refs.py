"""Generate PyTorch reference values for Tandem's recurrent op tests (tests/test_recurrent_ops.cpp).

How to run
----------
From the repository root:   /usr/bin/python3 tests/data/make_recurrent_refs.py
(made with torch 1.13 and numpy 1.24; it writes tests/data/recurrent_refs.json).

What it makes
-------------
Cases for the LSTM, the GRU (Keras's reset_after=True) and the simple RNN (tanh and relu), each
with every value in Keras's layout: the input x (batch, steps, input), the initial states h0 (and
c0), kernel (input, gates*units), recurrent_kernel (units, gates*units), bias (gates*units) and,
for the GRU, recurrent_bias (gates*units), plus fixed weights W1 (batch, steps, units),
W2 (batch, units) and W3 (batch, units).  Results: the sequence output y, the final states h
(and c), and the gradients of

    L = sum(y * W1) + sum(h * W2) [+ sum(c * W3)]

with respect to x, h0, c0, kernel, recurrent_kernel, bias and recurrent_bias.  All tensors are
flat and row-major.  Inputs are drawn in float32 and the math runs in float64.

Keras -> torch mapping
----------------------
* Keras computes x_t.kernel + bias + h.recurrent_kernel with the gate blocks side by side along
  the last axis; torch computes W_ih x + b_ih + W_hh h with the gate blocks stacked along the
  first axis, so weight_ih = kernel^T and weight_hh = recurrent_kernel^T, block by block.
* LSTM: torch's gate order i, f, g, o is Keras's i, f, c, o: the blocks map one to one.
  b_ih = bias, b_hh = 0 (Keras has one bias).
* GRU: torch's order is r, z, n, Keras's z, r, h: the first two blocks swap.  torch's GRU is
  Keras's reset_after=True (the reset gate multiplies W_hn h + b_hn), with b_ih = Keras's input
  bias (bias[0]) and b_hh = its recurrent bias (bias[1]).  reset_after=False has no torch
  equivalent; the C++ test covers it with finite differences and a direct loop.
* SimpleRNN: nn.RNN with nonlinearity tanh or relu; b_ih = bias, b_hh = 0.
Gradients are mapped back the same way (transposed, GRU blocks swapped back).  Masks,
go_backwards and recurrent dropout have no torch equivalent either (see the C++ test).
"""
import json
import os

import numpy as np
import torch

rng = np.random.default_rng(20261206)
BATCH, STEPS, INPUT, UNITS = 3, 5, 4, 3


def f32(shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


def flat(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def keras_to_torch_order(a, gates, swap):
    """Reorders gate blocks along the last axis (Keras z, r, h -> torch r, z, n for the GRU)."""
    if not swap:
        return a
    blocks = np.split(a, gates, axis=-1)
    blocks[0], blocks[1] = blocks[1], blocks[0]
    return np.concatenate(blocks, axis=-1)


def case(kind, nonlinearity="tanh"):
    gates = {"lstm": 4, "gru": 3, "simple_rnn": 1}[kind]
    swap = kind == "gru"  # the GRU's first two blocks are swapped between Keras and torch; the swap is its own inverse
    G = gates * UNITS
    x = f32((BATCH, STEPS, INPUT))
    h0 = f32((BATCH, UNITS), -0.5, 0.5)
    c0 = f32((BATCH, UNITS), -0.5, 0.5)
    kernel = f32((INPUT, G), -0.6, 0.6)
    recurrent_kernel = f32((UNITS, G), -0.6, 0.6)
    bias = f32((G,), -0.3, 0.3)
    recurrent_bias = f32((G,), -0.3, 0.3)
    w1 = f32((BATCH, STEPS, UNITS))
    w2 = f32((BATCH, UNITS))
    w3 = f32((BATCH, UNITS))

    if kind == "lstm":
        module = torch.nn.LSTM(INPUT, UNITS, batch_first=True)
    elif kind == "gru":
        module = torch.nn.GRU(INPUT, UNITS, batch_first=True)
    else:
        module = torch.nn.RNN(INPUT, UNITS, nonlinearity=nonlinearity, batch_first=True)
    module = module.double()
    with torch.no_grad():
        module.weight_ih_l0.copy_(torch.tensor(keras_to_torch_order(kernel, gates, swap).T))
        module.weight_hh_l0.copy_(torch.tensor(keras_to_torch_order(recurrent_kernel, gates, swap).T))
        module.bias_ih_l0.copy_(torch.tensor(keras_to_torch_order(bias, gates, swap)))
        hh_bias = recurrent_bias if kind == "gru" else np.zeros(G)
        module.bias_hh_l0.copy_(torch.tensor(keras_to_torch_order(hh_bias, gates, swap)))

    xt = torch.tensor(x, requires_grad=True)
    h0t = torch.tensor(h0[None], requires_grad=True)
    c0t = torch.tensor(c0[None], requires_grad=True)
    if kind == "lstm":
        y, (h, c) = module(xt, (h0t, c0t))
    else:
        y, h = module(xt, h0t)
        c = None
    loss = (y * torch.tensor(w1)).sum() + (h[0] * torch.tensor(w2)).sum()
    if c is not None:
        loss = loss + (c[0] * torch.tensor(w3)).sum()
    loss.backward()

    def back(grad):  # a torch weight's gradient in Keras's layout
        return keras_to_torch_order(grad.detach().numpy().T, gates, swap)

    out = {"kind": kind, "activation": nonlinearity, "batch": BATCH, "steps": STEPS, "input": INPUT, "units": UNITS,
           "x": flat(x), "h0": flat(h0), "kernel": flat(kernel), "recurrent_kernel": flat(recurrent_kernel), "bias": flat(bias),
           "w1": flat(w1), "w2": flat(w2),
           "y": flat(y.detach().numpy()), "h": flat(h[0].detach().numpy()),
           "dx": flat(xt.grad.numpy()), "dh0": flat(h0t.grad.numpy()[0]),
           "dkernel": flat(back(module.weight_ih_l0.grad)), "drecurrent_kernel": flat(back(module.weight_hh_l0.grad)),
           "dbias": flat(back(module.bias_ih_l0.grad))}
    if kind == "lstm":
        out.update({"c0": flat(c0), "w3": flat(w3), "c": flat(c[0].detach().numpy()), "dc0": flat(c0t.grad.numpy()[0])})
    if kind == "gru":
        out.update({"recurrent_bias": flat(recurrent_bias), "drecurrent_bias": flat(back(module.bias_hh_l0.grad))})
    return out


def main():
    torch.set_default_dtype(torch.float64)
    refs = [case("lstm"), case("gru"), case("simple_rnn", "tanh"), case("simple_rnn", "relu")]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recurrent_refs.json")
    with open(path, "w") as f:
        json.dump(refs, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
