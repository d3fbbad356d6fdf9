#!/usr/bin/env python3
"""Writes tests/data/training_refs.json: Keras 3's values for the losses, metrics, Adamax and merge
layers that tests/test_losses_metrics.cpp and tests/test_adamax.cpp compare Tandem with.

  losses   fixed predictions and targets (4 rows, 3 columns): per-sample values of Huber (δ = 1 and
           0.5), LogCosh, Poisson, KLDivergence, and CategoricalCrossentropy / BinaryCrossentropy
           with label smoothing (probabilities and logits); each loss's value with row weights
           (Keras's sample_weight, "sum_over_batch_size"); each class's get_config
  metrics  F1Score (every average, with and without threshold), R2Score (each aggregation,
           num_regressors), MeanIoU (sparse and argmax predictions, ignore_class) over two batches
           of update_state, without and with sample weights; their get_config
  adamax   a tiny MLP (4 -> 5 relu -> 3) trained 3 full-batch steps with Adamax(lr=0.01) and
           SparseCategoricalCrossentropy(from_logits): the losses (each before its step), the
           weights after, the optimizer's variables after (Keras's order and names), and Adamax's
           get_config; Keras's .weights.h5 of that state (adamax_mlp.weights.h5) and the loss and
           weights of a 4th step from it
  merge    Subtract, Average, Maximum, Minimum and Dot (axes 1, (2, 2), (1, 2), normalize) on fixed
           inputs: Keras's outputs and get_config; Maximum and Minimum on inputs masked by Masking

Run with the Keras 3 + JAX environment (float32, CPU):
  KERAS_BACKEND=jax python tests/data/make_training_refs.py
"""
import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = Path(__file__).resolve().parent / "training_refs.json"
WEIGHTS = Path(__file__).resolve().parent / "adamax_mlp.weights.h5"  # the Adamax MLP after 3 steps, by Keras


def flat(a):
    return np.asarray(a, dtype=np.float64).reshape(-1).tolist()


def losses_refs(rng):
    probs = rng.uniform(0.05, 1.0, size=(4, 3)).astype("float32")
    probs /= probs.sum(axis=1, keepdims=True)
    one_hot = np.eye(3, dtype="float32")[[0, 2, 1, 2]]
    regress_pred = rng.uniform(0.1, 3.0, size=(4, 3)).astype("float32")  # positive: Poisson's log
    regress_true = (regress_pred + rng.normal(0, 1.2, size=(4, 3))).astype("float32")
    regress_true = np.abs(regress_true)
    logits = rng.normal(0, 2, size=(4, 3)).astype("float32")
    binary = rng.integers(0, 2, size=(4, 3)).astype("float32")
    sigmoid = (1 / (1 + np.exp(-logits))).astype("float32")
    weights = np.array([0.5, 2.0, 1.0, 0.0], dtype="float32")
    cases = []

    def add(name, loss, y_true, y_pred):
        per = loss.call(y_true, y_pred) if hasattr(loss, "call") else loss(y_true, y_pred)
        cases.append({"name": name, "class_name": type(loss).__name__, "config": loss.get_config(),
                      "y_true": flat(y_true), "y_pred": flat(y_pred), "per_sample": flat(per),
                      "loss": float(loss(y_true, y_pred)), "weighted_loss": float(loss(y_true, y_pred, sample_weight=weights))})

    add("huber", keras.losses.Huber(), regress_true, regress_pred)
    add("huber_half", keras.losses.Huber(delta=0.5), regress_true, regress_pred)
    add("log_cosh", keras.losses.LogCosh(), regress_true, regress_pred)
    add("poisson", keras.losses.Poisson(), regress_true, regress_pred)
    add("kl_divergence", keras.losses.KLDivergence(), one_hot * 0.7 + 0.1, probs)
    add("cce_smooth", keras.losses.CategoricalCrossentropy(label_smoothing=0.2), one_hot, probs)
    add("cce_smooth_logits", keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), one_hot, logits)
    add("bce_smooth", keras.losses.BinaryCrossentropy(label_smoothing=0.2), binary, sigmoid)
    add("bce_smooth_logits", keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.3), binary, logits)
    return {"rows": 4, "columns": 3, "sample_weight": flat(weights), "cases": cases}


def metrics_refs(rng):
    scores = [rng.uniform(0, 1, size=(5, 4)).astype("float32") for _ in range(2)]
    labels = [rng.integers(0, 4, size=(5,)) for _ in range(2)]
    one_hot = [np.eye(4, dtype="float32")[y] for y in labels]
    multi = [(rng.uniform(0, 1, size=(5, 4)) > 0.5).astype("float32") for _ in range(2)]
    reg_true = [rng.normal(0, 1, size=(5, 3)).astype("float32") for _ in range(2)]
    reg_pred = [(t + rng.normal(0, 0.6, size=(5, 3))).astype("float32") for t in reg_true]
    weights = [np.array([1.0, 0.5, 2.0, 0.0, 1.5], dtype="float32"), np.array([2.0, 1.0, 1.0, 3.0, 0.5], dtype="float32")]
    int_weights = [np.array([1, 0, 2, 1, 3], dtype="float32"), np.array([2, 1, 1, 0, 1], dtype="float32")]
    cases = []

    def add(name, make, y_true, y_pred, w):
        values = {}
        for key, sw in (("result", None), ("weighted_result", w)):
            m = make()
            for b in range(2):
                m.update_state(y_true[b], y_pred[b], sample_weight=None if sw is None else sw[b])
            values[key] = flat(m.result())
        cases.append({"name": name, "class_name": type(m).__name__, "config": m.get_config(),
                      "y_true": [flat(t) for t in y_true], "y_pred": [flat(p) for p in y_pred],
                      "true_shape": list(np.asarray(y_true[0]).shape), "pred_shape": list(np.asarray(y_pred[0]).shape),
                      "sample_weight": [flat(x) for x in w], **values})

    for average in (None, "micro", "macro", "weighted"):
        add(f"f1_{average}", lambda a=average: keras.metrics.F1Score(average=a), one_hot, scores, weights)
        add(f"f1_{average}_threshold", lambda a=average: keras.metrics.F1Score(average=a, threshold=0.5), multi, scores, weights)
    for agg in ("uniform_average", "variance_weighted_average", None):
        add(f"r2_{agg}", lambda a=agg: keras.metrics.R2Score(class_aggregation=a), reg_true, reg_pred, weights)
    add("r2_regressors", lambda: keras.metrics.R2Score(num_regressors=2), reg_true, reg_pred, weights)
    ids = [np.argmax(s, axis=1).astype("float32") for s in scores]
    add("mean_iou", lambda: keras.metrics.MeanIoU(num_classes=4), [y.astype("float32") for y in labels], ids, int_weights)
    add("mean_iou_scores", lambda: keras.metrics.MeanIoU(num_classes=4, sparse_y_pred=False), [y.astype("float32") for y in labels],
        scores, int_weights)
    add("mean_iou_ignore", lambda: keras.metrics.MeanIoU(num_classes=4, sparse_y_pred=False, ignore_class=1),
        [y.astype("float32") for y in labels], scores, int_weights)
    return {"cases": cases}


def adamax_refs(rng):
    x = rng.normal(0, 1, size=(8, 4)).astype("float32")
    y = rng.integers(0, 3, size=(8,)).astype("int32")
    keras.utils.set_random_seed(3)
    inp = keras.Input((4,))
    model = keras.Model(inp, layers.Dense(3)(layers.Dense(5, activation="relu")(inp)))
    init = [np.asarray(w) for w in model.get_weights()]
    opt = keras.optimizers.Adamax(learning_rate=0.01)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    out = {"x": flat(x), "y": y.tolist(), "init": [flat(w) for w in init], "losses": h.history["loss"],
           "final": [flat(w) for w in model.get_weights()],
           "optimizer_variables": [{"name": v.name, "path": v.path, "values": flat(v)} for v in opt.variables],
           "config": opt.get_config()}
    # The state after 3 steps in Keras's own file, then a 4th step: a reader that restores the
    # optimizer state exactly takes the same 4th step.
    model.save_weights(WEIGHTS)
    h = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    out.update({"fourth_loss": h.history["loss"][0], "after_fourth": [flat(w) for w in model.get_weights()]})
    return out


def merge_refs(rng):
    a = rng.normal(0, 1, size=(2, 3, 4)).astype("float32")
    b = rng.normal(0, 1, size=(2, 3, 4)).astype("float32")
    c = rng.normal(0, 1, size=(2, 3, 4)).astype("float32")
    v = rng.normal(0, 1, size=(2, 4)).astype("float32")
    w = rng.normal(0, 1, size=(2, 4)).astype("float32")
    m = rng.normal(0, 1, size=(2, 5, 3)).astype("float32")
    cases = []

    def add(name, layer, inputs):
        out = layer(inputs)
        cases.append({"name": name, "class_name": type(layer).__name__, "config": layer.get_config(),
                      "inputs": [{"shape": list(t.shape), "values": flat(t)} for t in inputs],
                      "output": {"shape": list(np.asarray(out).shape), "values": flat(out)}})

    add("subtract", layers.Subtract(), [a, b])
    add("average", layers.Average(), [a, b, c])
    add("maximum", layers.Maximum(), [a, b, c])
    add("minimum", layers.Minimum(), [a, b])
    add("dot_vectors", layers.Dot(axes=1), [v, w])
    add("dot_normalize", layers.Dot(axes=1, normalize=True), [v, w])
    add("dot_last", layers.Dot(axes=(2, 2)), [a, b])
    add("dot_mixed", layers.Dot(axes=(1, 2)), [a, m])
    add("dot_negative", layers.Dot(axes=-1, normalize=True), [a, c])

    # Masked inputs (Masking(0.0) on the inputs named in `masked`): Maximum and Minimum take a
    # masked step from the other input.
    def add_masked(name, layer, inputs, masked):
        symbols = [keras.Input(t.shape[1:]) for t in inputs]
        merged = layer([layers.Masking(0.0)(s) if i in masked else s for i, s in enumerate(symbols)])
        out = keras.Model(symbols, merged).predict(inputs, verbose=0)
        cases.append({"name": name, "class_name": type(layer).__name__, "config": layer.get_config(), "masked": masked,
                      "inputs": [{"shape": list(t.shape), "values": flat(t)} for t in inputs],
                      "output": {"shape": list(np.asarray(out).shape), "values": flat(out)}})

    pa, pb, pc = (t.copy() for t in (a, b, c))
    pa[0, 1] = 0.0
    pa[1, 2] = 0.0
    pb[0, 2] = 0.0
    pb[1, 2] = 0.0
    pc[1, 0] = 0.0
    add_masked("maximum_masked", layers.Maximum(), [pa, pb], [0, 1])
    add_masked("minimum_masked", layers.Minimum(), [pa, pb, pc], [0, 1, 2])
    add_masked("maximum_one_masked", layers.Maximum(), [pa, pb, pc], [0, 2])
    return {"cases": cases}


def main():
    rng = np.random.default_rng(7)
    refs = {"keras_version": keras.__version__, "losses": losses_refs(rng), "metrics": metrics_refs(rng),
            "adamax": adamax_refs(rng), "merge": merge_refs(rng)}
    OUT.write_text(json.dumps(refs, indent=None) + "\n")
    print(f"{OUT.name}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
