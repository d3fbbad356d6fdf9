#!/usr/bin/env python3
"""Writes a small image folder under tests/data/datasets/images with PIL (PNG in RGB, RGBA, L and P
modes, JPEG in RGB and L) and images.json with what tests/test_image_directory.cpp must read:
  - the files in Keras's order (class folders sorted, files sorted within each) with their labels;
  - each file's pixels as PIL decodes them, in RGB (alpha dropped, as TensorFlow's decoder does with
    channels=3) and in grayscale (PIL's "L": ITU-R 601-2 luma, integer-rounded);
  - each resized to 4 x 3 by bilinear interpolation with half-pixel centres and clamped edges (what
    tf.image.resize does for Keras's image_dataset_from_directory), computed here with numpy.
Run: /usr/bin/python3 tests/data/make_image_files.py (needs python3-pil and python3-numpy)."""
import json
import os
import shutil

import numpy as np
from PIL import Image

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "datasets", "images")
shutil.rmtree(root, ignore_errors=True)
rng = np.random.default_rng(11)
OUT_H, OUT_W = 4, 3


def pixels(h, w, c):
    return rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)


def smooth(h, w):  # a JPEG of noise decodes far from its input; a ramp keeps values meaningful
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([yy * 255 // max(h - 1, 1), xx * 255 // max(w - 1, 1), (yy + xx) * 255 // (h + w - 2)], axis=-1)
    return rgb.astype(np.uint8)


files = {
    "cat/a_rgb.png": Image.fromarray(pixels(5, 6, 3), "RGB"),
    "cat/b_rgba.png": Image.fromarray(pixels(4, 3, 4), "RGBA"),
    "dog/gray.png": Image.fromarray(pixels(7, 5, 1)[:, :, 0], "L"),
    "dog/photo.jpg": Image.fromarray(smooth(8, 8), "RGB"),
    "dog/palette.png": Image.fromarray(pixels(6, 4, 3), "RGB").convert("P", palette=Image.ADAPTIVE, colors=8),
    "bird/gray.jpeg": Image.fromarray(smooth(6, 5)[:, :, 1], "L"),
}
for rel, image in files.items():
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    image.save(path, quality=90) if rel.endswith(("jpg", "jpeg")) else image.save(path)
with open(os.path.join(root, "dog", "notes.txt"), "w") as f:
    f.write("not an image: image_dataset_from_directory skips it\n")


def weights(out_size, in_size):
    scale = in_size / out_size
    src = (np.arange(out_size) + 0.5) * scale - 0.5
    low = np.floor(src)
    frac = src - low
    lo = np.clip(low, 0, in_size - 1).astype(int)
    hi = np.clip(low + 1, 0, in_size - 1).astype(int)
    return lo, hi, frac


def resize(a):  # a: (h, w, c) float64
    ylo, yhi, fy = weights(OUT_H, a.shape[0])
    xlo, xhi, fx = weights(OUT_W, a.shape[1])
    top = a[ylo][:, xlo] * (1 - fx)[None, :, None] + a[ylo][:, xhi] * fx[None, :, None]
    bottom = a[yhi][:, xlo] * (1 - fx)[None, :, None] + a[yhi][:, xhi] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]


classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
entries = []
for label, cls in enumerate(classes):
    for name in sorted(os.listdir(os.path.join(root, cls))):
        if not name.endswith((".png", ".jpg", ".jpeg")):
            continue
        image = Image.open(os.path.join(root, cls, name))
        rgb = np.asarray(image.convert("RGB"), dtype=np.float64)
        gray = np.asarray(image.convert("RGB").convert("L"), dtype=np.float64)[:, :, None]
        entries.append({"file": cls + "/" + name, "label": label, "height": rgb.shape[0], "width": rgb.shape[1],
                        "rgb": rgb.reshape(-1).tolist(), "gray": gray.reshape(-1).tolist(),
                        "rgb_resized": resize(rgb).reshape(-1).tolist(), "gray_resized": resize(gray).reshape(-1).tolist()})
with open(os.path.join(root, "..", "images.json"), "w") as f:
    json.dump({"class_names": classes, "resized": [OUT_H, OUT_W], "files": entries}, f)
