"""Reference for tests/test_tensorboard.cpp: what Keras 3's TensorBoard callback writes, made with
Keras on its TensorFlow backend (the callback needs TensorFlow's summary writer).

    KERAS_BACKEND=tensorflow python tests/data/make_tensorboard_refs.py

(with keras==3.15.1 and tensorflow-cpu installed) writes tests/data/tensorboard_refs.json: the data,
the initial weights, and for each folder (train, validation) each plugin's tags with their steps,
scalar values, histogram buckets and image pixels, read back with TensorBoard's plugin EventAccumulator (the reader the TensorBoard UI
uses, which also converts the older summary forms Tandem writes). Keras trains Input(6) ->
Dense(4, relu, "hidden") -> Dense(3, "out") in a Sequential "seq", SGD(0.1) with a
LearningRateScheduler (0.1 / (epoch + 1)), sparse categorical crossentropy from logits and accuracy,
40 rows for training and 10 for validation (validation_data), batches of 8 without shuffling, 3
epochs, TensorBoard(histogram_freq=2, write_images=True, update_freq="batch", write_graph=False).
update_freq "batch" keeps Keras's epoch summaries (with another N, Keras on TensorFlow loses those
of epochs whose last batch number is not a multiple of N; docs/callbacks.md).
"""
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

OUT = Path(__file__).resolve().parent / "tensorboard_refs.json"


def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 6)).astype(np.float32)
    y = (np.arange(50) % 3).astype(np.int32)
    x[np.arange(50), y] += 1.5
    return x, y


def layout(folder):
    acc = pea.EventAccumulator(str(folder), size_guidance={pea.TENSORS: 0})
    acc.Reload()
    out = {}
    for plugin in sorted(acc.ActivePlugins()):
        for tag in sorted(acc.PluginTagToContent(plugin)):
            events = acc.Tensors(tag)
            entry = {"steps": [e.step for e in events]}
            if plugin == "scalars":
                entry["values"] = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]
            elif plugin == "histograms":  # [30, 3]: left edge, right edge, count
                entry["buckets"] = [tensor_util.make_ndarray(e.tensor_proto).tolist() for e in events]
            elif plugin == "images":  # width, height, then each image's pixels [height][width][channels]
                entry["images"] = []
                for e in events:
                    strings = tensor_util.make_ndarray(e.tensor_proto)
                    pngs = [tf.io.decode_png(png).numpy().tolist() for png in strings[2:]]
                    entry["images"].append({"width": int(strings[0]), "height": int(strings[1]), "pixels": pngs})
            out.setdefault(plugin, {})[tag] = entry
    return out


def main():
    keras.utils.set_random_seed(1)
    x, y = data()
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, "relu", name="hidden"), keras.layers.Dense(3, name="out")], name="seq")
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    weights = [w.tolist() for w in model.get_weights()]
    with tempfile.TemporaryDirectory() as logs:
        tb = keras.callbacks.TensorBoard(logs, histogram_freq=2, write_images=True, update_freq="batch", write_graph=False)
        lr = keras.callbacks.LearningRateScheduler(lambda epoch, rate: 0.1 / (epoch + 1))
        history = model.fit(x[:40], y[:40], validation_data=(x[40:], y[40:]), batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[lr, tb])
        written = {folder: layout(Path(logs) / folder) for folder in ("train", "validation")}
        files = sorted(str(p.relative_to(logs)) for p in Path(logs).rglob("*") if p.is_file())
    ref = {"keras": keras.__version__, "x": x.tolist(), "y": y.tolist(), "initial_weights": weights,
           "history": {k: [float(v) for v in vs] for k, vs in history.history.items()}, "files": files, "written": written}
    OUT.write_text(json.dumps(ref, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
