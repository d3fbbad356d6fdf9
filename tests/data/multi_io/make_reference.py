"""Reference for tests/test_multi_io.cpp: a two-input, two-output functional model trained by
Keras 3 (JAX backend, float32) on fixed data, with per-output losses and loss weights.

Model: img (4, 4, 1) -> Flatten -> Dense(6, relu) ┐
       tab (5)       -> Dense(6, tanh)           ┴ Concatenate -> Dense(8, relu) -> cls: Dense(3, softmax)
                                                                                 -> reg: Dense(1)
compile(SGD(0.1, momentum=0.9), loss=[sparse_categorical_crossentropy, mse], loss_weights=[1, 0.5],
        metrics=[["accuracy"], ["mae"]]); fit 24 rows, batch 8, 2 epochs, shuffle=False.

Run with a Python that has keras>=3, jax[cpu] and numpy (not the README's commands):
    KERAS_BACKEND=jax python tests/data/multi_io/make_reference.py   (writes reference.json beside it)
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

rng = np.random.default_rng(11)
img_x = rng.uniform(0, 1, (24, 4, 4, 1)).astype("float32")
tab_x = rng.normal(0, 1, (24, 5)).astype("float32")
cls_y = rng.integers(0, 3, (24,)).astype("int32")
reg_y = rng.normal(0, 1, (24, 1)).astype("float32")

img = keras.Input((4, 4, 1), name="img")
tab = keras.Input((5,), name="tab")
a = layers.Dense(6, activation="relu", name="img_dense")(layers.Flatten(name="flat")(img))
b = layers.Dense(6, activation="tanh", name="tab_dense")(tab)
h = layers.Dense(8, activation="relu", name="trunk")(layers.Concatenate(name="join")([a, b]))
cls = layers.Dense(3, activation="softmax", name="cls")(h)
reg = layers.Dense(1, name="reg")(h)
model = keras.Model([img, tab], [cls, reg])
# Fixed, not drawn by Keras's initialisers, so the test needs no Keras RNG.
initial = [rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()]
model.set_weights(initial)
model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
              loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[1.0, 0.5],
              metrics=[["accuracy"], ["mae"]])
hist = model.fit([img_x, tab_x], [cls_y, reg_y], batch_size=8, epochs=2, shuffle=False, verbose=0)
evaluated = model.evaluate([img_x, tab_x], [cls_y, reg_y], batch_size=8, verbose=0, return_dict=True)
pred_cls, pred_reg = model.predict([img_x, tab_x], batch_size=8, verbose=0)

out = {
    "keras_version": keras.__version__,
    "inputs": {"img": img_x.reshape(-1).tolist(), "tab": tab_x.reshape(-1).tolist()},
    "targets": {"cls": cls_y.tolist(), "reg": reg_y.reshape(-1).tolist()},
    "weight_names": [w.path for w in model.weights],
    "initial": [w.reshape(-1).tolist() for w in initial],
    "final": [w.reshape(-1).tolist() for w in model.get_weights()],
    "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
    "evaluate": {k: float(v) for k, v in evaluated.items()},
    "predictions": {"cls": pred_cls.reshape(-1).tolist(), "reg": pred_reg.reshape(-1).tolist()},
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json"), "w") as f:
    json.dump(out, f)
print(out["weight_names"])
print(out["history"])
print(out["evaluate"])
