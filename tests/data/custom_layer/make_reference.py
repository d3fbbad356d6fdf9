"""Reference for tests/test_custom_layers.cpp: a functional model with two custom layers and a
custom Huber loss, trained in PyTorch (float64) on the same weights and data.

Model: x (8) -> Dense(16, relu) -> ResidualDense: h + tanh(h @ K + b) * gate
       -> ScaledHead: (h @ Kh + bh) * scale, shape (3).
Loss: Huber with delta 1, averaged over every element. SGD, learning rate 0.0625 (exact in float32, as Tandem keeps learning rates), momentum 0.9,
batch 16, 3 epochs of 2 batches in order (no shuffle).

Run: python3 tests/data/custom_layer/make_reference.py  (writes reference.json beside it)
"""
import json
import os

import numpy as np
import torch

rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, (32, 8))
y = rng.normal(0, 1.5, (32, 3))
init = {
    "dense/kernel": rng.uniform(-0.5, 0.5, (8, 16)),
    "dense/bias": rng.uniform(-0.1, 0.1, (16,)),
    "residual/kernel": rng.uniform(-0.3, 0.3, (16, 16)),
    "residual/bias": rng.uniform(-0.1, 0.1, (16,)),
    "residual/gate": rng.uniform(0.5, 1.5, (16,)),
    "head/scale": rng.uniform(0.5, 1.5, (3,)),
    "head/kernel": rng.uniform(-0.5, 0.5, (16, 3)),
    "head/bias": rng.uniform(-0.1, 0.1, (3,)),
}
w = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in init.items()}


def forward(xb):
    h = torch.relu(xb @ w["dense/kernel"] + w["dense/bias"])
    h = h + torch.tanh(h @ w["residual/kernel"] + w["residual/bias"]) * w["residual/gate"]
    return (h @ w["head/kernel"] + w["head/bias"]) * w["head/scale"]


opt = torch.optim.SGD(list(w.values()), lr=0.0625, momentum=0.9)
xt, yt = torch.tensor(x), torch.tensor(y)
epoch_losses = []
for epoch in range(3):
    losses = []
    for b in range(2):
        xb, yb = xt[16 * b:16 * b + 16], yt[16 * b:16 * b + 16]
        opt.zero_grad()
        loss = torch.nn.functional.huber_loss(forward(xb), yb, reduction="mean", delta=1.0)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    epoch_losses.append(sum(losses) / len(losses))

with torch.no_grad():
    pred = forward(xt)
out = {
    "x": x.tolist(),
    "y": y.tolist(),
    "initial": {k: v.reshape(-1).tolist() for k, v in init.items()},
    "final": {k: v.detach().reshape(-1).tolist() for k, v in w.items()},
    "epoch_losses": epoch_losses,
    "predictions": pred.tolist(),
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json"), "w") as f:
    json.dump(out, f)
print("epoch losses", epoch_losses)
