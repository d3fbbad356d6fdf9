#!/usr/bin/env python3
"""Writes the Keras-made files that Tandem's tests read without Keras (tests/data/keras/).

  layer_configs.json   for each Keras layer class Tandem has, several instances' configs exactly as
                       Keras 3 serialises them in a `.keras` archive's config.json
  <model>.keras        Keras 3 archives (config.json, metadata.json, model.weights.h5) of small
  <model>.h5           compiled, trained models, and the same models in Keras's legacy whole-model
                       HDF5 format: an MLP (Adam), a CNN with BatchNormalization (RMSprop with
                       momentum), Embedding -> causal MultiHeadAttention -> LayerNormalization (SGD
                       with momentum), a functional model with two branches (Adam), and "zoo", a
                       functional model with the remaining layer classes (ZeroPadding2D,
                       AveragePooling2D, GlobalAveragePooling2D, Reshape, Multiply, Concatenate,
                       Activation; AdamW); "rnn", LSTM -> GRU (reset_after=False) -> SimpleRNN
                       (go_backwards) -> Dense (Adam); "birnn", Bidirectional(GRU, sequences) ->
                       Bidirectional(LSTM, merge_mode="sum") -> Dense (RMSprop); "seq1d", a functional model on sequences with every 1-D
                       layer (Conv1D causal dilated and same strided, MaxPooling1D,
                       AveragePooling1D with "same" padding, GlobalAveragePooling1D and
                       GlobalMaxPooling1D branches; Adam), and "pool2d", Conv2D -> GlobalMaxPooling2D
                       (RMSprop)
  models.json          per model: inputs x, Keras's predictions on them, the optimizer's step count,
                       and one more training batch with the predictions after Keras trained on it
                       (so a reader that restores the optimizer state exactly predicts the same)
  norm.keras, norm.h5  a functional model with MultiHeadAttention (dropout 0.1), BatchNormalization
                       and Dropout, compiled and trained (Keras records the call arguments
                       {"mask": null} and {"training": false} with its calls); models.json holds x and
                       Keras's predictions (no next batch: dropout masks differ between frameworks)
  uncompiled.keras,    a functional model with BatchNormalization that was never compiled (Keras
  uncompiled.h5        writes "compile_config": {} and no training_config); x and predictions too

The archives' entries are Keras's bytes, re-packed with deflate to keep the files small.
Run with pip Keras 3 and JAX (CPU):  KERAS_BACKEND=jax python3 tests/data/make_keras_files.py [MODEL...]
(with model names, only those models' files and their entries in models.json are remade;
layer_configs.json, which depends on nothing random, is written on every run).
"""
import json
import os
import sys
import zipfile
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = Path(__file__).resolve().parent / "keras"
MODELS = ["mlp", "cnn", "attn", "branch", "zoo", "seq1d", "pool2d", "rnn", "birnn"]
# Models checked by their predictions only: Dropout makes training differ between frameworks, and an
# uncompiled model does not train.
PREDICT_ONLY = ["norm", "uncompiled"]
# Each model's seeds, by the order in which models were added: a new model leaves the others' files
# as they were made.
SEED_ORDER = ["mlp", "cnn", "attn", "branch", "zoo", "norm", "uncompiled", "seq1d", "pool2d", "rnn", "birnn"]

# Tandem's layer classes that Keras 3 has (PositionEmbedding is keras_hub's, not Keras's).
LAYERS = {
    "dense": lambda: layers.Dense(3),
    "dense_relu_no_bias": lambda: layers.Dense(5, activation="relu", use_bias=False, kernel_initializer="he_normal"),
    "dense_initializers": lambda: layers.Dense(2, activation="softmax", kernel_initializer="lecun_uniform", bias_initializer="ones"),
    "conv2d": lambda: layers.Conv2D(4, 3),
    "conv2d_options": lambda: layers.Conv2D(2, (3, 1), strides=2, padding="same", dilation_rate=1, activation="tanh",
                                            kernel_initializer="glorot_normal", bias_initializer="random_normal"),
    "max_pooling2d": lambda: layers.MaxPooling2D(),
    "max_pooling2d_options": lambda: layers.MaxPooling2D((3, 2), strides=1, padding="same"),
    "average_pooling2d": lambda: layers.AveragePooling2D(2),
    "global_average_pooling2d": lambda: layers.GlobalAveragePooling2D(),
    "global_average_pooling2d_keepdims": lambda: layers.GlobalAveragePooling2D(keepdims=True),
    "global_max_pooling2d": lambda: layers.GlobalMaxPooling2D(),
    "global_max_pooling2d_keepdims": lambda: layers.GlobalMaxPooling2D(keepdims=True),
    "conv1d": lambda: layers.Conv1D(4, 3),
    "conv1d_causal": lambda: layers.Conv1D(2, 5, padding="causal", dilation_rate=2, activation="relu", use_bias=False,
                                           kernel_initializer="he_uniform"),
    "conv1d_same_strided": lambda: layers.Conv1D(3, 2, strides=2, padding="same", bias_initializer="ones"),
    "max_pooling1d": lambda: layers.MaxPooling1D(),
    "max_pooling1d_options": lambda: layers.MaxPooling1D(3, strides=1, padding="same"),
    "average_pooling1d": lambda: layers.AveragePooling1D(4, strides=2),
    "global_average_pooling1d": lambda: layers.GlobalAveragePooling1D(),
    "global_max_pooling1d_keepdims": lambda: layers.GlobalMaxPooling1D(keepdims=True),
    "lstm": lambda: layers.LSTM(3),
    "lstm_options": lambda: layers.LSTM(4, activation="relu", recurrent_activation="tanh", use_bias=False, return_sequences=True,
                                        return_state=True, go_backwards=True, unit_forget_bias=False, dropout=0.1,
                                        recurrent_dropout=0.2, seed=5, kernel_initializer="he_normal"),
    "gru": lambda: layers.GRU(3),
    "gru_options": lambda: layers.GRU(2, reset_after=False, recurrent_activation="relu", return_sequences=True,
                                      recurrent_initializer="glorot_uniform", bias_initializer="ones"),
    "simple_rnn": lambda: layers.SimpleRNN(5),
    "simple_rnn_options": lambda: layers.SimpleRNN(2, activation="sigmoid", go_backwards=True, dropout=0.5, seed=2),
    "bidirectional": lambda: layers.Bidirectional(layers.LSTM(3)),
    "bidirectional_options": lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="ave"),
    "bidirectional_none": lambda: layers.Bidirectional(layers.SimpleRNN(2), merge_mode=None),
    "zero_padding2d": lambda: layers.ZeroPadding2D(1),
    "zero_padding2d_pairs": lambda: layers.ZeroPadding2D(((1, 2), (0, 3))),
    "batch_normalization": lambda: layers.BatchNormalization(),
    "batch_normalization_options": lambda: layers.BatchNormalization(momentum=0.9, epsilon=1e-5, center=False),
    "layer_normalization": lambda: layers.LayerNormalization(),
    "layer_normalization_options": lambda: layers.LayerNormalization(epsilon=1e-6, scale=False),
    "dropout": lambda: layers.Dropout(0.25),
    "dropout_seed": lambda: layers.Dropout(0.5, seed=7),
    "embedding": lambda: layers.Embedding(10, 4),
    "embedding_initializer": lambda: layers.Embedding(7, 2, embeddings_initializer="glorot_uniform"),
    "multi_head_attention": lambda: layers.MultiHeadAttention(2, 3),
    "multi_head_attention_options": lambda: layers.MultiHeadAttention(4, 2, value_dim=3, dropout=0.1, use_bias=False,
                                                                      output_shape=5, seed=3),
    "flatten": lambda: layers.Flatten(),
    "reshape": lambda: layers.Reshape((2, 6)),
    "activation": lambda: layers.Activation("gelu"),
    "add": lambda: layers.Add(),
    "multiply": lambda: layers.Multiply(),
    "concatenate": lambda: layers.Concatenate(),
    "concatenate_axis": lambda: layers.Concatenate(axis=1),
}


def layer_configs():
    out = []
    for label, make in LAYERS.items():
        entry = keras.saving.serialize_keras_object(make())
        if isinstance(entry["config"]["dtype"], dict):  # the spatial dropouts write the dtype's name
            entry["config"]["dtype"].pop("shared_object_id", None)
        out.append({"label": label, "class_name": entry["class_name"], "config": entry["config"]})
    # MultiHeadAttention's attention_axes once built on (batch, time, features).
    x = keras.Input((5, 4))
    mha = layers.MultiHeadAttention(2, 3, name="built_attention")
    mha(x, x)
    entry = keras.saving.serialize_keras_object(mha)
    out.append({"label": "multi_head_attention_built", "class_name": "MultiHeadAttention", "config": entry["config"]})
    return out


def model(name):
    if name == "mlp":
        m = keras.Sequential([keras.Input((6, 6)), layers.Flatten(), layers.Dense(8, activation="relu"), layers.Dense(4)], name="mlp")
        optimizer = keras.optimizers.Adam(1e-2)
    elif name == "cnn":
        m = keras.Sequential([keras.Input((6, 6, 1)), layers.Conv2D(3, 3, padding="same", activation="relu"),
                              layers.BatchNormalization(), layers.MaxPooling2D(), layers.Flatten(), layers.Dense(3)], name="cnn")
        optimizer = keras.optimizers.RMSprop(1e-2, momentum=0.9)
    elif name == "attn":
        x = keras.Input((5,), dtype="int32")
        e = layers.Embedding(12, 4)(x)
        a = layers.MultiHeadAttention(2, 2)(e, e, use_causal_mask=True)
        y = layers.Dense(3)(layers.Flatten()(layers.LayerNormalization()(a)))
        m = keras.Model(x, y, name="attn")
        optimizer = keras.optimizers.SGD(1e-1, momentum=0.9)
    elif name == "zoo":
        x = keras.Input((6, 6, 2))
        c = layers.Conv2D(4, 3, activation="tanh")(layers.ZeroPadding2D(1)(x))
        a = layers.AveragePooling2D(2)(c)
        g = layers.GlobalAveragePooling2D()(a)
        d = layers.Dense(4)(layers.Reshape((36,))(a))
        k = layers.Concatenate()([layers.Multiply()([g, d]), g])
        m = keras.Model(x, layers.Dense(3)(layers.Activation("relu")(k)), name="zoo")
        optimizer = keras.optimizers.AdamW(1e-2, weight_decay=0.01)
    elif name == "seq1d":
        x = keras.Input((20, 3))
        c = layers.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu")(x)
        p = layers.MaxPooling1D()(c)
        c2 = layers.Conv1D(5, 3, strides=2, padding="same", activation="tanh")(p)
        a = layers.AveragePooling1D(2, padding="same")(c2)
        k = layers.Concatenate()([layers.GlobalAveragePooling1D()(a), layers.GlobalMaxPooling1D()(c)])
        m = keras.Model(x, layers.Dense(3)(k), name="seq1d")
        optimizer = keras.optimizers.Adam(1e-2)
    elif name == "pool2d":
        m = keras.Sequential([keras.Input((5, 6, 2)), layers.Conv2D(4, 3, padding="same", activation="relu"),
                              layers.GlobalMaxPooling2D(), layers.Dense(3)], name="pool2d")
        optimizer = keras.optimizers.RMSprop(1e-2)
    elif name == "rnn":
        x = keras.Input((6, 4))
        s = layers.LSTM(5, return_sequences=True)(x)
        s = layers.GRU(4, return_sequences=True, reset_after=False)(s)
        m = keras.Model(x, layers.Dense(3)(layers.SimpleRNN(3, go_backwards=True)(s)), name="rnn")
        optimizer = keras.optimizers.Adam(1e-2)
    elif name == "birnn":
        x = keras.Input((7, 3))
        s = layers.Bidirectional(layers.GRU(4, return_sequences=True))(x)
        h = layers.Bidirectional(layers.LSTM(3), merge_mode="sum")(s)
        m = keras.Model(x, layers.Dense(3)(h), name="birnn")
        optimizer = keras.optimizers.RMSprop(1e-2)
    elif name == "norm":
        x = keras.Input((5, 4))
        a = layers.MultiHeadAttention(2, 2, dropout=0.1)(x, x)
        f = layers.Flatten()(layers.BatchNormalization()(a))
        m = keras.Model(x, layers.Dense(3)(layers.Dropout(0.3)(f)), name="norm")
        optimizer = keras.optimizers.Adam(1e-2)
    elif name == "uncompiled":
        x = keras.Input((6,))
        n = layers.BatchNormalization()(layers.Dense(4, activation="relu")(x))
        return keras.Model(x, layers.Dense(2)(n), name="uncompiled")
    else:
        x = keras.Input((6,))
        n = layers.LayerNormalization()(layers.Dense(5, activation="relu")(x))
        d = layers.Dense(5)(x)
        m = keras.Model(x, layers.Dense(2)(layers.Add()([d, n])), name="branch")
        optimizer = keras.optimizers.Adam(1e-2)
    m.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return m


def data(name, m, rng, n):
    shape = (n, *m.input_shape[1:])
    x = rng.integers(0, 12, size=shape).astype("int32") if name == "attn" else rng.standard_normal(shape).astype("float32")
    return x, rng.integers(0, m.output_shape[-1], size=(n,)).astype("int32")


def repack(path):
    """Re-packs an archive with deflate; the entries' bytes stay Keras's."""
    with zipfile.ZipFile(path) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in entries:
            z.writestr(name, data)


def tensor(a):
    """A tensor as {"shape", "values"}; a model's several inputs as a list of them."""
    if isinstance(a, list):
        return [tensor(t) for t in a]
    return {"shape": list(a.shape), "values": a.reshape(-1).tolist()}


def make(name, models):
    """Writes OUT/<name>.keras and OUT/<name>.h5 and puts the model's values in `models`."""
    i = SEED_ORDER.index(name)
    keras.utils.set_random_seed(10 + i)
    rng = np.random.default_rng(20 + i)
    m = model(name)
    if m.compiled:
        x_train, y_train = data(name, m, rng, 16)
        m.fit(x_train, y_train, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(OUT / f"{name}.keras")
    repack(OUT / f"{name}.keras")
    m.save(OUT / f"{name}.h5")
    x, _ = data(name, m, rng, 4)
    y = np.asarray(m.predict(x, verbose=0))
    models[name] = {"x": tensor(x), "y": tensor(y)}
    if name in PREDICT_ONLY:
        if m.compiled:
            models[name]["iterations"] = 2
        return
    x_next, y_next = data(name, m, rng, 8)
    m.fit(x_next, y_next, batch_size=8, epochs=1, shuffle=False, verbose=0)
    models[name].update({"iterations": 2, "x_next": tensor(x_next), "y_next": tensor(y_next),
                         "y_after_next": tensor(np.asarray(m.predict(x, verbose=0)))})


def main(names):
    OUT.mkdir(exist_ok=True)
    models = {"keras_version": keras.__version__}
    if names:
        models = json.loads((OUT / "models.json").read_text())
        if models["keras_version"] != keras.__version__:
            raise SystemExit(f"models.json was made by Keras {models['keras_version']}, this is {keras.__version__}: remake all")
    else:
        names = MODELS + PREDICT_ONLY
        if not have_tensorflow():  # keep the files of the models that need it as they are
            old = json.loads((OUT / "models.json").read_text())
            names = [n for n in names if n not in TENSORFLOW_MODELS]
            models.update({n: old[n] for n in TENSORFLOW_MODELS if n in old})
            print("not remade (Keras's lookup layers need TensorFlow): " + ", ".join(TENSORFLOW_MODELS))
    # The layer configs depend on nothing random: written on every run.
    (OUT / "layer_configs.json").write_text(json.dumps({"keras_version": keras.__version__, "layers": layer_configs()}, indent=1) + "\n")
    for name in names:
        make(name, models)
    (OUT / "models.json").write_text(json.dumps(models) + "\n")
    for f in sorted(OUT.iterdir()):
        print(f"{f.name}: {f.stat().st_size} bytes")


# ---- Masks: models whose layers make and consume Keras masks (predictions only) ----
#   masked_embed  Embedding(mask_zero=True) -> GlobalAveragePooling1D -> Dense (functional), ids
#                 with trailing zeros as padding
#   masking       Masking(0.0) -> Dense(tanh) -> GlobalAveragePooling1D -> Dense (Sequential),
#                 sequences whose padded steps are all zeros
#   masked_rnn    Embedding(mask_zero=True) -> Bidirectional(LSTM, sequences) -> GRU -> Dense
#                 (functional): the recurrent layers carry their states over the padded steps
#   attn_mask     MultiHeadAttention(x, x, attention_mask=m) -> Flatten -> Dense with two inputs:
#                 x (5, 4) and an int32 attention mask m (5, 5), random 0/1 with the diagonal set;
#                 models.json holds x as the list [x, m]
MASK_MODELS = ["masked_embed", "masking", "masked_rnn", "attn_mask"]
PREDICT_ONLY += MASK_MODELS
SEED_ORDER += MASK_MODELS
_model_without_masks, _data_without_masks = model, data
LAYERS.update({
    "embedding_mask_zero": lambda: layers.Embedding(12, 4, mask_zero=True),
    "masking": lambda: layers.Masking(0.5),
})


def masked_model(name):
    if name == "masked_embed":
        x = keras.Input((6,), dtype="int32")
        e = layers.Embedding(12, 4, mask_zero=True)(x)
        m = keras.Model(x, layers.Dense(3)(layers.GlobalAveragePooling1D()(e)), name="masked_embed")
    elif name == "attn_mask":
        x = keras.Input((5, 4))
        allowed = keras.Input((5, 5), dtype="int32")
        a = layers.MultiHeadAttention(2, 3)(x, x, attention_mask=allowed)
        m = keras.Model([x, allowed], layers.Dense(3)(layers.Flatten()(a)), name="attn_mask")
    elif name == "masked_rnn":
        x = keras.Input((6,), dtype="int32")
        e = layers.Embedding(12, 4, mask_zero=True)(x)
        s = layers.Bidirectional(layers.LSTM(3, return_sequences=True))(e)
        m = keras.Model(x, layers.Dense(3)(layers.GRU(4)(s)), name="masked_rnn")
    else:
        m = keras.Sequential([keras.Input((5, 3)), layers.Masking(0.0), layers.Dense(4, activation="tanh"),
                              layers.GlobalAveragePooling1D(), layers.Dense(3)], name="masking")
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def masked_data(name, m, rng, n):
    if name == "attn_mask":
        allowed = np.maximum(rng.integers(0, 2, size=(n, 5, 5)), np.eye(5, dtype="int64")).astype("int32")
        return [rng.standard_normal((n, 5, 4)).astype("float32"), allowed], rng.integers(0, 3, size=(n,)).astype("int32")
    steps = m.input_shape[1]
    lengths = rng.integers(1, steps + 1, size=(n,))  # every row keeps at least one step
    keep = np.arange(steps)[None, :] < lengths[:, None]
    if name in ("masked_embed", "masked_rnn"):
        x = (rng.integers(1, 12, size=(n, steps)) * keep).astype("int32")
    else:
        x = (rng.standard_normal((n, steps, 3)) * keep[:, :, None]).astype("float32")
    return x, rng.integers(0, 3, size=(n,)).astype("int32")


def model(name):  # noqa: F811 (the models above, and the masked ones)
    return masked_model(name) if name in MASK_MODELS else _model_without_masks(name)


def data(name, m, rng, n):  # noqa: F811
    return masked_data(name, m, rng, n) if name in MASK_MODELS else _data_without_masks(name, m, rng, n)



# Freezing (Keras's layer.trainable = False), a PREDICT_ONLY model:
#   frozen        Dense(relu) and BatchNormalization frozen, then Dense trainable (functional; Adam):
#                 the configs say "trainable": false, and the optimizer has slots for the last
#                 Dense alone
FROZEN_MODELS = ["frozen"]
PREDICT_ONLY += FROZEN_MODELS
SEED_ORDER += FROZEN_MODELS
_model_before_frozen, _data_before_frozen = model, data


def frozen_model():
    x = keras.Input((5,))
    hidden, norm = layers.Dense(6, activation="relu"), layers.BatchNormalization()
    m = keras.Model(x, layers.Dense(3)(norm(hidden(x))), name="frozen")
    hidden.trainable = False
    norm.trainable = False
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def model(name):  # noqa: F811
    return frozen_model() if name in FROZEN_MODELS else _model_before_frozen(name)


def data(name, m, rng, n):  # noqa: F811
    if name in FROZEN_MODELS:
        return rng.standard_normal((n, 5)).astype("float32"), rng.integers(0, 3, size=(n,)).astype("int32")
    return _data_before_frozen(name, m, rng, n)


# ---- Activations: the activation layers and every activation name (predictions only) ----
#   activations   input (4, 6) -> one Dense(3) branch per activation name Keras 3 has and Tandem
#                 implements (silu, swish, leaky_relu, selu, elu, softplus, softsign, hard_sigmoid,
#                 hard_silu, hard_swish, mish, relu6, exponential, linear) -> Concatenate ->
#                 ReLU(max_value=2, negative_slope=0.1, threshold=0.2) -> Dense(5) -> LeakyReLU,
#                 PReLU(shared_axes=[1]) with alpha set to random values in [-0.5, 1.5], ELU,
#                 Softmax(axis=1), Activation("hard_swish") -> Concatenate -> Flatten -> Dense(3)
ACTIVATION_MODELS = ["activations"]
ACTIVATION_NAMES = ["silu", "swish", "leaky_relu", "selu", "elu", "softplus", "softsign", "hard_sigmoid", "hard_silu",
                    "hard_swish", "mish", "relu6", "exponential", "linear"]
PREDICT_ONLY += ACTIVATION_MODELS
SEED_ORDER += ACTIVATION_MODELS
_model_before_activations = model
LAYERS.update({
    "re_lu": lambda: layers.ReLU(),
    "re_lu_options": lambda: layers.ReLU(max_value=6.0, negative_slope=0.1, threshold=0.5),
    "leaky_re_lu": lambda: layers.LeakyReLU(),
    "leaky_re_lu_slope": lambda: layers.LeakyReLU(negative_slope=0.1),
    "p_re_lu": lambda: layers.PReLU(),
    "p_re_lu_options": lambda: layers.PReLU(alpha_initializer="ones", shared_axes=[1, 2]),
    "elu": lambda: layers.ELU(),
    "softmax": lambda: layers.Softmax(),
    "softmax_axis": lambda: layers.Softmax(axis=1),
    "activation_swish": lambda: layers.Activation("swish"),
    "dense_hard_swish": lambda: layers.Dense(2, activation="hard_swish"),
    "dense_mish": lambda: layers.Dense(2, activation="mish"),
})


def activations_model():
    x = keras.Input((4, 6))
    h = layers.Concatenate()([layers.Dense(3, activation=a, name=f"dense_{a}")(x) for a in ACTIVATION_NAMES])
    h = layers.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.2)(h)
    d = layers.Dense(5)(h)
    prelu = layers.PReLU(shared_axes=[1], name="prelu")
    outs = [layers.LeakyReLU()(d), prelu(d), layers.ELU()(d), layers.Softmax(axis=1)(d), layers.Activation("hard_swish")(d)]
    prelu.alpha.assign(np.random.default_rng(5).uniform(-0.5, 1.5, size=(1, 5)).astype("float32"))
    m = keras.Model(x, layers.Dense(3)(layers.Flatten()(layers.Concatenate()(outs))), name="activations")
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def model(name):  # noqa: F811 (the models above, and the activation ones)
    return activations_model() if name in ACTIVATION_MODELS else _model_before_activations(name)


# ---- Augmentation: Keras's random image layers in front of a model (predictions only: they are
# the identity outside training, and their training draws differ between frameworks) ----
#   augment   RandomFlip -> RandomTranslation -> RandomRotation (constant fill) -> RandomZoom
#             (nearest interpolation, own width factor) -> RandomContrast (value_range (-5, 5))
#             -> Conv2D -> Flatten -> Dense (Sequential, Adam), images (6, 7, 2)
AUGMENT_MODELS = ["augment"]
PREDICT_ONLY += AUGMENT_MODELS
SEED_ORDER += AUGMENT_MODELS
_model_before_augmentation, _data_before_augmentation = model, data
LAYERS.update({
    "random_flip": lambda: layers.RandomFlip(),
    "random_flip_options": lambda: layers.RandomFlip("horizontal", seed=4),
    "random_translation": lambda: layers.RandomTranslation(0.1, (-0.2, 0.3)),
    "random_translation_options": lambda: layers.RandomTranslation((0.3, -0.1), 0.25, fill_mode="constant", interpolation="nearest",
                                                                   seed=5, fill_value=0.5),
    "random_rotation": lambda: layers.RandomRotation(0.2),
    "random_rotation_options": lambda: layers.RandomRotation((-0.1, 0.3), fill_mode="wrap", seed=6),
    "random_zoom": lambda: layers.RandomZoom(0.2),
    "random_zoom_options": lambda: layers.RandomZoom((-0.3, 0.1), 0.4, fill_mode="nearest", interpolation="nearest", fill_value=1.0),
    "random_contrast": lambda: layers.RandomContrast(0.3),
    "random_contrast_options": lambda: layers.RandomContrast((0.1, 0.4), value_range=(0, 1), seed=8),
})


def augment_model(name):
    m = keras.Sequential([keras.Input((6, 7, 2)), layers.RandomFlip(seed=1), layers.RandomTranslation(0.1, 0.2, seed=2),
                          layers.RandomRotation(0.1, fill_mode="constant", seed=3),
                          layers.RandomZoom(0.2, (-0.1, 0.2), interpolation="nearest", seed=4),
                          layers.RandomContrast(0.3, value_range=(-5, 5), seed=5),
                          layers.Conv2D(3, 3, activation="relu"), layers.Flatten(), layers.Dense(3)], name=name)
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def model(name):  # noqa: F811 (the models above, and the augmentation one)
    return augment_model(name) if name in AUGMENT_MODELS else _model_before_augmentation(name)


def data(name, m, rng, n):  # noqa: F811
    return _data_before_augmentation(name, m, rng, n)


# ---- Vision: Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, Cropping2D, SpatialDropout2D,
# GroupNormalization (predictions only: SpatialDropout2D's masks differ between frameworks) ----
#   vision        Conv2DTranspose(stride 2, "same", output_padding 1, relu) -> DepthwiseConv2D
#                 (multiplier 2, "same") -> SeparableConv2D(stride 2) -> GroupNormalization(2) ->
#                 Cropping2D(((1, 0), (0, 1))) -> SpatialDropout2D -> GlobalAveragePooling2D ->
#                 Dense (Sequential, Adam)
#   vision_tconv  Conv2DTranspose(4x4, stride 2, "same") -> Conv2DTranspose((4, 3), stride 2,
#                 "same", output_padding 0: the even kernel that no conv2d padding has) ->
#                 Conv2DTranspose(2x2, stride 3, "valid") -> Flatten -> Dense (functional, RMSprop)
VISION_MODELS = ["vision", "vision_tconv"]
PREDICT_ONLY += VISION_MODELS
SEED_ORDER += VISION_MODELS
_model_before_vision, _data_before_vision = model, data
LAYERS.update({
    "conv2d_transpose": lambda: layers.Conv2DTranspose(3, 3),
    "conv2d_transpose_options": lambda: layers.Conv2DTranspose(2, (3, 4), strides=(2, 3), padding="same", output_padding=(1, 2),
                                                               activation="relu", use_bias=False, kernel_initializer="he_normal"),
    "depthwise_conv2d": lambda: layers.DepthwiseConv2D(3),
    "depthwise_conv2d_options": lambda: layers.DepthwiseConv2D((3, 2), strides=2, padding="same", depth_multiplier=3,
                                                               activation="tanh", depthwise_initializer="he_uniform",
                                                               bias_initializer="ones"),
    "separable_conv2d": lambda: layers.SeparableConv2D(4, 3),
    "separable_conv2d_options": lambda: layers.SeparableConv2D(2, 5, padding="same", depth_multiplier=2, dilation_rate=2,
                                                               use_bias=False, pointwise_initializer="lecun_normal"),
    "cropping2d": lambda: layers.Cropping2D(),
    "cropping2d_pairs": lambda: layers.Cropping2D(((1, 2), (0, 3))),
    "spatial_dropout2d": lambda: layers.SpatialDropout2D(0.2),
    "spatial_dropout2d_seed": lambda: layers.SpatialDropout2D(0.5, seed=4),
    "group_normalization": lambda: layers.GroupNormalization(),
    "group_normalization_options": lambda: layers.GroupNormalization(groups=4, axis=-1, epsilon=1e-5, center=False,
                                                                     gamma_initializer="random_uniform"),
})


def vision_model(name):
    if name == "vision":
        m = keras.Sequential([keras.Input((5, 5, 3)),
                              layers.Conv2DTranspose(4, 3, strides=2, padding="same", output_padding=1, activation="relu"),
                              layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
                              layers.SeparableConv2D(6, 3, strides=2), layers.GroupNormalization(2),
                              layers.Cropping2D(((1, 0), (0, 1))), layers.SpatialDropout2D(0.2),
                              layers.GlobalAveragePooling2D(), layers.Dense(3)], name="vision")
        optimizer = keras.optimizers.Adam(1e-2)
    else:
        x = keras.Input((3, 4, 2))
        t = layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh")(x)
        t = layers.Conv2DTranspose(2, (4, 3), strides=2, padding="same", output_padding=0)(t)
        t = layers.Conv2DTranspose(2, 2, strides=3)(t)
        m = keras.Model(x, layers.Dense(3)(layers.Flatten()(t)), name="vision_tconv")
        optimizer = keras.optimizers.RMSprop(1e-2)
    m.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def model(name):  # noqa: F811 (the models above, and the vision ones)
    return vision_model(name) if name in VISION_MODELS else _model_before_vision(name)


def data(name, m, rng, n):  # noqa: F811
    return _data_before_vision(name, m, rng, n)


# ---- Preprocessing layers saved inside models (predictions only) ----
#   prep_image   int32 pixels (6, 8, 3) -> Rescaling(1/255) -> Normalization(mean, variance given per
#                channel) -> Resizing(4, 4, crop_to_aspect_ratio) -> UpSampling2D(bilinear) ->
#                Conv2D -> Flatten -> Dense (functional)
#   prep_norm    (5,) -> Normalization adapted on fixed data (weights mean, variance, count) ->
#                Dense(relu) -> Dense (Sequential)
#   prep_encode  int32 ids (4,) in [0, 10) -> CategoryEncoding(10, multi_hot) and
#                CategoryEncoding(10, count) -> Concatenate -> Dense (functional)
PREPROCESSING_MODELS = ["prep_image", "prep_norm", "prep_encode"]
PREDICT_ONLY += PREPROCESSING_MODELS
SEED_ORDER += PREPROCESSING_MODELS
_model_before_preprocessing, _data_before_preprocessing = model, data


def preprocessing_model(name):
    if name == "prep_image":
        x = keras.Input((6, 8, 3), dtype="int32")
        h = layers.Rescaling(1 / 255.0)(x)
        h = layers.Normalization(mean=[0.5, 0.4, 0.6], variance=[0.1, 0.2, 0.05])(h)
        h = layers.Resizing(4, 4, crop_to_aspect_ratio=True)(h)
        h = layers.UpSampling2D(interpolation="bilinear")(h)
        h = layers.Conv2D(2, 3)(h)
        m = keras.Model(x, layers.Dense(3)(layers.Flatten()(h)), name="prep_image")
    elif name == "prep_norm":
        norm = layers.Normalization()
        norm.adapt((np.random.default_rng(5).standard_normal((50, 5)) * [1, 2, 3, 4, 5] + [0, 1, -1, 5, 2]).astype("float32"))
        m = keras.Sequential([keras.Input((5,)), norm, layers.Dense(6, activation="relu"), layers.Dense(3)], name="prep_norm")
    else:
        x = keras.Input((4,), dtype="int32")
        multi = layers.CategoryEncoding(10)(x)
        count = layers.CategoryEncoding(10, output_mode="count")(x)
        m = keras.Model(x, layers.Dense(3)(layers.Concatenate()([multi, count])), name="prep_encode")
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def preprocessing_data(name, m, rng, n):
    y = rng.integers(0, 3, size=(n,)).astype("int32")
    if name == "prep_image":
        return rng.integers(0, 256, size=(n, 6, 8, 3)).astype("int32"), y
    if name == "prep_encode":
        return rng.integers(0, 10, size=(n, 4)).astype("int32"), y
    return (rng.standard_normal((n, 5)) * 3 + 1).astype("float32"), y


def model(name):  # noqa: F811
    return preprocessing_model(name) if name in PREPROCESSING_MODELS else _model_before_preprocessing(name)


def data(name, m, rng, n):  # noqa: F811
    return preprocessing_data(name, m, rng, n) if name in PREPROCESSING_MODELS else _data_before_preprocessing(name, m, rng, n)


# ---- Merges: Subtract, Average, Maximum, Minimum and Dot (predictions only) ----
#   merge  two inputs a, b (3, 4): Subtract(a, b) = s, Average(a, b, s), Maximum(a, b), Minimum(a, s),
#          Dot(axes=2) of the average and the maximum (3, 3), Dot(axes=(1, 1), normalize=True) of the
#          minimum and a (4, 4), both flattened and concatenated -> Dense(3), trained with Adamax (its
#          state then loads both ways); models.json holds x as the list [a, b]
MERGE_MODELS = ["merge"]
PREDICT_ONLY += MERGE_MODELS
SEED_ORDER += MERGE_MODELS
_model_before_merge, _data_before_merge = model, data
LAYERS.update({
    "subtract": lambda: layers.Subtract(),
    "average": lambda: layers.Average(),
    "maximum": lambda: layers.Maximum(),
    "minimum": lambda: layers.Minimum(),
    "dot": lambda: layers.Dot(axes=2),
    "dot_pair_normalize": lambda: layers.Dot(axes=(1, 2), normalize=True),
})


def merge_model(name):
    a, b = keras.Input((3, 4)), keras.Input((3, 4))
    s = layers.Subtract()([a, b])
    average = layers.Average()([a, b, s])
    high = layers.Maximum()([a, b])
    low = layers.Minimum()([a, s])
    d1 = layers.Dot(axes=2)([average, high])
    d2 = layers.Dot(axes=(1, 1), normalize=True)([low, a])
    joined = layers.Concatenate()([layers.Flatten()(d1), layers.Flatten()(d2)])
    m = keras.Model([a, b], layers.Dense(3)(joined), name=name)
    m.compile(optimizer=keras.optimizers.Adamax(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def merge_data(name, m, rng, n):
    return [rng.standard_normal((n, 3, 4)).astype("float32") for _ in range(2)], rng.integers(0, 3, size=(n,)).astype("int32")


def model(name):  # noqa: F811
    return merge_model(name) if name in MERGE_MODELS else _model_before_merge(name)


def data(name, m, rng, n):  # noqa: F811
    return merge_data(name, m, rng, n) if name in MERGE_MODELS else _data_before_merge(name, m, rng, n)


# ---- Regularizers and constraints: layers whose configs carry them (predictions only) ----
#   regularized   Embedding(embeddings_regularizer, embeddings_constraint) -> LSTM(kernel, recurrent
#                 and bias regularizers and constraints, activity_regularizer) -> Dense(L1L2,
#                 MaxNorm, NonNeg) and, from a second input, Conv2D(L2, UnitNorm over three axes,
#                 activity L1) -> Flatten -> Dense(OrthogonalRegularizer, MinMaxNorm), concatenated
#                 (functional, two inputs: int ids (6,) and an image (4, 4, 2)); trained one epoch
REGULARIZER_MODELS = ["regularized"]
PREDICT_ONLY += REGULARIZER_MODELS
SEED_ORDER += REGULARIZER_MODELS
_model_before_regularizers, _data_before_regularizers = model, data
LAYERS.update({
    "dense_regularized": lambda: layers.Dense(3, kernel_regularizer=keras.regularizers.L1L2(0.01, 0.02),
                                              bias_regularizer="l2", activity_regularizer=keras.regularizers.L1(0.1),
                                              kernel_constraint=keras.constraints.MaxNorm(1.5, axis=0),
                                              bias_constraint=keras.constraints.NonNeg()),
    "conv2d_regularized": lambda: layers.Conv2D(2, 3, kernel_regularizer=keras.regularizers.OrthogonalRegularizer(0.3, "columns"),
                                                activity_regularizer="l2", kernel_constraint=keras.constraints.UnitNorm(axis=[0, 1, 2]),
                                                bias_constraint=keras.constraints.MinMaxNorm(0.1, 0.9, rate=0.5)),
    "embedding_regularized": lambda: layers.Embedding(5, 2, embeddings_regularizer=keras.regularizers.L2(0.5),
                                                      embeddings_constraint="max_norm"),
    "lstm_regularized": lambda: layers.LSTM(3, kernel_regularizer="l1", recurrent_regularizer=keras.regularizers.L2(0.2),
                                            bias_regularizer=keras.regularizers.L1L2(l2=0.1), activity_regularizer="l1",
                                            kernel_constraint="unit_norm", recurrent_constraint=keras.constraints.MaxNorm(3, 1),
                                            bias_constraint="non_neg"),
    "gru_regularized": lambda: layers.GRU(2, recurrent_regularizer=keras.regularizers.OrthogonalRegularizer(),
                                          recurrent_constraint=keras.constraints.MinMaxNorm(axis=1)),
    "conv1d_regularized": lambda: layers.Conv1D(2, 2, bias_regularizer="l1", kernel_constraint=keras.constraints.MaxNorm(2, [0, 1])),
    "simple_rnn_regularized": lambda: layers.SimpleRNN(2, kernel_regularizer="l2", bias_constraint="non_neg"),
})


def regularized_model(name):
    ids = keras.Input((6,), dtype="int32")
    image = keras.Input((4, 4, 2))
    R, C = keras.regularizers, keras.constraints
    e = layers.Embedding(9, 3, embeddings_regularizer=R.L2(0.01), embeddings_constraint=C.MaxNorm(0.5, axis=1))(ids)
    s = layers.LSTM(4, kernel_regularizer=R.L1(0.001), recurrent_regularizer=R.OrthogonalRegularizer(0.01),
                    bias_regularizer=R.L2(0.01), activity_regularizer=R.L2(0.001), kernel_constraint=C.MaxNorm(1.0),
                    recurrent_constraint=C.UnitNorm(axis=1), bias_constraint=C.NonNeg())(e)
    s = layers.Dense(3, kernel_regularizer=R.L1L2(0.001, 0.002), kernel_constraint=C.MaxNorm(2, axis=0),
                     bias_constraint=C.NonNeg())(s)
    c = layers.Conv2D(2, 3, kernel_regularizer=R.L2(0.01), activity_regularizer=R.L1(0.001),
                      kernel_constraint=C.UnitNorm(axis=[0, 1, 2]))(image)
    c = layers.Dense(3, kernel_regularizer=R.OrthogonalRegularizer(0.05, "columns"),
                     kernel_constraint=C.MinMaxNorm(0.2, 0.8, rate=0.5))(layers.Flatten()(c))
    m = keras.Model([ids, image], layers.Dense(3)(layers.Concatenate()([s, c])), name=name)
    m.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def regularized_data(name, m, rng, n):
    return [rng.integers(0, 9, size=(n, 6)).astype("int32"), rng.standard_normal((n, 4, 4, 2)).astype("float32")], \
        rng.integers(0, 3, size=(n,)).astype("int32")


def model(name):  # noqa: F811
    return regularized_model(name) if name in REGULARIZER_MODELS else _model_before_regularizers(name)


def data(name, m, rng, n):  # noqa: F811
    return regularized_data(name, m, rng, n) if name in REGULARIZER_MODELS else _data_before_regularizers(name, m, rng, n)

# ---- Lookups: IntegerLookup in a model (predictions only; Keras's lookup layers need TensorFlow,
# so this model is made with KERAS_BACKEND=tensorflow and tensorflow-cpu installed) ----
#   prep_lookup  int64 ids (4,) -> IntegerLookup(vocabulary given, 2 OOV indices, mask 0) ->
#                Embedding -> GlobalAveragePooling1D, and IntegerLookup(multi_hot, max_tokens 6)
#                adapted on fixed ids (its vocabulary in the archive's assets, not its config) ->
#                Concatenate -> Dense (functional); trained one epoch
LOOKUP_MODELS = ["prep_lookup"]
TENSORFLOW_MODELS = LOOKUP_MODELS  # made (and checked by tests/keras_interop.py) only where TensorFlow is installed
PREDICT_ONLY += LOOKUP_MODELS
SEED_ORDER += LOOKUP_MODELS
_model_before_lookups, _data_before_lookups = model, data
LOOKUP_IDS = [0, 5, 7, 12, 36, 42, 99, 1000, 1138]


def have_tensorflow():
    import importlib.util
    return importlib.util.find_spec("tensorflow") is not None


def lookup_model(name):
    ids = keras.Input((4,), dtype="int64")
    given = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], num_oov_indices=2, mask_token=0)(ids)
    embedded = layers.GlobalAveragePooling1D()(layers.Embedding(7, 3)(given))
    adapted = layers.IntegerLookup(output_mode="multi_hot", max_tokens=6)
    adapted.adapt(np.array([[12, 1138, 42, 42], [42, 1000, 36, 1138], [5, 5, 5, 12]], dtype="int64"))
    m = keras.Model(ids, layers.Dense(3)(layers.Concatenate()([embedded, adapted(ids)])), name=name)
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def lookup_data(name, m, rng, n):
    return rng.choice(LOOKUP_IDS, size=(n, 4)).astype("int64"), rng.integers(0, 3, size=(n,)).astype("int32")


def model(name):  # noqa: F811
    return lookup_model(name) if name in LOOKUP_MODELS else _model_before_lookups(name)


def data(name, m, rng, n):  # noqa: F811
    return lookup_data(name, m, rng, n) if name in LOOKUP_MODELS else _data_before_lookups(name, m, rng, n)


# ---- Regularizers and constraints on the vision, activation, normalisation and attention layers ----
#   regularized_layers  DepthwiseConv2D -> BatchNormalization -> SeparableConv2D -> Conv2DTranspose ->
#                       GroupNormalization -> PReLU -> Flatten and, from a second input,
#                       MultiHeadAttention -> LayerNormalization -> Flatten, concatenated -> Dense,
#                       every weight with a regularizer and a constraint (functional, two inputs: an
#                       image (6, 6, 2) and a sequence (4, 3)); trained one epoch
PENALTY_LAYER_MODELS = ["regularized_layers"]
PREDICT_ONLY += PENALTY_LAYER_MODELS
SEED_ORDER += PENALTY_LAYER_MODELS
_model_before_penalty_layers, _data_before_penalty_layers = model, data
LAYERS.update({
    "conv2d_transpose_regularized": lambda: layers.Conv2DTranspose(
        2, 3, kernel_regularizer=keras.regularizers.L1L2(0.01, 0.02), bias_regularizer="l2", activity_regularizer="l1",
        kernel_constraint=keras.constraints.MaxNorm(1.5, axis=[0, 1, 3]), bias_constraint="non_neg"),
    "depthwise_conv2d_regularized": lambda: layers.DepthwiseConv2D(
        3, depthwise_regularizer=keras.regularizers.L2(0.5), bias_regularizer="l1", activity_regularizer=keras.regularizers.L2(0.1),
        depthwise_constraint=keras.constraints.UnitNorm(axis=[0, 1]), bias_constraint=keras.constraints.MinMaxNorm(0.1, 0.9)),
    "separable_conv2d_regularized": lambda: layers.SeparableConv2D(
        4, 3, depthwise_regularizer="l2", pointwise_regularizer=keras.regularizers.L1(0.2), bias_regularizer=keras.regularizers.L1L2(0.01, 0.01),
        activity_regularizer="l2", depthwise_constraint="max_norm", pointwise_constraint=keras.constraints.MaxNorm(3, axis=[0, 1, 2]),
        bias_constraint="non_neg"),
    "prelu_regularized": lambda: layers.PReLU(alpha_regularizer=keras.regularizers.L2(0.3), alpha_constraint="non_neg"),
    "batch_normalization_regularized": lambda: layers.BatchNormalization(
        beta_regularizer="l1", gamma_regularizer=keras.regularizers.L2(0.2), beta_constraint=keras.constraints.MaxNorm(2),
        gamma_constraint="non_neg"),
    "layer_normalization_regularized": lambda: layers.LayerNormalization(
        beta_regularizer=keras.regularizers.L1L2(0.1, 0.2), gamma_regularizer="l2", beta_constraint="unit_norm",
        gamma_constraint=keras.constraints.MinMaxNorm(0.5, 1.5, rate=0.5)),
    "group_normalization_regularized": lambda: layers.GroupNormalization(
        groups=2, beta_regularizer="l2", gamma_regularizer=keras.regularizers.L1(0.05), beta_constraint="non_neg",
        gamma_constraint=keras.constraints.MaxNorm(1.5)),
    "multi_head_attention_regularized": lambda: layers.MultiHeadAttention(
        2, 3, kernel_regularizer=keras.regularizers.L2(0.01), bias_regularizer="l1", activity_regularizer=keras.regularizers.L1(0.02),
        kernel_constraint=keras.constraints.MaxNorm(2, axis=0), bias_constraint="non_neg"),
})


def penalty_layers_model(name):
    image = keras.Input((6, 6, 2))
    seq = keras.Input((4, 3))
    R, C = keras.regularizers, keras.constraints
    h = layers.DepthwiseConv2D(2, depth_multiplier=2, depthwise_regularizer=R.L2(0.01), bias_regularizer=R.L1(0.01),
                               activity_regularizer=R.L1(0.001), depthwise_constraint=C.MaxNorm(1.0, axis=[0, 1]),
                               bias_constraint=C.NonNeg())(image)
    h = layers.BatchNormalization(beta_regularizer=R.L1(0.01), gamma_regularizer=R.L2(0.01), beta_constraint=C.MaxNorm(1.0),
                                  gamma_constraint=C.NonNeg())(h)
    h = layers.SeparableConv2D(3, 2, depthwise_regularizer=R.L1L2(0.001, 0.002), pointwise_regularizer=R.L2(0.01),
                               bias_regularizer=R.L2(0.01), activity_regularizer=R.L2(0.001), depthwise_constraint=C.UnitNorm(axis=[0, 1]),
                               pointwise_constraint=C.MaxNorm(2.0, axis=[0, 1, 2]), bias_constraint=C.MinMaxNorm(0.0, 0.5, rate=0.5))(h)
    h = layers.Conv2DTranspose(2, 2, strides=2, kernel_regularizer=R.L1(0.001), bias_regularizer=R.L2(0.01),
                               activity_regularizer=R.L1(0.001), kernel_constraint=C.MaxNorm(1.5, axis=[0, 1, 3]),
                               bias_constraint=C.NonNeg())(h)
    h = layers.GroupNormalization(groups=2, beta_regularizer=R.L2(0.01), gamma_regularizer=R.L1(0.01), beta_constraint=C.MaxNorm(1.0),
                                  gamma_constraint=C.NonNeg())(h)
    h = layers.PReLU(alpha_regularizer=R.L2(0.01), alpha_constraint=C.NonNeg(), shared_axes=[1, 2])(h)
    a = layers.MultiHeadAttention(2, 3, kernel_regularizer=R.L2(0.01), bias_regularizer=R.L1(0.01), activity_regularizer=R.L2(0.001),
                                  kernel_constraint=C.MaxNorm(2.0, axis=0), bias_constraint=C.NonNeg())(seq, seq)
    a = layers.LayerNormalization(beta_regularizer=R.L1(0.01), gamma_regularizer=R.L2(0.01), beta_constraint=C.MaxNorm(1.0),
                                  gamma_constraint=C.MinMaxNorm(0.5, 1.5, rate=0.5))(a)
    joined = layers.Concatenate()([layers.Flatten()(h), layers.Flatten()(a)])
    m = keras.Model([image, seq], layers.Dense(3)(joined), name=name)
    m.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def penalty_layers_data(name, m, rng, n):
    return [rng.standard_normal((n, 6, 6, 2)).astype("float32"), rng.standard_normal((n, 4, 3)).astype("float32")], \
        rng.integers(0, 3, size=(n,)).astype("int32")


def model(name):  # noqa: F811
    return penalty_layers_model(name) if name in PENALTY_LAYER_MODELS else _model_before_penalty_layers(name)


def data(name, m, rng, n):  # noqa: F811
    return penalty_layers_data(name, m, rng, n) if name in PENALTY_LAYER_MODELS else _data_before_penalty_layers(name, m, rng, n)


# ---- Mixed precision: a model under Keras's mixed_bfloat16 dtype policy ----
#   mixed_bf16    Dense(relu) -> LayerNormalization -> Dense(tanh), all made under the global policy
#                 mixed_bfloat16, then Dense(3, dtype="float32") (functional; SGD): the configs record
#                 each layer's policy, and the weights are float32 (the policies' variable dtype)
#   low_float_policies  Dense(relu, dtype="float16") -> Dense(3, dtype="bfloat16") (functional,
#                 uncompiled): weights stored as float16 and as Keras's bfloat16 (opaque, attribute
#                 dtype="bfloat16")
# Keras computes these layers in bfloat16 or float16; its predictions (and the policies) go to
# keras/mixed_models.json, not models.json, since they are compared with a bfloat16 tolerance.
# Remade with every full run, or by naming it.
MIXED_MODELS = ["mixed_bf16", "low_float_policies"]
SEED_ORDER += MIXED_MODELS
_model_before_mixed, _data_before_mixed, _main_before_mixed = model, data, main


def mixed_model():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        x = keras.Input((6,))
        h = layers.Dense(8, activation="relu")(x)
        h = layers.LayerNormalization()(h)
        h = layers.Dense(8, activation="tanh")(h)
        m = keras.Model(x, layers.Dense(3, dtype="float32")(h), name="mixed_bf16")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    m.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def low_float_policies_model():
    x = keras.Input((6,))
    h = layers.Dense(8, activation="relu", dtype="float16")(x)
    return keras.Model(x, layers.Dense(3, dtype="bfloat16")(h), name="low_float_policies")


def model(name):  # noqa: F811
    if name == "low_float_policies":
        return low_float_policies_model()
    return mixed_model() if name in MIXED_MODELS else _model_before_mixed(name)


def data(name, m, rng, n):  # noqa: F811
    if name in MIXED_MODELS:
        return rng.standard_normal((n, 6)).astype("float32"), rng.integers(0, 3, size=(n,)).astype("int32")
    return _data_before_mixed(name, m, rng, n)


def make_mixed(name, models):
    i = SEED_ORDER.index(name)
    keras.utils.set_random_seed(10 + i)
    rng = np.random.default_rng(20 + i)
    m = model(name)
    if m.compiled:
        m.fit(*data(name, m, rng, 16), batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(OUT / f"{name}.keras")
    repack(OUT / f"{name}.keras")
    x, _ = data(name, m, rng, 4)
    models[name] = {"x": tensor(x), "y": tensor(np.asarray(m.predict(x, verbose=0), dtype="float32")),
                    "policies": {layer.name: layer.dtype_policy.name for layer in m.layers}}


def main(names):  # noqa: F811
    mixed = [n for n in names if n in MIXED_MODELS] if names else MIXED_MODELS
    others = [n for n in names if n not in MIXED_MODELS]
    if others or not names:
        _main_before_mixed(others)
    if mixed:
        OUT.mkdir(exist_ok=True)
        path = OUT / "mixed_models.json"
        models = json.loads(path.read_text()) if path.exists() and names else {}
        models["keras_version"] = keras.__version__
        for name in mixed:
            make_mixed(name, models)
        path.write_text(json.dumps(models) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
