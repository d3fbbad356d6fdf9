"""Generate reference values for Tandem's activation tests (tests/test_activations.cpp).

What it makes
-------------
``tests/data/activation_refs.json``:

* ``x``: a fixed list of inputs (float32 values, so a float32 implementation reads the same
  numbers): a grid over [-8, 8], the kinks (0, ±3, 6, thresholds) and large magnitudes (±20).
* ``functions``: per activation, its value at every x, computed in float64. PyTorch
  (torch.nn.functional) gives silu, selu, elu, softplus, softsign, mish, relu6 and leaky_relu,
  whose formulas Keras 3 shares. Keras 3 itself (JAX backend, float64 enabled) gives the ones
  whose Keras formula PyTorch does not have: hard_sigmoid (Keras 3: relu6(x + 3) / 6; PyTorch's
  hardsigmoid is the same function, but Keras's definition is the one Tandem follows),
  hard_silu, and relu with negative_slope, max_value and threshold (keras.activations.relu).
* ``prelu``: x of shape (2, 3, 4), alpha of shape (1, 4) (Keras's PReLU(shared_axes=[1])), and
  PyTorch's F.prelu of it (channels moved to axis 1 and back).

How to run
----------
From the repository root, with a Python that has torch and numpy, naming a Python that has
Keras 3 and JAX for the Keras-only values:

    python3 tests/data/make_activation_refs.py --keras-python <python with keras and jax>

(it runs itself under that Python with ``--keras-part`` and merges the result).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "activation_refs.json"


def inputs():
    grid = np.linspace(-8, 8, 65)
    special = [0.0, -3.0, 3.0, 6.0, -1.0, 1.0, 0.5, 1.5, 4.0, 2.9, -2.9, 5.9, 6.1, 1e-3, -1e-3, 20.0, -20.0, 0.3, -0.3]
    return [float(v) for v in np.asarray(np.concatenate([grid, special]), dtype=np.float32)]


# keras.activations.relu's parameter sets: (negative_slope, max_value, threshold).
RELU_CASES = [(0.1, None, 0.0), (0.0, 6.0, 0.0), (0.2, 4.0, 1.0), (0.0, None, 0.5), (0.3, 6.0, 0.0), (0.0, 2.5, 1.5)]


def relu_key(ns, mv, th):
    return f"relu(negative_slope={ns}, max_value={mv}, threshold={th})"


def keras_part(xs):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import jax
    jax.config.update("jax_enable_x64", True)
    import keras
    x = np.asarray(xs, dtype=np.float64)
    out = {}
    for name in ("hard_sigmoid", "hard_silu"):
        out[name] = np.asarray(getattr(keras.activations, name)(x), dtype=np.float64).tolist()
    for ns, mv, th in RELU_CASES:
        y = keras.activations.relu(x, negative_slope=ns, max_value=mv, threshold=th)
        out[relu_key(ns, mv, th)] = np.asarray(y, dtype=np.float64).tolist()
    return {"keras_version": keras.__version__, "functions": out}


def torch_part(xs):
    import torch
    import torch.nn.functional as F
    x = torch.tensor(xs, dtype=torch.float64)
    f = {
        "silu": F.silu(x),
        "selu": F.selu(x),
        "elu": F.elu(x, alpha=1.0),
        "elu(alpha=0.5)": F.elu(x, alpha=0.5),
        "softplus": F.softplus(x),
        "softsign": F.softsign(x),
        "mish": F.mish(x),
        "relu6": F.relu6(x),
        "leaky_relu": F.leaky_relu(x, negative_slope=0.2),
        "leaky_relu(negative_slope=0.3)": F.leaky_relu(x, negative_slope=0.3),
    }
    rng = np.random.default_rng(20261207)
    px = np.asarray(rng.uniform(-3, 3, size=(2, 3, 4)), dtype=np.float32)
    alpha = np.asarray(rng.uniform(-0.5, 1.5, size=(1, 4)), dtype=np.float32)
    t = torch.tensor(px, dtype=torch.float64).permute(0, 2, 1)  # channels (the unshared axis) at 1
    py = F.prelu(t, torch.tensor(alpha.reshape(-1), dtype=torch.float64)).permute(0, 2, 1)
    prelu = {"x": {"shape": list(px.shape), "values": px.reshape(-1).tolist()},
             "alpha": {"shape": list(alpha.shape), "values": alpha.reshape(-1).tolist()},
             "y": py.reshape(-1).tolist()}
    return {"torch_version": torch.__version__, "functions": {k: v.tolist() for k, v in f.items()}, "prelu": prelu}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--keras-python", help="a Python with Keras 3 and JAX")
    p.add_argument("--keras-part", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    xs = inputs()
    if a.keras_part:
        json.dump(keras_part(xs), sys.stdout)
        return
    if not a.keras_python:
        p.error("--keras-python is required")
    t = torch_part(xs)
    k = json.loads(subprocess.run([a.keras_python, __file__, "--keras-part"], check=True, capture_output=True, text=True).stdout)
    refs = {"torch_version": t["torch_version"], "keras_version": k["keras_version"], "x": xs,
            "functions": {**t["functions"], **k["functions"]}, "prelu": t["prelu"]}
    OUT.write_text(json.dumps(refs) + "\n")
    print(f"{OUT.name}: {len(refs['functions'])} functions at {len(xs)} points, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
