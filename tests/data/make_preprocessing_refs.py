#!/usr/bin/env python3
"""Writes tests/data/preprocessing_refs.json: Keras 3 (JAX backend) outputs of the preprocessing layers
Tandem has, for tests/test_preprocessing.cpp.

Each entry of "layers" is one layer: its class and config exactly as Keras's get_config() returns
them, an input x (with its dtype) and Keras's output y = layer(x). Adapted Normalization layers also
hold the data they were adapted on ("adapt") and the mean and
variance Keras's adapt() computed. Resizing covers jax.image.resize without antialiasing (Keras's
resize on JAX) for nearest and bilinear, up, down and mixed sizes, with crop and pad to the aspect
ratio; UpSampling2D nearest (Keras's repeat) and bilinear.

normalization_int64_count.weights.h5 holds the weights of Input((3,)) -> Normalization (adapted) ->
Dense(2) with Normalization's count rewritten as int64, as Keras on TensorFlow stores it ("int64_count"
in the JSON: inputs and Keras's predictions).

Run with Keras 3 and JAX:  KERAS_BACKEND=jax python3 tests/data/make_preprocessing_refs.py
"""
import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = Path(__file__).resolve().parent / "preprocessing_refs.json"
rng = np.random.default_rng(7)


def tensor(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "values": a.reshape(-1).tolist()}


def images(n, h, w, c):
    return rng.standard_normal((n, h, w, c)).astype("float32")


entries = []


def add(label, layer, x, adapt=None):
    entry = {"label": label, "class_name": type(layer).__name__}
    if adapt is not None:
        layer.adapt(adapt)
        entry["adapt"] = tensor(adapt)
        entry["mean"] = tensor(np.asarray(layer.adapt_mean))
        entry["variance"] = tensor(np.asarray(layer.adapt_variance))
    entry["config"] = layer.get_config()
    entry["x"] = tensor(x)
    entry["y"] = tensor(np.asarray(layer(x)))
    entries.append(entry)


# Rescaling: floats, and integer pixels that become float32.
add("rescaling", layers.Rescaling(1 / 255.0), rng.uniform(0, 255, (3, 4)).astype("float32"))
add("rescaling_offset_int", layers.Rescaling(1 / 127.5, offset=-1.0), rng.integers(0, 256, (2, 3, 3, 2)).astype("int32"))

# Normalization: adapted over an array (Keras 3 adapts over batches only with TensorFlow installed;
# the statistics are the same), per feature, per (h, w) position, one scalar; inverted; given
# statistics.
data = (rng.standard_normal((40, 3)) * [1.0, 5.0, 0.2] + [0.5, -3.0, 10.0]).astype("float32")
add("normalization_adapt", layers.Normalization(), data[:5], adapt=data)
img = (rng.standard_normal((12, 4, 5, 2)) * 2 + 1).astype("float32")
add("normalization_axis_hw", layers.Normalization(axis=(1, 2)), img[:2], adapt=img)
add("normalization_axis_none", layers.Normalization(axis=None), img[:2], adapt=img)
add("normalization_invert", layers.Normalization(invert=True), data[:5], adapt=data)
add("normalization_given", layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 0.25, 9.0]), data[:5])
add("normalization_given_scalar", layers.Normalization(mean=2.0, variance=3.0), data[:5])
add("normalization_int_input", layers.Normalization(mean=100.0, variance=400.0), rng.integers(0, 256, (3, 4)).astype("int32"))

# Resizing: jax.image.resize (antialias off): up, down, mixed, odd sizes, both methods.
for method in ("bilinear", "nearest"):
    add(f"resizing_up_{method}", layers.Resizing(7, 9, interpolation=method), images(2, 3, 4, 3))
    add(f"resizing_down_{method}", layers.Resizing(3, 4, interpolation=method), images(2, 8, 7, 2))
    add(f"resizing_mixed_{method}", layers.Resizing(5, 3, interpolation=method), images(1, 2, 11, 3))
    add(f"resizing_one_{method}", layers.Resizing(4, 1, interpolation=method), images(2, 1, 5, 1))
add("resizing_crop", layers.Resizing(4, 4, crop_to_aspect_ratio=True), images(2, 6, 9, 2))
add("resizing_crop_tall", layers.Resizing(3, 6, crop_to_aspect_ratio=True, interpolation="nearest"), images(1, 8, 5, 1))
add("resizing_pad", layers.Resizing(5, 5, pad_to_aspect_ratio=True, fill_value=0.5), images(2, 4, 8, 2))
add("resizing_pad_wide", layers.Resizing(6, 3, pad_to_aspect_ratio=True, fill_value=-1.0), images(1, 5, 5, 1))

# UpSampling2D: nearest (a repeat) and bilinear.
add("up_sampling2d", layers.UpSampling2D(), images(2, 3, 4, 2))
add("up_sampling2d_nearest_2_3", layers.UpSampling2D((2, 3)), images(1, 2, 3, 3))
add("up_sampling2d_bilinear", layers.UpSampling2D((3, 2), interpolation="bilinear"), images(2, 3, 4, 2))

# CategoryEncoding: ids in range and, for one_hot, -1 and num_tokens (rows of zeros on JAX).
ids = rng.integers(0, 6, (4, 5)).astype("int32")
add("category_encoding_multi_hot", layers.CategoryEncoding(6), ids)
add("category_encoding_count", layers.CategoryEncoding(6, output_mode="count"), ids)
add("category_encoding_one_hot", layers.CategoryEncoding(6, output_mode="one_hot"), np.array([[0], [5], [-1], [6], [3]], dtype="int32"))
add("category_encoding_one_hot_2d", layers.CategoryEncoding(4, output_mode="one_hot"), rng.integers(0, 4, (3, 2)).astype("int32"))

# A weights file of Input((3,)) -> Normalization (adapted) -> Dense(2) whose count is int64, as Keras
# on TensorFlow stores it (on JAX it is int32): Tandem reads either.
WEIGHTS = OUT.parent / "normalization_int64_count.weights.h5"
keras.utils.set_random_seed(3)
norm = layers.Normalization()
norm.adapt(data)
m = keras.Sequential([keras.Input((3,)), norm, layers.Dense(2)])
m.save_weights(WEIGHTS)
import h5py  # noqa: E402

with h5py.File(WEIGHTS, "r+") as f:
    count = f["layers/normalization/vars/2"]
    assert count.dtype == np.int32, count.dtype
    del f["layers/normalization/vars/2"]
    f.create_dataset("layers/normalization/vars/2", data=np.int64(0))
weights_entry = {"x": tensor(data[:4]), "y": tensor(np.asarray(m.predict(data[:4], verbose=0)))}

OUT.write_text(json.dumps({"keras_version": keras.__version__, "backend": keras.backend.backend(), "layers": entries, "int64_count": weights_entry}) + "\n")
print(f"{OUT.name}: {len(entries)} layers, {OUT.stat().st_size} bytes")
