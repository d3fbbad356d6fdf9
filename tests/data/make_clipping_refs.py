#!/usr/bin/env python3
"""Reference values for gradient clipping (tests/test_optimizers.cpp), made with PyTorch.

``tests/data/clipping_refs.json``: a small MLP

    logits = tanh(x @ kernel1 + bias1) @ kernel2 + bias2
    kernel1 [6,4], bias1 [4], kernel2 [4,3], bias2 [3]  (Keras (in, out) layout)

on fixed data (x [8,6], integer labels y [8]) with mean sparse softmax cross-entropy. For each case
the file holds the four weight tensors after one SGD step with learning rate 1 and no momentum,
the gradients clipped first:

  none             the plain gradients
  clipnorm         each gradient by torch.nn.utils.clip_grad_norm_ on that tensor alone
                   (Keras's clipnorm is per variable)
  global_clipnorm  all gradients by one torch.nn.utils.clip_grad_norm_ call
  clipvalue        torch.nn.utils.clip_grad_value_

The limits are chosen so that every clip changes the gradients. PyTorch's clip_grad_norm_ divides
by (norm + 1e-6), Keras's by the norm: the difference is below 1e-6 relative. Float32, row-major.

Run:  python3 tests/data/make_clipping_refs.py   (needs python3-torch)
"""
import json
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent / "clipping_refs.json"
CASES = {"none": None, "clipnorm": 0.05, "global_clipnorm": 0.08, "clipvalue": 0.005}


def main():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(8, 6, generator=g)
    y = torch.randint(0, 3, (8,), generator=g)
    start = [torch.randn(6, 4, generator=g) * 0.5, torch.randn(4, generator=g) * 0.1,
             torch.randn(4, 3, generator=g) * 0.5, torch.randn(3, generator=g) * 0.1]
    out = {"x": x.flatten().tolist(), "y": y.tolist(), "start": [w.flatten().tolist() for w in start],
           "shapes": [list(w.shape) for w in start], "limits": {k: v for k, v in CASES.items() if v}, "cases": {}}
    for case, limit in CASES.items():
        w = [t.clone().requires_grad_(True) for t in start]
        logits = torch.tanh(x @ w[0] + w[1]) @ w[2] + w[3]
        torch.nn.functional.cross_entropy(logits, y).backward()
        before = [t.grad.clone() for t in w]
        if case == "clipnorm":
            for t in w:
                torch.nn.utils.clip_grad_norm_([t], limit)
        elif case == "global_clipnorm":
            torch.nn.utils.clip_grad_norm_(w, limit)
        elif case == "clipvalue":
            torch.nn.utils.clip_grad_value_(w, limit)
        if limit:
            assert any(not torch.equal(a, t.grad) for a, t in zip(before, w)), f"{case}: the limit does not clip"
        with torch.no_grad():
            out["cases"][case] = [(t - t.grad).flatten().tolist() for t in w]
    OUT.write_text(json.dumps(out) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
