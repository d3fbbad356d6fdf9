"""Reference for tests/test_metrics.cpp: Keras 3's stateful metrics (Precision, Recall, AUC with
its defaults, top-k accuracy with k = 5) updated batch by batch (batches of 8 of 40 rows) on fixed
predictions and targets.

Run with a Python that has keras>=3, jax[cpu] and numpy (not the README's commands):
    KERAS_BACKEND=jax python tests/data/metrics/make_reference.py   (writes reference.json beside it)
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.default_rng(5)
prob = rng.uniform(0, 1, (40, 1)).astype("float32")
prob[::7] = 0.5  # on the threshold: not above it
label = (rng.uniform(0, 1, (40, 1)) < 0.4 + 0.4 * prob).astype("float32")
scores = rng.dirichlet(np.ones(8), 40).astype("float32")
ids = rng.integers(0, 8, (40,)).astype("int32")
onehot = np.eye(8, dtype="float32")[ids]


def batched(metric, y_true, y_pred):
    for b in range(0, 40, 8):
        metric.update_state(y_true[b:b + 8], y_pred[b:b + 8])
    return float(metric.result())


out = {
    "keras_version": keras.__version__,
    "prob": prob.reshape(-1).tolist(),
    "label": label.reshape(-1).tolist(),
    "scores": scores.reshape(-1).tolist(),
    "ids": ids.tolist(),
    "precision": batched(keras.metrics.Precision(), label, prob),
    "recall": batched(keras.metrics.Recall(), label, prob),
    "auc": batched(keras.metrics.AUC(), label, prob),
    "sparse_top_k_categorical_accuracy": batched(keras.metrics.SparseTopKCategoricalAccuracy(k=5), ids, scores),
    "top_k_categorical_accuracy": batched(keras.metrics.TopKCategoricalAccuracy(k=5), onehot, scores),
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json"), "w") as f:
    json.dump(out, f)
print({k: v for k, v in out.items() if not isinstance(v, list)})
