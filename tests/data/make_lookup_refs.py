#!/usr/bin/env python3
"""Writes lookup_refs.json: what Keras 3's IntegerLookup and StringLookup give, for Tandem's tests.

Keras 3's lookup layers keep their tables in TensorFlow, so this needs Keras with TensorFlow:
    python3 -m venv venv && venv/bin/pip install tensorflow-cpu
    KERAS_BACKEND=tensorflow venv/bin/python tests/data/make_lookup_refs.py

  integer   IntegerLookup cases: the layer's arguments and get_config() (a vocabulary, or data to
            adapt on), its get_vocabulary(), inputs and Keras's outputs ("int", inverted, "one_hot", "multi_hot",
            "count", OOV buckets, mask tokens, max_tokens with pad_to_max_tokens)
  string    StringLookup cases the same way, output_mode "int" (Tandem's host-side StringLookup),
            with Keras's get_config(), the vocabulary.txt asset Keras's save_assets writes, and the
            layer Keras rebuilds from them (its load_assets drops trailing empty lines, so an
            adapted "" token at the end of the vocabulary does not come back)
"""
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

OUT = Path(__file__).resolve().parent / "lookup_refs.json"

VOCAB = [12, 36, 1138, 42]
IDS = [[12, 1138, 42, 7], [42, 1000, 36, 0]]
ADAPT = [[12, 1138, 42, 42], [42, 1000, 36, 1138], [5, 5, 5, 12]]

INTEGER_CASES = {
    "given": dict(vocabulary=VOCAB),
    "two_oov": dict(vocabulary=VOCAB, num_oov_indices=2),
    "four_oov": dict(vocabulary=VOCAB, num_oov_indices=4),
    "no_oov": dict(vocabulary=VOCAB, num_oov_indices=0),
    "mask": dict(vocabulary=VOCAB, mask_token=0),
    "mask_two_oov": dict(vocabulary=VOCAB, mask_token=0, num_oov_indices=2),
    "one_hot": dict(vocabulary=VOCAB, output_mode="one_hot"),
    "multi_hot": dict(vocabulary=VOCAB, output_mode="multi_hot"),
    "count": dict(vocabulary=VOCAB, output_mode="count"),
    "multi_hot_padded": dict(vocabulary=VOCAB, output_mode="multi_hot", max_tokens=8, pad_to_max_tokens=True),
    "invert": dict(vocabulary=VOCAB, invert=True),
    "invert_mask": dict(vocabulary=VOCAB, mask_token=0, invert=True),
    "adapted": dict(),
    "adapted_max_tokens": dict(max_tokens=4),
    "adapted_mask": dict(mask_token=0, num_oov_indices=2),
}

STRING_VOCAB = ["a", "b", "c", "d"]
WORDS = ["a", "c", "d", "d", "z", "b"]
STRING_ADAPT = ["b", "a", "b", "", "c", "[UNK]", "the", "the", "the", "a", "zeta", "Zeta"]

STRING_CASES = {
    "given": dict(vocabulary=STRING_VOCAB),
    "no_oov": dict(vocabulary=STRING_VOCAB, num_oov_indices=0),
    "mask": dict(vocabulary=STRING_VOCAB, mask_token=""),
    "oov_token": dict(vocabulary=STRING_VOCAB, oov_token="<oov>"),
    "adapted": dict(),
    "adapted_mask": dict(mask_token=""),
    "adapted_max_tokens": dict(max_tokens=4),
}


def integer_case(name, kwargs):
    layer = layers.IntegerLookup(**kwargs)
    adapted = "vocabulary" not in kwargs
    if adapted:
        layer.adapt(np.array(ADAPT, dtype="int64"))
    inputs = [[1, 3, 4, 0], [2, 9, 0, 1]] if kwargs.get("invert") else IDS
    if kwargs.get("num_oov_indices") == 0:  # Keras refuses values outside the vocabulary then
        inputs = [[12, 1138, 42, 36], [42, 12, 36, 1138]]
    out = np.asarray(layer(np.array(inputs, dtype="int64")))
    return {"arguments": kwargs, "config": layer.get_config(), "adapt": ADAPT if adapted else None,
            "vocabulary": [int(v) for v in layer.get_vocabulary()], "x": inputs, "y": out.tolist()}


def string_case(name, kwargs):
    layer = layers.StringLookup(**kwargs)
    adapted = "vocabulary" not in kwargs
    if adapted:
        layer.adapt(np.array(STRING_ADAPT))
    words = WORDS + STRING_ADAPT
    if kwargs.get("num_oov_indices") == 0:  # Keras refuses tokens outside the vocabulary then
        words = ["a", "c", "d", "d", "b"]
    out = np.asarray(layer(np.array(words)))
    inverse = layers.StringLookup(**{**kwargs, "vocabulary": layer.get_vocabulary(include_special_tokens=False), "invert": True})
    ids = list(range(-1, layer.vocabulary_size() + 2))
    decoded = [s.decode() for s in np.asarray(inverse(np.array(ids, dtype="int64"))).tolist()]
    reloaded = layer  # a given vocabulary stays in the config: no asset
    asset = None
    if adapted:  # as load_model rebuilds the layer: from its config, then its asset
        with tempfile.TemporaryDirectory() as d:
            layer.save_assets(d)
            asset = (Path(d) / "vocabulary.txt").read_text()
            reloaded = layers.StringLookup.from_config(layer.get_config())
            reloaded.load_assets(d)
    return {"reloaded_vocabulary": reloaded.get_vocabulary(), "reloaded_y": np.asarray(reloaded(np.array(words))).tolist(),
            "arguments": kwargs, "adapt": STRING_ADAPT if adapted else None, "vocabulary": layer.get_vocabulary(),
            "config": layer.get_config(), "vocabulary_txt": asset, "x": words, "y": out.tolist(), "ids": ids, "decoded": decoded}


def main():
    refs = {"keras_version": keras.__version__,
            "integer": {name: integer_case(name, kw) for name, kw in INTEGER_CASES.items()},
            "string": {name: string_case(name, kw) for name, kw in STRING_CASES.items()}}
    OUT.write_text(json.dumps(refs, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)) + "\n")
    print(f"{OUT.name}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
