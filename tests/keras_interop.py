#!/usr/bin/env python3
"""Checks that Keras 3 and Tandem read each other's `.weights.h5` files.

For four models built the same way in both (an MLP with Adam, a CNN with BatchNormalization and
RMSprop with momentum, a functional model with Embedding, MultiHeadAttention and
LayerNormalization with SGD with momentum, and a functional model with two branches, whose layer
order Keras derives from the graph, with RMSprop):

  (a) Tandem trains a few steps and saves; Keras loads the file into its compiled model and
      predicts on the same inputs: predictions within 1e-5 of Tandem's, and the optimizer's
      iteration count and every slot equal to Tandem's.
  (b) Keras trains a few steps and saves; Tandem loads the file and predicts: the same checks.

Then whole models in `.keras` archives, for the seven models of tests/data/make_keras_files.py (an
MLP, a CNN with BatchNormalization, Embedding -> causal MultiHeadAttention -> LayerNormalization,
two branches joined by Add, a model with the remaining 2-D layer classes, one on sequences with
every 1-D layer (Conv1D causal and strided, the 1-D pools and global pools), and Conv2D ->
GlobalMaxPooling2D):

  (c) Keras trains and saves an archive; Tandem's load_model predicts within 1e-5 of Keras, with
      Keras's step count.
  (d) Tandem trains one batch more and saves an archive; Keras's load_model predicts within 1e-5 of
      Tandem and has Tandem's step count; both train one more batch, and Keras's predictions stay
      within 1e-4 of Tandem's (which needs Tandem's optimizer state: moments and momentum).

  (e) A two-input, two-output model with a loss per output (see multi_io_checks).
  (f) Models checked by their predictions (make_keras_files.PREDICT_ONLY): "norm", functional with
      MultiHeadAttention (dropout 0.1), BatchNormalization and Dropout, and "uncompiled", a model
      never compiled. Keras saves `.keras` and `.h5`; Tandem loads both and predicts within 1e-5 of
      Keras; Tandem trains one batch (the compiled one) and saves a `.keras`, which Keras loads
      without warnings (compiled or not, as saved) and predicts within 1e-5 of Tandem.
  (g) Adamax's state in a .weights.h5 Tandem wrote loads in Keras (see adamax_checks).
  (h) A LossScaleOptimizer's state (mixed_float16) in a .keras Tandem wrote loads in Keras
      (see loss_scale_checks).

Keras runs on the JAX CPU backend, installed from PyPI into a virtual environment under the build
folder on first use. Usage (after building keras_interop_tool):

    python3 tests/keras_interop.py [--build build] [--skip-if-unavailable]

With --skip-if-unavailable (as ctest runs it), a machine where the virtual environment cannot be
made or pip cannot install Keras prints "skipped: <reason>" and exits with status 77.
"""
import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The versions the reference files under tests/data/keras were made and checked with: a later
# Keras may write its configs differently, which would then fail here for no fault of Tandem's.
KERAS_VERSION, JAX_VERSION = "3.15.1", "0.10.2"
PACKAGES = [f"keras=={KERAS_VERSION}", f"jax[cpu]=={JAX_VERSION}", "h5py", "numpy"]
TOLERANCE = 1e-5
MODELS = {"mlp": 10, "cnn": 5, "attn": 4, "branch": 3}  # name: number of classes


SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this script


def unavailable(reason: str, skip: bool):
    """Keras cannot be had on this machine: a skip (status 77) when asked for, else a failure."""
    if skip:
        print(f"skipped: {reason}")
        sys.exit(SKIPPED)
    sys.exit(reason)


def ensure_environment(build: Path, skip: bool) -> Path:
    """Creates build/keras-venv with Keras 3 and JAX (CPU) unless it is there already."""
    env = build / "keras-venv"
    python = env / "bin" / "python"
    if not python.exists():
        print(f"creating {env}")
        result = subprocess.run([sys.executable, "-m", "venv", str(env)], capture_output=True, text=True)
        if result.returncode != 0:
            unavailable(f"python3 -m venv {env} failed (on Debian and Ubuntu: apt-get install python3-venv): {result.stderr.strip()}", skip)
    probe = [str(python), "-c", f"import keras, jax, h5py, numpy; assert keras.__version__ == '{KERAS_VERSION}' and jax.__version__ == '{JAX_VERSION}'"]
    if subprocess.call(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, KERAS_BACKEND="jax")) != 0:
        print("installing " + " ".join(PACKAGES) + " from PyPI")
        result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PACKAGES], capture_output=True, text=True)
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).strip().splitlines()
            unavailable("pip cannot install Keras: " + (lines[-1] if lines else f"exit status {result.returncode}"), skip)
    return python


def load_in_keras(path):
    """Keras's load_model of an archive Tandem wrote: (the model or None, whether it loaded
    without an error or a warning), printing each warning and the error."""
    import keras

    clean = True
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = keras.models.load_model(path)
        for w in caught:
            print(f"  warning from Keras: {w.message}")
            clean = False
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        print(f"  Keras cannot load Tandem's archive: {type(e).__name__}: {e} -> FAIL")
        return None, False
    return model, clean


def keras_model(name):
    import keras
    from keras import layers

    if name == "mlp":
        model = keras.Sequential([keras.Input((28, 28)), layers.Flatten(), layers.Dense(64, activation="relu"),
                                  layers.Dropout(0.2), layers.Dense(10)])
        optimizer = keras.optimizers.Adam(1e-3)
    elif name == "cnn":
        model = keras.Sequential([keras.Input((12, 12, 1)), layers.Conv2D(8, 3, padding="same", activation="relu"),
                                  layers.BatchNormalization(), layers.MaxPooling2D(), layers.Conv2D(4, 3),
                                  layers.Flatten(), layers.Dense(5)])
        optimizer = keras.optimizers.RMSprop(1e-3, momentum=0.9)
    elif name == "branch":
        x = keras.Input((16,))
        n = layers.LayerNormalization()(layers.Dense(32, activation="relu")(x))
        d = layers.Dense(32)(x)
        model = keras.Model(x, layers.Dense(3)(layers.Add()([d, n])))
        optimizer = keras.optimizers.RMSprop(1e-3, momentum=0.5)
    else:
        x = keras.Input((7,), dtype="int32")
        e = layers.Embedding(20, 6)(x)
        a = layers.MultiHeadAttention(2, 3)(e, e)
        y = layers.Dense(4)(layers.Flatten()(layers.LayerNormalization()(a)))
        model = keras.Model(x, y)
        optimizer = keras.optimizers.SGD(1e-2, momentum=0.9)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.optimizer.build(model.trainable_variables)  # so that load_weights restores its state
    return model


def slots(optimizer):
    """The optimizer's slots by Keras's variable names, each a list over the trainable weights."""
    import numpy as np

    lists = {"momentum": getattr(optimizer, "_momentums", None) or getattr(optimizer, "momentums", None) or [],
             "velocity": getattr(optimizer, "_velocities", None) or []}
    return {k: [np.asarray(v) for v in vs] for k, vs in lists.items() if vs}


def array(j, dtype="float32"):
    import numpy as np

    return np.asarray(j["values"], dtype=dtype).reshape(j["shape"])


def compare(label, keras_y, tandem_state, keras_model):
    """Prints and returns whether predictions and optimizer state agree."""
    import numpy as np

    tandem_y = array(tandem_state["y"])
    diff = float(np.max(np.abs(keras_y - tandem_y))) if keras_y.shape == tandem_y.shape else float("inf")
    ok = diff <= TOLERANCE
    optimizer = keras_model.optimizer
    iterations = int(np.asarray(optimizer.iterations))
    ok &= iterations == tandem_state["iterations"]
    # Keras's j-th trainable weight is the Tandem weight with the same values (the files carried
    # them); its slots must be that weight's slots.
    keras_slots = slots(optimizer)
    tandem_weights = tandem_state["weights"]
    slot_ok = len(tandem_weights) == len(keras_model.trainable_variables)
    for j, variable in enumerate(keras_model.trainable_variables):
        value = np.asarray(variable)
        same = [t for t in tandem_weights
                if tuple(t["value"]["shape"]) == value.shape and np.array_equal(array(t["value"]), value)]
        slot_ok &= any(sorted(t["slots"]) == sorted(keras_slots) and
                       all(np.array_equal(keras_slots[name][j], array(t["slots"][name])) for name in keras_slots)
                       for t in same)
    ok &= slot_ok
    print(f"  {label}: max |y_keras - y_tandem| = {diff:.2e} (tolerance {TOLERANCE:g}); "
          f"iterations {iterations} vs {tandem_state['iterations']}; "
          f"slots {'+'.join(sorted(keras_slots)) or 'none'} {'equal' if slot_ok else 'DIFFER'} -> {'ok' if ok else 'FAIL'}")
    return ok


def run_checks(build: Path) -> bool:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
    import numpy as np

    tool = build / "keras_interop_tool"
    if not tool.exists():
        sys.exit(f"{tool} is missing: build it first (cd {build} && make keras_interop_tool)")
    work = build / "keras-interop"
    work.mkdir(exist_ok=True)
    print(f"Keras {keras.__version__}, backend {keras.backend.backend()}; files in {work}")
    subprocess.check_call([str(tool), "write", str(work)])

    ok = True
    keras_predictions = {}
    for name in MODELS:
        print(name)
        tandem_state = json.loads((work / f"tandem_{name}.json").read_text())
        x = array(tandem_state["x"], "int32" if name == "attn" else "float32")

        # (a) Keras reads Tandem's file.
        model = keras_model(name)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model.load_weights(work / f"tandem_{name}.weights.h5")
            for w in caught:
                print(f"  warning from Keras: {w.message}")
                ok = False
            ok &= compare("Keras reads Tandem's file", np.asarray(model.predict(x, verbose=0)), tandem_state, model)
        except ValueError as e:
            print(f"  Keras cannot load Tandem's file: {e} -> FAIL")
            ok = False

        # (b) Keras trains and saves; Tandem reads it below.
        keras.utils.set_random_seed(5)
        model = keras_model(name)
        rng = np.random.default_rng(6)
        if name == "attn":
            x_train = rng.integers(0, 20, size=(32, 7)).astype("int32")
        else:
            x_train = rng.standard_normal((32, *x.shape[1:])).astype("float32")
        y_train = rng.integers(0, MODELS[name], size=(32,)).astype("int32")
        model.fit(x_train, y_train, batch_size=8, epochs=1, shuffle=False, verbose=0)
        model.save_weights(work / f"keras_{name}.weights.h5")
        keras_predictions[name] = (np.asarray(model.predict(x, verbose=0)), model)

    if subprocess.call([str(tool), "read", str(work)]) != 0:
        print("Tandem cannot load Keras's files -> FAIL")
        return False
    for name in MODELS:
        print(name)
        tandem_state = json.loads((work / f"tandem_from_keras_{name}.json").read_text())
        keras_y, model = keras_predictions[name]
        ok &= compare("Tandem reads Keras's file", keras_y, tandem_state, model)
    return ok


def archive_checks(build: Path, work: Path) -> bool:
    """(c) and (d): whole models in `.keras` archives, both ways."""
    import keras
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import make_keras_files as fixtures

    names = fixtures.MODELS + fixtures.MASK_MODELS
    keras_y = {}
    for i, name in enumerate(names):
        keras.utils.set_random_seed(30 + i)
        rng = np.random.default_rng(40 + i)
        model = fixtures.model(name)
        x_train, y_train = fixtures.data(name, model, rng, 16)
        model.fit(x_train, y_train, batch_size=8, epochs=1, shuffle=False, verbose=0)
        model.save(work / f"archive_{name}.keras")
        x, _ = fixtures.data(name, model, rng, 4)
        data = {"x_dtype": [str(a.dtype) for a in x] if isinstance(x, list) else str(x.dtype), "x": fixtures.tensor(x)}
        for part in ["next", "more"]:
            xs, ys = fixtures.data(name, model, rng, 8)
            data[f"x_{part}"], data[f"y_{part}"] = fixtures.tensor(xs), fixtures.tensor(ys)
        (work / f"archive_{name}_data.json").write_text(json.dumps(data))
        keras_y[name] = (np.asarray(model.predict(x, verbose=0)), int(np.asarray(model.optimizer.iterations)), x, data)
    if subprocess.call([str(build / "keras_interop_tool"), "archives", str(work), *names]) != 0:
        print("Tandem cannot load Keras's archives -> FAIL")
        return False

    ok = True
    for name in names:
        print(f"{name} (.keras)")
        y, iterations, x, data = keras_y[name]
        tandem = json.loads((work / f"archive_{name}_tandem.json").read_text())
        diff = float(np.max(np.abs(y - array(tandem["y_loaded"]))))
        good = diff <= TOLERANCE and tandem["iterations_loaded"] == iterations
        print(f"  Tandem loads Keras's archive: max |y_keras - y_tandem| = {diff:.2e}; iterations {tandem['iterations_loaded']} "
              f"vs {iterations} -> {'ok' if good else 'FAIL'}")
        ok &= good
        model, clean = load_in_keras(work / f"archive_{name}_from_tandem.keras")
        ok &= clean
        if model is None:
            continue
        diff = float(np.max(np.abs(np.asarray(model.predict(x, verbose=0)) - array(tandem["y_saved"]))))
        iterations = int(np.asarray(model.optimizer.iterations))
        good = diff <= TOLERANCE and iterations == tandem["iterations_saved"]
        print(f"  Keras loads Tandem's archive: max |y_keras - y_tandem| = {diff:.2e}; iterations {iterations} "
              f"vs {tandem['iterations_saved']} -> {'ok' if good else 'FAIL'}")
        ok &= good
        x_more = ([array(t, d) for t, d in zip(data["x_more"], data["x_dtype"])] if isinstance(data["x_dtype"], list)
                  else array(data["x_more"], data["x_dtype"]))
        model.fit(x_more, array(data["y_more"], "int32"), batch_size=8, epochs=1, shuffle=False, verbose=0)
        diff = float(np.max(np.abs(np.asarray(model.predict(x, verbose=0)) - array(tandem["y_more"]))))
        good = diff <= 1e-4
        print(f"  both train one more batch from Tandem's optimizer state: max |y_keras - y_tandem| = {diff:.2e} "
              f"(tolerance 1e-4) -> {'ok' if good else 'FAIL'}")
        ok &= good
    return ok


def multi_io_checks(build: Path, work: Path) -> bool:
    """(e) A two-input, two-output model with a loss per output and loss weights, in `.keras` archives
    both ways: Keras's loaded by Tandem, and Tandem's (after one more epoch) loaded by Keras with
    the same predictions, losses and loss weights."""
    import keras
    import numpy as np
    from keras import layers

    keras.utils.set_random_seed(50)
    img, tab = keras.Input((4, 4, 1), name="img"), keras.Input((5,), name="tab")
    a = layers.Dense(6, activation="relu", name="img_dense")(layers.Flatten(name="flat")(img))
    b = layers.Dense(6, activation="tanh", name="tab_dense")(tab)
    h = layers.Dense(8, activation="relu", name="trunk")(layers.Concatenate(name="join")([a, b]))
    model = keras.Model([img, tab], [layers.Dense(3, activation="softmax", name="cls")(h), layers.Dense(1, name="reg")(h)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[1.0, 0.5],
                  metrics=[["accuracy"], ["mae"]])
    rng = np.random.default_rng(51)
    xi, xt = rng.uniform(0, 1, (24, 4, 4, 1)).astype("float32"), rng.normal(0, 1, (24, 5)).astype("float32")
    yc, yr = rng.integers(0, 3, (24,)).astype("int32"), rng.normal(0, 1, (24, 1)).astype("float32")
    model.fit([xi, xt], [yc, yr], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(work / "multi_io.keras")
    tensor = lambda v: {"shape": list(v.shape), "values": v.reshape(-1).astype("float64").tolist()}  # noqa: E731
    (work / "multi_io_data.json").write_text(json.dumps({"img": tensor(xi), "tab": tensor(xt), "cls": tensor(yc), "reg": tensor(yr)}))
    keras_y = model.predict([xi, xt], verbose=0)
    if subprocess.call([str(build / "keras_interop_tool"), "multi_io", str(work)]) != 0:
        print("Tandem cannot load Keras's two-output archive -> FAIL")
        return False
    tandem = json.loads((work / "multi_io_tandem.json").read_text())
    print("multi_io (.keras)")
    diff = max(float(np.max(np.abs(k - array(t)))) for k, t in zip(keras_y, tandem["y_loaded"]))
    ok = diff <= TOLERANCE
    print(f"  Tandem loads Keras's archive: max |y_keras - y_tandem| = {diff:.2e} -> {'ok' if ok else 'FAIL'}")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = keras.models.load_model(work / "multi_io_from_tandem.keras")
        for w in caught:
            print(f"  warning from Keras: {w.message}")
            ok = False
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        print(f"  Keras cannot load Tandem's archive: {type(e).__name__}: {e} -> FAIL")
        return False
    diff = max(float(np.max(np.abs(k - array(t)))) for k, t in zip(loaded.predict([xi, xt], verbose=0), tandem["y_saved"]))
    iterations = int(np.asarray(loaded.optimizer.iterations))
    weights = list(loaded.compile_config.get("loss_weights") or []) if hasattr(loaded, "compile_config") else []
    good = diff <= TOLERANCE and iterations == tandem["iterations_saved"] and len(loaded.loss) == 2
    print(f"  Keras loads Tandem's archive: max |y_keras - y_tandem| = {diff:.2e}; iterations {iterations} vs "
          f"{tandem['iterations_saved']}; {len(loaded.loss)} losses, loss_weights {weights or loaded.get_compile_config().get('loss_weights')} "
          f"-> {'ok' if good else 'FAIL'}")
    return ok and good


def penalty_configs(model) -> dict:
    """Every layer's set *_regularizer and *_constraint arguments, serialised, by layer and key."""
    import keras
    out = {}
    for layer in model.layers:
        for key, value in layer.get_config().items():
            if key.endswith(("_regularizer", "_constraint")) and value is not None:
                out[f"{layer.name}/{key}"] = keras.saving.serialize_keras_object(value)
    return out


def predict_only_checks(build: Path, work: Path, tensorflow_models: bool = False) -> bool:
    """(f): the models of make_keras_files.PREDICT_ONLY, both ways: those that need TensorFlow
    (Keras's lookup layers) alone when `tensorflow_models`, in a process on Keras's TensorFlow
    backend; the others otherwise."""
    import keras
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import make_keras_files as fixtures

    keras_y = {}
    names = [n for n in fixtures.PREDICT_ONLY if (n in fixtures.TENSORFLOW_MODELS) == tensorflow_models]
    for i, name in enumerate(fixtures.PREDICT_ONLY):
        if name not in names:
            continue
        keras.utils.set_random_seed(60 + i)
        rng = np.random.default_rng(70 + i)
        model = fixtures.model(name)
        if model.compiled:
            model.fit(*fixtures.data(name, model, rng, 16), batch_size=8, epochs=1, shuffle=False, verbose=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Keras's note that `.h5` is its legacy format
            model.save(work / f"archive_{name}.keras")
            if name not in fixtures.TENSORFLOW_MODELS:  # their adapted vocabularies live in assets, which .h5 lacks
                model.save(work / f"archive_{name}.h5")
        x, _ = fixtures.data(name, model, rng, 4)
        x_next, y_next = fixtures.data(name, model, rng, 8)
        data = {"x": fixtures.tensor(x), "x_next": fixtures.tensor(x_next), "y_next": fixtures.tensor(y_next)}
        (work / f"archive_{name}_data.json").write_text(json.dumps(data))
        keras_y[name] = (np.asarray(model.predict(x, verbose=0)), x, model.compiled, penalty_configs(model))
    if subprocess.call([str(build / "keras_interop_tool"), "predict", str(work), *names]) != 0:
        print("Tandem cannot load Keras's files -> FAIL")
        return False

    ok = True
    for name in names:
        y, x, compiled, penalties = keras_y[name]
        tandem = json.loads((work / f"archive_{name}_tandem.json").read_text())
        kinds = ".keras and .h5" if tandem["y_loaded_h5"] is not None else ".keras"
        print(f"{name} ({kinds}, {'compiled' if compiled else 'uncompiled'})")
        for kind, key in [(".keras", "y_loaded"), (".h5", "y_loaded_h5")]:
            if tandem[key] is None:
                continue
            diff = float(np.max(np.abs(y - array(tandem[key]))))
            good = diff <= TOLERANCE and tandem["compiled"] == compiled
            print(f"  Tandem loads Keras's {kind}: max |y_keras - y_tandem| = {diff:.2e}; "
                  f"{'compiled' if tandem['compiled'] else 'uncompiled'} -> {'ok' if good else 'FAIL'}")
            ok &= good
        model, clean = load_in_keras(work / f"archive_{name}_from_tandem.keras")
        ok &= clean
        if model is None:
            continue
        diff = float(np.max(np.abs(np.asarray(model.predict(x, verbose=0)) - array(tandem["y_saved"]))))
        iterations = int(np.asarray(model.optimizer.iterations)) if model.compiled else 0
        good = diff <= TOLERANCE and model.compiled == compiled and iterations == tandem["iterations_saved"]
        print(f"  Keras loads Tandem's archive: max |y_keras - y_tandem| = {diff:.2e}; "
              f"{'compiled, iterations ' + str(iterations) if model.compiled else 'uncompiled'} -> {'ok' if good else 'FAIL'}")
        ok &= good
        if penalties:  # the regularizers and constraints Keras reads from Tandem's archive are Keras's own
            same = penalty_configs(model) == penalties
            print(f"  with Keras's {len(penalties)} regularizer and constraint arguments -> {'ok' if same else 'FAIL'}")
            ok &= same
    return ok


def adamax_checks(build: Path, work: Path) -> bool:
    """(g): Tandem trains Keras's MLP 3 steps with Adamax (tests/data/training_refs.json) and saves a
    .weights.h5; Keras loads it into the same model with Adamax built and has Keras's own weights and
    optimizer variables after those steps (momentum and norm per weight), then takes Keras's 4th step."""
    import keras
    import numpy as np

    refs = json.loads((ROOT / "tests" / "data" / "training_refs.json").read_text())["adamax"]
    (work / "adamax_data.json").write_text(json.dumps({k: refs[k] for k in ("x", "y", "init")}))
    if subprocess.call([str(build / "keras_interop_tool"), "adamax", str(work)]) != 0:
        print("Tandem cannot train the Adamax MLP -> FAIL")
        return False
    inp = keras.Input((4,))
    model = keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(5, activation="relu")(inp)))
    model.compile(optimizer=keras.optimizers.Adamax(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.optimizer.build(model.trainable_variables)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.load_weights(work / "adamax_from_tandem.weights.h5")
    ok = not caught
    for w in caught:
        print(f"  warning from Keras: {w.message}")
    weights = max(float(np.max(np.abs(np.asarray(w).reshape(-1) - np.asarray(r)))) for w, r in zip(model.get_weights(), refs["final"]))
    state = max(float(np.max(np.abs(np.asarray(v).reshape(-1) - np.asarray(r["values"]))))
                for v, r in zip(model.optimizer.variables, refs["optimizer_variables"]))
    # The same variables in the same order (the layers' automatic names depend on what this
    # process made before: compare what follows them).
    kinds = [v.name.rsplit("_", 1)[-1] for v in model.optimizer.variables]
    names = kinds == [r["name"].rsplit("_", 1)[-1] for r in refs["optimizer_variables"]]
    x = np.asarray(refs["x"], dtype="float32").reshape(8, 4)
    y = np.asarray(refs["y"], dtype="int32")
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    after = max(float(np.max(np.abs(np.asarray(w).reshape(-1) - np.asarray(r)))) for w, r in zip(model.get_weights(), refs["after_fourth"]))
    good = weights <= TOLERANCE and state <= TOLERANCE and after <= TOLERANCE and names
    print(f"adamax: Keras reads Tandem's .weights.h5: max |weights - Keras's| = {weights:.2e}, "
          f"max |optimizer variables - Keras's| = {state:.2e}, next step {after:.2e} -> {'ok' if good and ok else 'FAIL'}")
    return good and ok


def loss_scale_checks(build: Path, work: Path) -> bool:
    """(h): Tandem trains a model under mixed_float16 with a LossScaleOptimizer from a scale of 2^40
    (so some steps are skipped and the scale is its own) and saves a .keras; Keras loads it, wraps
    the compiled Adam in its LossScaleOptimizer as its compile does, and has Tandem's scale, step
    counter and iteration count."""
    import keras
    import numpy as np

    if subprocess.call([str(build / "keras_interop_tool"), "loss_scale", str(work)]) != 0:
        print("Tandem cannot train the mixed_float16 model -> FAIL")
        return False
    state = json.loads((work / "loss_scale_state.json").read_text())
    model = keras.saving.load_model(work / "loss_scale_from_tandem.keras")
    optimizer = model.optimizer
    wrapped = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    got = {"dynamic_scale": float(np.asarray(optimizer.dynamic_scale)) if wrapped else None,
           "step_counter": int(np.asarray(optimizer.step_counter)) if wrapped else None,
           "iterations": int(np.asarray(optimizer.iterations))}
    good = wrapped and all(got[k] == state[k] for k in state) and state["iterations"] < 6
    print(f"loss_scale: Keras reads Tandem's mixed_float16 .keras: {got} against Tandem's {state} -> {'ok' if good else 'FAIL'}")
    return good


def tensorflow_checks(build: Path) -> bool:
    """The models that need TensorFlow (Keras's lookup layers fail under JAX's tracing), checked
    in a process on Keras's TensorFlow backend where tensorflow is installed next to Keras; a note
    that they were skipped elsewhere."""
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import make_keras_files as fixtures

    if not fixtures.have_tensorflow():
        print("skipped " + ", ".join(fixtures.TENSORFLOW_MODELS) + ": Keras's lookup layers need TensorFlow, which is not "
              "installed next to Keras here (pip install tensorflow-cpu in the virtual environment to check them)")
        return True
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.call([sys.executable, __file__, "--build", str(build), "--in-venv", "--tensorflow-models"], env=env) == 0


# ---- Mixed precision (make_keras_files.MIXED_MODELS): the layers' dtype policies, both ways ----
# Tandem records and saves the policies but computes in float32 until its casting pass exists, so
# the predictions of Keras's mixed_bfloat16 model are compared at a bfloat16 tolerance only.
MIXED_TOLERANCE = 0.05


def mixed_precision_checks(build: Path, work: Path) -> bool:
    import keras
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import make_keras_files as fixtures

    work.mkdir(parents=True, exist_ok=True)
    made = {}
    for i, name in enumerate(fixtures.MIXED_MODELS):
        keras.utils.set_random_seed(90 + i)
        rng = np.random.default_rng(95 + i)
        model = fixtures.model(name)
        if model.compiled:
            model.fit(*fixtures.data(name, model, rng, 16), batch_size=8, epochs=1, shuffle=False, verbose=0)
        model.save(work / f"archive_{name}.keras")
        x, _ = fixtures.data(name, model, rng, 4)
        x_next, y_next = fixtures.data(name, model, rng, 8)
        data = {"x": fixtures.tensor(x), "x_next": fixtures.tensor(x_next), "y_next": fixtures.tensor(y_next)}
        (work / f"archive_{name}_data.json").write_text(json.dumps(data))
        policies = {layer.name: layer.dtype_policy.name for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)}
        made[name] = (np.asarray(model.predict(x, verbose=0)), x, policies)
    if subprocess.call([str(build / "keras_interop_tool"), "predict", str(work), *fixtures.MIXED_MODELS]) != 0:
        print("Tandem cannot load Keras's mixed-precision files -> FAIL")
        return False
    ok = True
    for name, (y, x, policies) in made.items():
        tandem = json.loads((work / f"archive_{name}_tandem.json").read_text())
        diff = float(np.max(np.abs(y - array(tandem["y_loaded"]))))
        good = diff <= MIXED_TOLERANCE
        print(f"{name} (policies {sorted(set(policies.values()))})\n  Tandem loads Keras's .keras: max |y_keras - y_tandem| = "
              f"{diff:.2e} (16 bits against float32) -> {'ok' if good else 'FAIL'}")
        ok &= good
        model, clean = load_in_keras(work / f"archive_{name}_from_tandem.keras")
        ok &= clean
        if model is None:
            continue
        got = {layer.name: layer.dtype_policy.name for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)}
        diff = float(np.max(np.abs(np.asarray(model.predict(x, verbose=0)) - array(tandem["y_saved"]))))
        good = got == policies and diff <= MIXED_TOLERANCE
        print(f"  Keras loads Tandem's archive: the same policies: {got == policies}; max |y_keras - y_tandem| = {diff:.2e} "
              f"-> {'ok' if good else 'FAIL'}")
        ok &= good
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build"), help="the CMake build folder (default: build)")
    parser.add_argument("--skip-if-unavailable", action="store_true",
                        help=f"exit with status {SKIPPED} (skipped) when Keras cannot be installed")
    parser.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tensorflow-models", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    if args.tensorflow_models:
        sys.exit(0 if predict_only_checks(build, build / "keras-interop", tensorflow_models=True) else 1)
    if not args.in_venv:
        python = ensure_environment(build, args.skip_if_unavailable)
        os.execv(str(python), [str(python), __file__, "--build", str(build), "--in-venv"])
    ok = run_checks(build)
    ok &= archive_checks(build, build / "keras-interop")
    ok &= multi_io_checks(build, build / "keras-interop")
    ok &= predict_only_checks(build, build / "keras-interop")
    ok &= adamax_checks(build, build / "keras-interop")
    ok &= loss_scale_checks(build, build / "keras-interop")
    ok &= mixed_precision_checks(build, build / "keras-interop")
    ok &= tensorflow_checks(build)
    print("Keras interop: " + ("PASSED" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
