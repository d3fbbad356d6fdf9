"""Reference values for tests/test_regularizers.cpp and tests/test_initializers.cpp, made by Keras 3
(JAX backend).

For each model (Dense; Conv2D and Conv1D; Embedding and the recurrent layers; DepthwiseConv2D,
BatchNormalization, SeparableConv2D, Conv2DTranspose, GroupNormalization and PReLU; MultiHeadAttention
and LayerNormalization): fixed weights (a seeded NumPy draw), one batch (x, y); Keras's loss of that batch
with every regularization penalty (test_on_batch, then train_on_batch: both before the update),
and the weights after one SGD step, constraints applied.

    KERAS_BACKEND=jax python tests/data/make_regularizer_refs.py   # regularizer_refs.json, initializer_refs.json
"""
import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import constraints as C  # noqa: E402
from keras import layers  # noqa: E402
from keras import regularizers as R  # noqa: E402

OUT = Path(__file__).parent / "regularizer_refs.json"
INIT_OUT = Path(__file__).parent / "initializer_refs.json"

# Initializers with arguments and seeds: Keras's config of each, and statistics of a large draw
# (mean, standard deviation, extremes) over a Dense kernel and a Conv2D kernel, whose fans
# (Keras's compute_fans) differ: (200, 300) and (3, 3, 16, 32) -> fan_in 144, fan_out 288.
from keras import initializers as I  # noqa: E402
from keras.src.initializers.random_initializers import compute_fans  # noqa: E402

INITIALIZERS = [
    ("constant", lambda: I.Constant(0.25)), ("zeros", lambda: I.Zeros()), ("ones", lambda: I.Ones()),
    ("identity", lambda: I.Identity(gain=2.0)), ("orthogonal", lambda: I.Orthogonal(gain=1.5, seed=3)),
    ("variance_fan_out_uniform", lambda: I.VarianceScaling(2.0, mode="fan_out", distribution="uniform", seed=1)),
    ("variance_fan_avg_untruncated", lambda: I.VarianceScaling(0.5, mode="fan_avg", distribution="untruncated_normal")),
    ("variance_fan_in_truncated", lambda: I.VarianceScaling(3.0, mode="fan_in", distribution="truncated_normal", seed=4)),
    ("truncated_normal", lambda: I.TruncatedNormal(0.5, 0.1, seed=5)), ("random_normal", lambda: I.RandomNormal(1.0, 2.0, seed=6)),
    ("random_uniform", lambda: I.RandomUniform(-1.0, 3.0, seed=7)),
    ("glorot_uniform", lambda: I.GlorotUniform(seed=8)), ("glorot_normal", lambda: I.GlorotNormal()),
    ("he_uniform", lambda: I.HeUniform()), ("he_normal", lambda: I.HeNormal(seed=9)),
    ("lecun_uniform", lambda: I.LecunUniform(seed=10)), ("lecun_normal", lambda: I.LecunNormal()),
]
SHAPES = [(200, 300), (3, 3, 16, 32)]


def initializer_refs():
    out = {"keras_version": keras.__version__, "fans": [], "initializers": {}}
    for shape in SHAPES + [(7,), (2, 5, 4, 3, 6)]:
        out["fans"].append({"shape": list(shape), "fans": list(compute_fans(shape))})
    for name, make in INITIALIZERS:
        entry = {"config": keras.saving.serialize_keras_object(make()), "draws": []}
        for shape in SHAPES:
            if name == "identity" and len(shape) != 2:
                continue
            v = np.asarray(make()(shape), dtype="float64")
            entry["draws"].append({"shape": list(shape), "mean": v.mean(), "std": v.std(), "min": v.min(), "max": v.max()})
        out["initializers"][name] = entry
    INIT_OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{INIT_OUT.name}: {INIT_OUT.stat().st_size} bytes")


def dense_model():
    # Every regularizer and constraint class on Dense; the second layer's kernel (3, 2) keeps its
    # rows' norms below MaxNorm's bound over axis 1, its bias non-negative.
    x = keras.Input((4,))
    h = layers.Dense(3, activation="tanh", kernel_regularizer=R.L1L2(l1=0.01, l2=0.02), bias_regularizer=R.L2(0.03),
                     activity_regularizer=R.L1(0.05), kernel_constraint=C.MaxNorm(0.8, axis=0), bias_constraint=C.NonNeg(),
                     name="d1")(x)
    h = layers.Dense(3, kernel_regularizer=R.OrthogonalRegularizer(0.1, mode="rows"), kernel_constraint=C.UnitNorm(axis=0),
                     bias_constraint=C.MinMaxNorm(0.2, 0.5, rate=0.7, axis=0), name="d2")(h)
    y = layers.Dense(2, kernel_regularizer=R.OrthogonalRegularizer(0.2, mode="columns"), activity_regularizer=R.L2(0.02),
                     kernel_constraint=C.MaxNorm(0.6, axis=1), name="d3")(h)
    return keras.Model(x, y, name="dense_regularized"), "mse", (5, 4), (5, 2)


def conv_model():
    x = keras.Input((5, 5, 2))
    h = layers.Conv2D(3, 2, activation="relu", kernel_regularizer=R.L2(0.01), bias_regularizer=R.L1(0.02),
                      activity_regularizer=R.L2(0.003), kernel_constraint=C.MaxNorm(0.9, axis=[0, 1, 2]),
                      bias_constraint=C.NonNeg(), name="c2")(x)
    h = layers.Reshape((16, 3))(h)
    h = layers.Conv1D(2, 3, kernel_regularizer=R.L1L2(0.01, 0.01), bias_regularizer=R.L2(0.5),
                      kernel_constraint=C.UnitNorm(axis=[0, 1]), bias_constraint=C.MaxNorm(0.05), name="c1")(h)
    y = layers.Dense(1, kernel_regularizer=R.L1(0.001), name="out")(layers.Flatten()(h))
    return keras.Model(x, y, name="conv_regularized"), "mse", (3, 5, 5, 2), (3, 1)


def seq_model():
    # Keras 3.15's SimpleRNN accepts activity_regularizer but drops it (it never reaches the base
    # Layer), so the activity penalty sits on the GRU, which passes it on.
    x = keras.Input((5,), dtype="int32")
    h = layers.Embedding(7, 3, embeddings_regularizer=R.L2(0.02), activity_regularizer=R.L1(0.01),
                         embeddings_constraint=C.MinMaxNorm(0.3, 0.6, rate=0.5, axis=1), name="emb")(x)
    h = layers.GRU(4, return_sequences=True, kernel_regularizer=R.L1(0.01), recurrent_regularizer=R.OrthogonalRegularizer(0.05),
                   bias_regularizer=R.L2(0.1), activity_regularizer=R.L2(0.01), kernel_constraint=C.MaxNorm(0.7),
                   recurrent_constraint=C.UnitNorm(axis=1),
                   bias_constraint=C.NonNeg(), name="gru")(h)
    h = layers.SimpleRNN(3, return_sequences=True, kernel_regularizer=R.L2(0.02), recurrent_regularizer=R.L1(0.01),
                         bias_regularizer=R.L1L2(0.01, 0.02),
                         recurrent_constraint=C.MaxNorm(0.5, axis=0), name="rnn")(h)
    h = layers.LSTM(2, kernel_regularizer=R.L1L2(0.0, 0.03), recurrent_regularizer=R.L2(0.01), bias_regularizer=R.L1(0.01),
                    kernel_constraint=C.MinMaxNorm(0.1, 0.4, axis=0), bias_constraint=C.MaxNorm(0.9), name="lstm")(h)
    y = layers.Dense(1, name="out")(h)
    return keras.Model(x, y, name="seq_regularized"), "mse", (4, 5), (4, 1)


def vision_model():
    # The vision and normalisation layers' weights, each with a regularizer and a constraint.
    x = keras.Input((6, 6, 2))
    h = layers.DepthwiseConv2D(2, depth_multiplier=2, activation="tanh", depthwise_regularizer=R.L2(0.02), bias_regularizer=R.L1(0.03),
                               activity_regularizer=R.L1(0.01), depthwise_constraint=C.MaxNorm(0.7, axis=[0, 1]),
                               bias_constraint=C.NonNeg(), name="dw")(x)
    h = layers.BatchNormalization(beta_regularizer=R.L1(0.02), gamma_regularizer=R.L2(0.05), beta_constraint=C.MaxNorm(0.4),
                                  gamma_constraint=C.NonNeg(), name="bn")(h)
    h = layers.SeparableConv2D(3, 2, depthwise_regularizer=R.L1L2(0.01, 0.02), pointwise_regularizer=R.L2(0.03),
                               bias_regularizer=R.L2(0.1), activity_regularizer=R.L2(0.01), depthwise_constraint=C.UnitNorm(axis=[0, 1]),
                               pointwise_constraint=C.MaxNorm(0.8, axis=[0, 1, 2]), bias_constraint=C.MinMaxNorm(0.1, 0.3, rate=0.5),
                               name="sep")(h)
    h = layers.Conv2DTranspose(2, 2, strides=2, kernel_regularizer=R.L1(0.02), bias_regularizer=R.L2(0.05),
                               activity_regularizer=R.L1(0.005), kernel_constraint=C.MaxNorm(0.5, axis=[0, 1, 3]),
                               bias_constraint=C.NonNeg(), name="tconv")(h)
    h = layers.GroupNormalization(groups=2, beta_regularizer=R.L2(0.03), gamma_regularizer=R.L1(0.02), beta_constraint=C.UnitNorm(),
                                  gamma_constraint=C.MaxNorm(1.2), name="gn")(h)
    h = layers.PReLU(alpha_regularizer=R.L2(0.1), alpha_constraint=C.NonNeg(), shared_axes=[1, 2], name="prelu")(h)
    y = layers.Dense(1, name="out")(layers.Flatten()(h))
    return keras.Model(x, y, name="vision_regularized"), "mse", (3, 6, 6, 2), (3, 1)


def attention_model():
    # MultiHeadAttention hands its regularizers and constraints to each projection (query, key,
    # value, attention_output), the activity regularizer to each projection's output.
    x = keras.Input((4, 3))
    h = layers.MultiHeadAttention(2, 3, kernel_regularizer=R.L2(0.02), bias_regularizer=R.L1(0.01), activity_regularizer=R.L2(0.005),
                                  kernel_constraint=C.MaxNorm(0.6, axis=0), bias_constraint=C.NonNeg(), name="mha")(x, x)
    h = layers.LayerNormalization(beta_regularizer=R.L1(0.02), gamma_regularizer=R.L2(0.03), beta_constraint=C.MaxNorm(0.3),
                                  gamma_constraint=C.MinMaxNorm(0.5, 1.0, rate=0.8), name="ln")(h)
    y = layers.Dense(1, name="out")(layers.Flatten()(h))
    return keras.Model(x, y, name="attention_regularized"), "mse", (3, 4, 3), (3, 1)


def initial_weights(rng, m):
    # Moderate weights, so that the constraints clip some norms and leave others; a moving variance
    # must stay positive.
    out = []
    for w in m.weights:
        v = rng.standard_normal(w.shape) * 0.5
        out.append((np.abs(v) + 0.5 if w.path.endswith("moving_variance") else v).astype("float32"))
    return out


def batch(rng, shape, name):
    if name == "seq":
        return rng.integers(0, 7, size=shape).astype("int32")
    return rng.standard_normal(shape).astype("float32")


def tensor(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "values": a.reshape(-1).astype("float64").tolist()}


def main():
    refs = {"keras_version": keras.__version__, "learning_rate": 0.1, "models": {}}
    models = [("dense", dense_model), ("conv", conv_model), ("seq", seq_model), ("vision", vision_model), ("attention", attention_model)]
    for i, (name, make) in enumerate(models):
        rng = np.random.default_rng(100 + i)
        m, loss, x_shape, y_shape = make()
        if i < 3:  # as these were first made
            # Weights of moderate size, so that the constraints clip some norms and leave others.
            weights = [(rng.standard_normal(w.shape) * 0.5).astype("float32") for w in m.get_weights()]
        else:
            weights = initial_weights(rng, m)
        m.set_weights(weights)
        m.compile(optimizer=keras.optimizers.SGD(refs["learning_rate"]), loss=loss)
        x, y = batch(rng, x_shape, name), rng.standard_normal(y_shape).astype("float32")
        plain_loss = float(np.mean((np.asarray(m.predict(x, verbose=0), "float64") - y) ** 2))  # no penalties
        eval_loss = float(m.test_on_batch(x, y))
        train_loss = float(m.train_on_batch(x, y))
        refs["models"][name] = {
            "x": tensor(x), "y": tensor(y), "weights": [tensor(w) for w in weights],
            "weight_paths": [w.path for w in m.weights],
            "plain_loss": plain_loss, "eval_loss": eval_loss, "train_loss": train_loss,
            "weights_after": [tensor(w) for w in m.get_weights()],
        }
        print(name, "plain", plain_loss, "eval", eval_loss, "train", train_loss)
    OUT.write_text(json.dumps(refs) + "\n")
    print(f"{OUT.name}: {OUT.stat().st_size} bytes")
    initializer_refs()


if __name__ == "__main__":
    main()
