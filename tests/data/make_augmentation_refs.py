#!/usr/bin/env python3
"""Writes tests/data/augmentation_refs.json: Keras 3's keras.ops.image.affine_transform (JAX
backend, float64) on fixed images and transforms, for every interpolation and fill_mode, read by
tests/test_augmentation_layers.cpp.

  images      (3, 5, 6, 2) uniform in [-1, 1] (seeded)
  transforms  (3, 8): a rotation by 30 degrees about the centre with a zoom, a shear with a shift
              that sends most points outside the image (several periods of reflect and wrap), and
              a fractional shift; c0 = c1 = 0 (Keras's JAX backend applies no projective part)
  cases       per (interpolation, fill_mode, fill_value): the output (3, 5, 6, 2)

Run:  KERAS_BACKEND=jax JAX_ENABLE_X64=1 python3 tests/data/make_augmentation_refs.py
"""
import json
import math
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_ENABLE_X64", "1")
import keras  # noqa: E402
import numpy as np  # noqa: E402


def rotation(angle_deg, zoom, h, w):
    a = math.radians(angle_deg)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    a0, a1 = zoom * math.cos(a), -zoom * math.sin(a)
    b0, b1 = zoom * math.sin(a), zoom * math.cos(a)
    return [a0, a1, cx - cx * a0 - cy * a1, b0, b1, cy - cx * b0 - cy * b1, 0.0, 0.0]


def main():
    rng = np.random.default_rng(7)
    n, h, w, c = 3, 5, 6, 2
    images = rng.uniform(-1, 1, size=(n, h, w, c))
    transforms = np.array([
        rotation(30.0, 1.15, h, w),
        [1.3, 0.45, -7.37, -0.2, 1.7, 4.81, 0.0, 0.0],
        [1.0, 0.0, 0.37, 0.0, 1.0, -0.61, 0.0, 0.0],
    ])
    cases = []
    for interpolation in ("nearest", "bilinear"):
        for fill_mode, fill_value in (("reflect", 0.0), ("wrap", 0.0), ("constant", 0.0), ("constant", 0.75), ("nearest", 0.0)):
            out = keras.ops.image.affine_transform(images, transforms, interpolation=interpolation, fill_mode=fill_mode,
                                                   fill_value=fill_value, data_format="channels_last")
            out = np.asarray(out)
            assert out.dtype == np.float64, out.dtype
            cases.append({"interpolation": interpolation, "fill_mode": fill_mode, "fill_value": fill_value,
                          "output": out.reshape(-1).tolist()})
    refs = {"keras_version": keras.__version__, "shape": [n, h, w, c], "images": images.reshape(-1).tolist(),
            "transforms": transforms.reshape(-1).tolist(), "cases": cases}
    path = Path(__file__).resolve().parent / "augmentation_refs.json"
    path.write_text(json.dumps(refs) + "\n")
    print(f"{path.name}: {path.stat().st_size} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
