#!/usr/bin/env python3
"""Checks that TensorBoard reads the event files Tandem's TensorBoard callback writes.

tensorboard_tool trains a small Sequential model (Dense, BatchNormalization, Dense; Adam with a
LearningRateScheduler halving the rate each epoch; validation_split; TensorBoard with
update_freq=3, histogram_freq=2 and write_images) and records what fit reported (History, the running logs at
each batch end) and every weight at every epoch end in a JSON file. Then TensorBoard's own readers
load log_dir/train and log_dir/validation:

  - EventAccumulator (tensorboard.backend.event_processing.event_accumulator): the scalars
    epoch_<key> per epoch (steps 0, 1, ...), epoch_learning_rate, batch_<key> every 3rd batch
    (steps counted from 1 across epochs), epoch_val... in validation/ with
    evaluation_<key>_vs_iterations at the optimizer's steps, all equal (as float32) to what fit
    reported; and the histograms of every weight at epochs 0 and 2, tagged
    "sequential/<layer>/<weight>/histogram", whose min, max, num, sum, sum_squares, bucket limits
    and counts match TensorBoard's own histogram summary (histogram_pb) of the recorded weights.
  - The plugin EventAccumulator TensorBoard's UI serves from: the same tags under the "scalars"
    and "histograms" plugins, with the same values.
  - With write_images: each weight drawn as Keras's _log_weight_as_image and tf.summary.image draw
    it (squeezed; a 2-D weight with its long side across; a 3-D one as slices of its last axis; at
    most 3 images; v * 255.5 truncated to [0, 255]), read as PNGs by Pillow.
  - The TensorBoard server itself (`tensorboard --logdir`, with its Python loader and with its
    Rust data server where the platform has one), asked over HTTP as the UI asks: the scalars, a
    histogram's counts and an image's pixels it serves are the ones above.
  - With embeddings_freq (a second model, with an Embedding layer): projector_config.pbtxt is the
    text protobuf writes for the ProjectorConfig Keras's _configure_embeddings builds, and the
    weights files keras_embedding.ckpt-<epoch>.weights.h5 are there for every epoch.
  - A copy of the train file cut inside its last record: the reader loads every whole record.

Usage (after building tensorboard_tool):

    python3 tests/tensorboard_check.py [--build build] [--skip-if-unavailable]

tensorboard is installed from PyPI into build/tensorboard-venv on first use. With
--skip-if-unavailable (as ctest runs it), a machine where that cannot be done prints
"skipped: <reason>" and exits with status 77.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from python_env import SKIPPED, ensure_environment

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["tensorboard", "numpy", "pillow"]


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def expect(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures += 1
            print(f"  FAILED: {what}")


def f32(x):
    import numpy as np

    return float(np.float32(x))


def load(folder, plugin=False):
    from tensorboard.backend.event_processing import event_accumulator, plugin_event_accumulator

    module = plugin_event_accumulator if plugin else event_accumulator
    guidance = {module.SCALARS: 0, module.HISTOGRAMS: 0, module.TENSORS: 0} if not plugin else {module.TENSORS: 0}
    acc = module.EventAccumulator(str(folder), size_guidance=guidance)
    acc.Reload()
    return acc


def scalars(acc, tag):
    """{step: value} of a scalar tag in a legacy EventAccumulator."""
    events = acc.Scalars(tag)
    out = {e.step: e.value for e in events}
    assert len(out) == len(events), f"{tag}: a step written twice"
    return out


def expected_histogram(values):
    """TensorBoard's own histogram summary of `values`: (min, max, bucket rights, counts)."""
    import numpy as np
    from tensorboard.plugins.histogram import summary_v2
    from tensorboard.util import tensor_util

    buckets = tensor_util.make_ndarray(summary_v2.histogram_pb("h", np.array(values)).value[0].tensor)
    return buckets


def check_scalars(c: Checker, train, val, run):
    history, batches = run["history"], run["batches"]
    epochs = run["epochs"]
    train_keys = [k for k in history if not k.startswith("val_")]
    val_keys = [k[4:] for k in history if k.startswith("val_")]
    print(f"  train scalar tags: {sorted(train.Tags()['scalars'])}")
    print(f"  validation scalar tags: {sorted(val.Tags()['scalars'])}")
    c.expect("learning_rate" in train_keys, "History has learning_rate (from LearningRateScheduler)")
    for key in train_keys:
        got = scalars(train, f"epoch_{key}")
        c.expect(got == {e: f32(history[key][e]) for e in range(epochs)}, f"epoch_{key}: {got} vs History {history[key]}")
    lr = scalars(train, "epoch_learning_rate")
    c.expect(lr == {e: f32(0.01 * 0.5**e) for e in range(epochs)}, f"epoch_learning_rate {lr}")
    freq = run["update_freq"]
    for key in batches[0]:
        got = scalars(train, f"batch_{key}")
        want = {s: f32(batches[s - 1][key]) for s in range(freq, len(batches) + 1, freq)}
        c.expect(got == want, f"batch_{key}: steps {sorted(got)} vs {sorted(want)}, values equal: {got == want}")
    c.expect(set(train.Tags()["scalars"]) == {f"epoch_{k}" for k in train_keys} | {f"batch_{k}" for k in batches[0]},
             "train/ has only the epoch_ and batch_ scalars")
    per_epoch = run["iterations"] // epochs
    for key in val_keys:
        got = scalars(val, f"epoch_{key}")
        c.expect(got == {e: f32(history["val_" + key][e]) for e in range(epochs)}, f"validation epoch_{key}: {got}")
        got = scalars(val, f"evaluation_{key}_vs_iterations")
        c.expect(got == {per_epoch * (e + 1): f32(history["val_" + key][e]) for e in range(epochs)},
                 f"evaluation_{key}_vs_iterations: {got}")
    c.expect(set(val.Tags()["scalars"]) == {f"epoch_{k}" for k in val_keys} | {f"evaluation_{k}_vs_iterations" for k in val_keys},
             "validation/ has only the epoch_ and evaluation_ scalars")


def check_histograms(c: Checker, train, run):
    import numpy as np

    prefix = run["model_name"] + "/"
    hist_epochs = [e for e in range(run["epochs"]) if e % run["histogram_freq"] == 0]
    paths = list(run["weights"][0])
    tags = sorted(train.Tags()["histograms"])
    print(f"  histogram tags: {tags}")
    c.expect(tags == sorted(f"{prefix}{p}/histogram" for p in paths), "a histogram per weight (moving statistics included)")
    for path in paths:
        events = train.Histograms(f"{prefix}{path}/histogram")
        c.expect([e.step for e in events] == hist_epochs, f"{path}: histogram steps {[e.step for e in events]}")
        for e in events:
            values = np.array(run["weights"][e.step][path]["values"], dtype=np.float64)
            h = e.histogram_value
            want = expected_histogram(values)
            what = f"{path} at epoch {e.step}"
            c.expect(h.min == values.min() and h.max == values.max() and h.num == values.size, f"{what}: min, max, num")
            c.expect(abs(h.sum - values.sum()) <= 1e-12 * max(1.0, np.abs(values).sum()), f"{what}: sum {h.sum} vs {values.sum()}")
            c.expect(abs(h.sum_squares - (values**2).sum()) <= 1e-12 * max(1.0, (values**2).sum()), f"{what}: sum_squares")
            c.expect(list(h.bucket) == list(want[:, 2]), f"{what}: counts {list(h.bucket)} vs TensorBoard's {list(want[:, 2])}")
            c.expect(np.allclose(h.bucket_limit, want[:, 1], rtol=0, atol=1e-12 * max(1.0, abs(values).max())),
                     f"{what}: bucket limits vs TensorBoard's right edges")


def check_plugin_view(c: Checker, folder, legacy):
    """The accumulator TensorBoard's UI reads: every tag under its plugin, with the same values."""
    import numpy as np
    from tensorboard.util import tensor_util

    acc = load(folder, plugin=True)
    content = acc.PluginTagToContent("scalars")
    c.expect(set(content) == set(legacy.Tags()["scalars"]), f"{folder.name}: scalars plugin tags")
    for tag in content:
        got = {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)}
        c.expect(got == scalars(legacy, tag), f"{folder.name}: plugin scalar {tag}")
    hist = acc.PluginTagToContent("histograms") if "histograms" in acc.ActivePlugins() else {}
    c.expect(set(hist) == set(legacy.Tags()["histograms"]), f"{folder.name}: histograms plugin tags")
    for tag in hist:
        for e, old in zip(acc.Tensors(tag), legacy.Histograms(tag)):
            buckets = tensor_util.make_ndarray(e.tensor_proto)
            h = old.histogram_value
            c.expect(buckets.shape[1] == 3 and buckets[:, 2].sum() == h.num, f"{tag} at {e.step}: the UI's buckets hold every value")
            c.expect(np.isclose(buckets[0, 0], h.min) and np.isclose(buckets[-1, 1], h.max), f"{tag} at {e.step}: the UI's range")


def keras_images(weight):
    """What Keras's _log_weight_as_image passes to tf.summary.image, as uint8 [k, h, w, c], or None."""
    import numpy as np

    w = np.squeeze(weight.astype(np.float32))
    shape = w.shape
    if len(shape) == 1:
        w = w.reshape([1, shape[0], 1, 1])
    elif len(shape) == 2:
        if shape[0] > shape[1]:
            w = w.T
        w = w.reshape([1, w.shape[0], w.shape[1], 1])
    elif len(shape) == 3:
        w = np.transpose(w, [2, 0, 1])
        w = w.reshape(list(w.shape) + [1])
    if not (w.ndim == 4 and w.shape[-1] in (1, 3, 4)):
        return None
    scaled = np.clip(w * np.float32(255.5), 0, 255)  # tf.image.convert_image_dtype(..., tf.uint8, saturate=True)
    return scaled.astype(np.uint8)[:3]


def check_images(c: Checker, folder, run):
    import io

    import numpy as np
    from PIL import Image
    from tensorboard.util import tensor_util

    acc = load(folder, plugin=True)
    prefix = run["model_name"] + "/"
    hist_epochs = [e for e in range(run["epochs"]) if e % run["histogram_freq"] == 0]
    drawn = {}
    for path in run["weights"][0]:
        w = run["weights"][0][path]
        if keras_images(np.array(w["values"]).reshape(w["shape"])) is not None:
            drawn[f"{prefix}{path}/image"] = path
    tags = acc.PluginTagToContent("images") if "images" in acc.ActivePlugins() else {}
    print(f"  image tags: {sorted(tags)}")
    c.expect(set(tags) == set(drawn), "an image per drawable weight")
    for tag, path in drawn.items():
        events = acc.Tensors(tag) if tag in tags else []
        c.expect([e.step for e in events] == hist_epochs, f"{tag}: steps {[e.step for e in events]}")
        for e in events:
            w = run["weights"][e.step][path]
            want = keras_images(np.array(w["values"]).reshape(w["shape"]))
            strings = tensor_util.make_ndarray(e.tensor_proto)
            c.expect([int(strings[0]), int(strings[1])] == [want.shape[2], want.shape[1]], f"{tag}: width and height")
            got = np.stack([np.array(Image.open(io.BytesIO(png))) for png in strings[2:]])
            got = got.reshape(got.shape[:3] + (-1,))
            c.expect(got.shape == want.shape and np.array_equal(got, want), f"{tag} at {e.step}: pixels equal Keras's")


def served(python: Path, logs: Path, load_fast: str):
    """Starts `tensorboard --logdir logs` on a free port; returns (process, base URL) or None."""
    import re
    import time

    tensorboard = python.parent / "tensorboard"
    proc = subprocess.Popen([str(tensorboard), "--logdir", str(logs), "--host", "127.0.0.1", "--port", "0", f"--load_fast={load_fast}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    for line in proc.stdout:
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if m:
            return proc, m.group(1)
        if time.time() > deadline:
            break
    proc.kill()
    proc.wait()
    return None


def fetch(url, binary=False):
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        data = response.read()
    return data if binary else json.loads(data)


def check_server(c: Checker, python: Path, logs: Path, run):
    """The UI's view: what the TensorBoard server sends the browser."""
    import io
    import time
    import urllib.parse

    import numpy as np
    from PIL import Image

    history, prefix = run["history"], run["model_name"] + "/"
    for load_fast in ["false", "true"]:
        started = served(python, logs, load_fast)
        if started is None:
            # Not a fault of the files (no data server for this platform, no loopback network):
            # the accumulators above read them with the same code the server uses.
            print(f"  tensorboard --load_fast={load_fast} did not start: the server's view is not checked")
            continue
        proc, base = started
        try:
            # The server loads the files in the background: wait until every run's tags are there.
            deadline = time.time() + 120
            while time.time() < deadline:
                tags = fetch(f"{base}/data/plugin/scalars/tags")
                if "epoch_loss" in tags.get("train", {}) and "epoch_loss" in tags.get("validation", {}):
                    break
                time.sleep(0.5)
            q = urllib.parse.quote
            for folder, key in [("train", "loss"), ("train", "learning_rate"), ("validation", "val_loss")]:
                tag = "epoch_" + key.removeprefix("val_")
                rows = fetch(f"{base}/data/plugin/scalars/scalars?run={folder}&tag={q(tag)}")
                got = {step: value for _, step, value in rows}
                c.expect(got == {e: f32(v) for e, v in enumerate(history[key])}, f"server (load_fast={load_fast}) {folder}/{tag}: {got}")
            path = "dense/kernel"
            rows = fetch(f"{base}/data/plugin/histograms/histograms?run=train&tag={q(prefix + path + '/histogram')}")
            for _, step, buckets in rows:
                counts = [b[2] for b in buckets if b[2] > 0]
                want = expected_histogram(np.array(run["weights"][step][path]["values"]))[:, 2]
                c.expect(counts == [w for w in want if w > 0], f"server (load_fast={load_fast}) histogram {path} at {step}")
            rows = fetch(f"{base}/data/plugin/images/images?run=train&tag={q(prefix + path + '/image')}&sample=0")
            c.expect([r["step"] for r in rows] == [e for e in range(run["epochs"]) if e % run["histogram_freq"] == 0],
                     f"server (load_fast={load_fast}) image steps")
            for r in rows:
                png = fetch(f"{base}/data/plugin/images/individualImage?{r['query']}", binary=True)
                w = run["weights"][r["step"]][path]
                want = keras_images(np.array(w["values"]).reshape(w["shape"]))[0, :, :, 0]
                c.expect(np.array_equal(np.array(Image.open(io.BytesIO(png))), want), f"server (load_fast={load_fast}) image pixels at {r['step']}")
            print(f"  tensorboard --load_fast={load_fast} served the scalars, histograms and images")
        finally:
            proc.kill()
            proc.wait()


def check_embeddings(c: Checker, logs: Path):
    from google.protobuf import text_format
    from tensorboard.plugins import projector

    # As Keras's _configure_embeddings builds it for a model with one Embedding layer and a
    # metadata path given as a string.
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = "layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE"
    embedding.metadata_path = "vocab \"v1\"\tcaf\u00e9's.tsv"
    written = (logs / "projector_config.pbtxt").read_text(encoding="utf-8")
    c.expect(written == text_format.MessageToString(config), f"projector_config.pbtxt:\n{written}")
    c.expect(text_format.Parse(written, projector.ProjectorConfig()) == config, "projector_config.pbtxt parses back to Keras's config")
    files = sorted(p.name for p in (logs / "train").glob("keras_embedding.ckpt-*"))
    c.expect(files == ["keras_embedding.ckpt-0.weights.h5", "keras_embedding.ckpt-1.weights.h5"], f"embedding checkpoints: {files}")


def check_cut_file(c: Checker, train_dir: Path, work: Path):
    """A file cut inside its last record (a writer that died mid-record) still loads."""
    (src,) = list(train_dir.iterdir())
    cut_dir = work / "cut" / "train"
    cut_dir.mkdir(parents=True)
    dst = cut_dir / src.name
    shutil.copy(src, dst)
    os.truncate(dst, dst.stat().st_size - 5)
    whole, cut = load(train_dir), load(cut_dir)

    def count(acc):
        tags = acc.Tags()
        return sum(len(acc.Scalars(t)) for t in tags["scalars"]) + sum(len(acc.Histograms(t)) for t in tags["histograms"])

    c.expect(count(cut) == count(whole) - 1, f"cut file: {count(cut)} events loaded, the whole file has {count(whole)}")


def run_checks(build: Path) -> bool:
    tool = build / "tensorboard_tool"
    if not tool.exists():
        sys.exit(f"{tool} is missing: build the target tensorboard_tool first")
    c = Checker()
    with tempfile.TemporaryDirectory(prefix="tandem_tensorboard_check_") as tmp:
        work = Path(tmp)
        logs, run_json, embedding_logs = work / "logs", work / "run.json", work / "embedding_logs"
        subprocess.run([str(tool), str(logs), str(run_json), str(embedding_logs)], check=True)
        run = json.loads(run_json.read_text())
        print(f"event files: {sorted(str(p.relative_to(logs)) for p in logs.rglob('events.out.tfevents.*'))}")
        train, val = load(logs / "train"), load(logs / "validation")
        check_scalars(c, train, val, run)
        check_histograms(c, train, run)
        check_plugin_view(c, logs / "train", train)
        check_plugin_view(c, logs / "validation", val)
        check_images(c, logs / "train", run)
        check_server(c, Path(sys.executable), logs, run)
        check_embeddings(c, embedding_logs)
        check_cut_file(c, logs / "train", work)
    print(f"{c.checks} checks, {c.failures} failed")
    return c.failures == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build"), help="the CMake build folder (default: build)")
    parser.add_argument("--skip-if-unavailable", action="store_true",
                        help=f"exit with status {SKIPPED} (skipped) when tensorboard cannot be installed")
    parser.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    if not args.in_venv:
        python = ensure_environment(build / "tensorboard-venv", PACKAGES, "import tensorboard.backend.event_processing.event_accumulator, numpy, PIL",
                                    args.skip_if_unavailable, "tensorboard")
        os.execv(str(python), [str(python), __file__, "--build", str(build), "--in-venv"])
    ok = run_checks(build)
    print("TensorBoard check: " + ("PASSED" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
