#!/usr/bin/env python3
"""Writes tests/data/datasets/shards/python_{gnu,pax}.tar with Python's tarfile module: the image
folder tests/data/datasets/images as WebDataset shards, so that test_data_sources reads shards that
another tar writer made (GNU long-name headers, pax headers, directory members, upper-case
extensions).

Both shards hold the folder's six images in image_dataset_from_directory's order without shuffling
(classes sorted, files sorted within each), each with a .cls member holding its class id, so
sample i equals that function's row i. Run from the repository root: python3 tests/data/make_tar_shards.py
"""
import io
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "datasets"
IMAGES = ROOT / "images"
OUT = ROOT / "shards"


def samples():
    classes = sorted(p.name for p in IMAGES.iterdir() if p.is_dir())
    for label, name in enumerate(classes):
        for f in sorted((IMAGES / name).iterdir()):
            if f.suffix.lower() in (".png", ".jpg", ".jpeg"):
                yield f, label


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))


def write(path, fmt, prefix, upper):
    with tarfile.open(path, "w", format=fmt) as tar:
        folder = tarfile.TarInfo(prefix.rsplit("/", 1)[0])
        folder.type, folder.mtime, folder.mode = tarfile.DIRTYPE, 0, 0o755
        tar.addfile(folder)
        for i, (f, label) in enumerate(samples()):
            ext = f.suffix[1:].upper() if upper and i % 2 else f.suffix[1:]
            key = f"{prefix}{i:06d}"
            add(tar, f"{key}.{ext}", f.read_bytes())
            add(tar, f"{key}.cls", str(label).encode())


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    # GNU: a folder name over 100 characters makes GNU long-name ('L') members.
    write(OUT / "python_gnu.tar", tarfile.GNU_FORMAT, "g" * 120 + "/", upper=True)
    # pax: non-ASCII names are stored in pax extended headers; the dot in the folder's name is not
    # the key's end (that is the first dot of the base name).
    write(OUT / "python_pax.tar", tarfile.PAX_FORMAT, "données.v1/échantillon-", upper=False)
