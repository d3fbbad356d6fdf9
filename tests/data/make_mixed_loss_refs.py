#!/usr/bin/env python3
"""Keras's losses under the mixed_bfloat16 policy, for tests/test_keras_mixed_loss.cpp.

Writes to tests/data/keras/:
  mixed_loss_mlp.keras          Flatten -> Dense(relu) -> Dense(softmax) on Fashion-MNIST-shaped images
  mixed_loss_cnn.keras          Conv2D(relu) -> MaxPooling2D -> Flatten -> Dense(softmax) on the same images
  mixed_loss_transformer.keras  Embedding -> MultiHeadAttention -> Add -> LayerNormalization -> Dense(relu)
                                -> Dense -> Add -> LayerNormalization -> GlobalAveragePooling1D -> Dense(softmax)
  mixed_loss_refs.json          the fixed batches and, per model, Keras's losses on its batch

Every layer of the three models is made under keras.mixed_precision.set_global_policy("mixed_bfloat16")
(the softmax heads too), compiled with SGD(0.1) and sparse_categorical_crossentropy and trained a few
epochs on synthetic data with a learnable class signal, so that the weights are not their initial
values. Then, on one fixed batch:
  loss             model.evaluate(x, y, batch_size=len(x)) under mixed_bfloat16
  loss_float32     the same weights in the same architecture made under the float32 policy
  train_step_loss  model.train_on_batch(x, y): the loss of one SGD training step (before its update)
  loss_after_step  model.evaluate on the batch again, after that step's update

The images are integers 0..255 stored as such; the input is integer * 2^-8, exact in float32 and in
bfloat16, so both frameworks read the same batch. Labels and tokens are integers.
Run with pip Keras 3 and JAX (CPU):
  KERAS_BACKEND=jax python3 tests/data/make_mixed_loss_refs.py
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_keras_files import repack  # noqa: E402  (the archive re-packed with deflate, entries unchanged)

OUT = Path(__file__).resolve().parent / "keras"
POLICY = "mixed_bfloat16"
IMAGE_SCALE = 2.0 ** -8  # input = stored integer * IMAGE_SCALE
BATCH = 16
VOCAB, SEQ, TOKEN_CLASSES = 20, 12, 4


def images(rng, n):
    """Noise with a bright 7x7 patch whose place is the class (10 places on a 4x4 grid)."""
    y = rng.integers(0, 10, size=(n,))
    k = rng.integers(0, 128, size=(n, 28, 28, 1))
    for i, c in enumerate(y):
        r, q = (c // 4) * 7, (c % 4) * 7
        k[i, r:r + 7, q:q + 7, 0] += 100
    return k.astype("int64"), y.astype("int32")


def tokens(rng, n):
    """Token sequences; the class is the first token modulo 4."""
    t = rng.integers(0, VOCAB, size=(n, SEQ))
    return t.astype("int32"), (t[:, 0] % TOKEN_CLASSES).astype("int32")


def mlp():
    x = keras.Input((28, 28, 1))
    h = layers.Dense(16, activation="relu")(layers.Flatten()(x))
    return keras.Model(x, layers.Dense(10, activation="softmax")(h), name="mixed_loss_mlp")


def cnn():
    x = keras.Input((28, 28, 1))
    h = layers.Conv2D(8, 3, activation="relu")(x)
    h = layers.Flatten()(layers.MaxPooling2D()(h))
    return keras.Model(x, layers.Dense(10, activation="softmax")(h), name="mixed_loss_cnn")


def transformer():
    x = keras.Input((SEQ,), dtype="int32")
    e = layers.Embedding(VOCAB, 16)(x)
    a = layers.MultiHeadAttention(2, 8)(e, e)
    h = layers.LayerNormalization()(layers.Add()([e, a]))
    f = layers.Dense(16)(layers.Dense(32, activation="relu")(h))
    h = layers.LayerNormalization()(layers.Add()([h, f]))
    p = layers.GlobalAveragePooling1D()(h)
    return keras.Model(x, layers.Dense(TOKEN_CLASSES, activation="softmax")(p), name="mixed_loss_transformer")


# name: (builder, which batch, seed)
MODELS = {"mixed_loss_mlp": (mlp, "images", 1), "mixed_loss_cnn": (cnn, "images", 2),
          "mixed_loss_transformer": (transformer, "tokens", 3)}


def built(builder, policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        m = builder()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return m


def tensor(a):
    return {"shape": list(a.shape), "values": a.reshape(-1).tolist()}


def main():
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(41)
    batches = {"images": images(rng, BATCH), "tokens": tokens(rng, BATCH)}
    train = {"images": images(rng, 256), "tokens": tokens(rng, 256)}
    as_input = {"images": lambda k: (k * IMAGE_SCALE).astype("float32"), "tokens": lambda t: t}
    refs = {"keras_version": keras.__version__, "backend": keras.backend.backend(), "policy": POLICY,
            "image_scale": IMAGE_SCALE,
            "batches": {b: {"x": tensor(x), "y": tensor(y)} for b, (x, y) in batches.items()}, "models": {}}
    for name, (builder, batch, seed) in MODELS.items():
        keras.backend.clear_session()  # layer names from dense, not dense_4
        keras.utils.set_random_seed(seed)
        m = built(builder, POLICY)
        assert all(l.dtype_policy.name == POLICY for l in m.layers if not isinstance(l, layers.InputLayer))
        xt, yt = train[batch]
        m.fit(as_input[batch](xt), yt, batch_size=32, epochs=3, shuffle=False, verbose=0)
        path = OUT / f"{name}.keras"
        m.save(path)
        repack(path)

        x, y = as_input[batch](batches[batch][0]), batches[batch][1]
        loss = m.evaluate(x, y, batch_size=len(x), verbose=0)
        plain = built(builder, "float32")
        plain.set_weights(m.get_weights())
        loss_float32 = plain.evaluate(x, y, batch_size=len(x), verbose=0)
        step_loss = m.train_on_batch(x, y)
        loss_after = m.evaluate(x, y, batch_size=len(x), verbose=0)
        refs["models"][name] = {"batch": batch, "loss": float(loss), "loss_float32": float(loss_float32),
                                "train_step_loss": float(step_loss), "loss_after_step": float(loss_after),
                                "policies": {l.name: l.dtype_policy.name for l in m.layers}}
        print(f"{name}: {path.stat().st_size} bytes; loss {loss:.6f} (float32 {loss_float32:.6f}), "
              f"train step {float(step_loss):.6f}, after it {loss_after:.6f}")
    (OUT / "mixed_loss_refs.json").write_text(json.dumps(refs) + "\n")


if __name__ == "__main__":
    main()
