#!/usr/bin/env python3
"""A Keras-made model trained under mixed_float16, for tests/test_loss_scale.cpp.

Writes to tests/data/keras/:
  loss_scale_mlp.keras      Dense(32, relu) -> Dense(5) on 36 features, every layer under
                            mixed_float16, compiled with Adam(1e-3) (Keras's compile wraps it in a
                            LossScaleOptimizer) and trained 3 steps of 32 rows
  loss_scale_refs.json      the rows, Keras's loss-scale state after training (the wrapper's
                            step_counter and dynamic_scale, the inner Adam's iterations) and its
                            predictions on the first 8 rows

The features are integers * 2^-4 (exact in float16). Run with pip Keras 3 and JAX (CPU):
  KERAS_BACKEND=jax python3 tests/data/make_loss_scale_files.py
"""
import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "keras"

keras.utils.set_random_seed(7)
keras.mixed_precision.set_global_policy("mixed_float16")
rng = np.random.default_rng(7)
y = (np.arange(96) % 5).astype("int32")
k = rng.integers(-16, 17, size=(96, 36))
k[np.arange(96), y * 7] += 24  # a learnable signal: feature 7·class is large
x = (k * 2.0 ** -4).astype("float32")

model = keras.Sequential([keras.Input((36,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(5)])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
model.save(OUT / "loss_scale_mlp.keras")
opt = model.optimizer
refs = {
    "keras_version": keras.__version__,
    "x": {"shape": list(x.shape), "values": k.reshape(-1).tolist(), "scale": 2.0 ** -4},
    "y": y.tolist(),
    "step_counter": int(opt.step_counter.numpy()),
    "dynamic_scale": float(opt.dynamic_scale.numpy()),
    "iterations": int(opt.iterations.numpy()),
    "predictions": np.asarray(model.predict(x[:8], verbose=0), dtype="float64").reshape(-1).tolist(),
}
(OUT / "loss_scale_refs.json").write_text(json.dumps(refs))
print(refs["step_counter"], refs["dynamic_scale"], refs["iterations"])
