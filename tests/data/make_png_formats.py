#!/usr/bin/env python3
"""Writes PNG files of the layouts tests/test_png_formats.cpp decodes (every color type, bit depths
1 to 8, Adam7 interlacing, tRNS transparency, gAMA chunks, all five row filters) under
tests/data/datasets/png_formats, and png_formats.json with each file's pixels as RGBA.

The files are written here from their samples (struct + zlib, no image library), and the expected
pixels follow from the PNG specification: gray replicated to RGB, samples of fewer than 8 bits
scaled by 255 / (2^depth - 1), palette entries looked up, tRNS giving alpha 0 to the key color and
the palette's alpha entries (255 past them). One reading follows libpng's simplified API, what
Tandem reads such PNGs with (libspng reads the others): a gAMA chunk other than sRGB's 1/2.2 has
the samples corrected to sRGB's gamma, v -> 255 (v / 255)^(1 / (2.2 gamma)) (within 1).
For the others PIL's reading must agree (checked here; its RGB, as it expands tRNS differently).
Run: /usr/bin/python3 tests/data/make_png_formats.py (needs python3-pil)."""
import json
import os
import random
import shutil
import struct
import zlib

import warnings

from PIL import Image

warnings.simplefilter("ignore")  # PIL's advice on palette transparency

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "datasets", "png_formats")
shutil.rmtree(root, ignore_errors=True)
os.makedirs(root)
rng = random.Random(40)
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def pack(samples, depth):
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    if depth == 8:
        return bytes(samples)
    per = 8 // depth
    out = bytearray()
    for i in range(0, len(samples), per):
        byte = 0
        for j, s in enumerate(samples[i:i + per]):
            byte |= s << (8 - depth * (j + 1))
        out.append(byte)
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def filtered(rows, bpp):
    """Each row with a filter byte; the filter cycles through None, Sub, Up, Average, Paeth."""
    out, prev = b"", bytes(len(rows[0])) if rows else b""
    for n, row in enumerate(rows):
        kind = n % 5
        line = bytearray()
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            predictor = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
            line.append((x - predictor) & 0xFF)
        out += bytes([kind]) + bytes(line)
        prev = row
    return out


def image_data(pixels, width, height, depth, interlaced):
    bpp = max(1, len(pixels[0][0]) * depth // 8)
    passes = ADAM7 if interlaced else [(0, 0, 1, 1)]
    data = b""
    for x0, y0, dx, dy in passes:
        xs, ys = range(x0, width, dx), range(y0, height, dy)
        if len(xs) and len(ys):
            data += filtered([pack([s for x in xs for s in pixels[y][x]], depth) for y in ys], bpp)
    return data


def write(name, width, height, color_type, depth, interlaced=False, palette_size=0, trns=None, gama=None):
    top = (1 << depth) - 1
    if color_type == 3:
        palette = [tuple(rng.randrange(256) for _ in range(3)) for _ in range(palette_size)]
        pixels = [[(rng.randrange(palette_size),) for _ in range(width)] for _ in range(height)]
    else:
        pixels = [[tuple(rng.randint(0, top) for _ in range(CHANNELS[color_type])) for _ in range(width)] for _ in range(height)]
    body = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, int(interlaced)))
    if gama is not None:
        body += chunk(b"gAMA", struct.pack(">I", gama))
    body += chunk(b"tEXt", b"Software\x00make_png_formats.py")
    if color_type == 3:
        body += chunk(b"PLTE", bytes(v for entry in palette for v in entry))
    key = None
    if trns == "key":  # the first pixel's color becomes transparent
        key = pixels[0][0]
        body += chunk(b"tRNS", b"".join(struct.pack(">H", s) for s in key))
    elif trns == "palette":  # alpha for the first entries only
        alphas = [rng.randrange(256) for _ in range(max(1, palette_size // 2))]
        body += chunk(b"tRNS", bytes(alphas))
    compressed = zlib.compress(image_data(pixels, width, height, depth, interlaced), 9)
    half = len(compressed) // 2  # two IDAT chunks
    body += chunk(b"IDAT", compressed[:half]) + chunk(b"IDAT", compressed[half:]) + chunk(b"IEND", b"")
    with open(os.path.join(root, name), "wb") as f:
        f.write(body)

    rgba = []
    for y in range(height):
        for x in range(width):
            p = pixels[y][x]
            if color_type == 3:
                r, g, b = palette[p[0]]
                a = alphas[p[0]] if trns == "palette" and p[0] < len(alphas) else 255
                rgba.append((r, g, b, a))
                continue
            color = p[:3] if color_type in (2, 6) else p[:1] * 3
            a = p[-1] if color_type in (4, 6) else (0 if key is not None and p == key else top)
            rgba.append(tuple(color) + (a,))
    tolerance = 0
    if color_type == 3:
        top = 255  # palette entries and their alphas are 8-bit whatever the index depth
    if gama is not None and abs(gama * 2.2 / 100000 - 1) > 0.05:
        exponent = 1 / (2.2 * gama / 100000)
        rgba = [tuple(round(255 * (v / top) ** exponent) for v in px[:3]) + (round(px[3] * 255 / top),) for px in rgba]
        tolerance = 1
    else:
        rgba = [tuple(round(v * 255 / top) for v in px[:3]) + (round(px[3] * 255 / top),) for px in rgba]
        # PIL reads these the same way (its RGB; alpha only where it expands tRNS alike).
        pil = Image.open(os.path.join(root, name))
        pil_rgb = list(pil.convert("RGBA" if pil.mode in ("RGBA", "LA", "PA") else "RGB").getdata())
        assert [px[:3] for px in pil_rgb] == [px[:3] for px in rgba], name
    # Grayscale is PIL's "L" of the RGB.
    gray = list(Image.frombytes("RGB", (width, height), bytes(v for px in rgba for v in px[:3])).convert("L").getdata())
    return {"file": name, "height": height, "width": width, "tolerance": tolerance,
            "rgba": [v for px in rgba for v in px], "gray": gray}


cases = [
    write("gray1.png", 11, 5, 0, 1),
    write("gray2.png", 7, 6, 0, 2),
    write("gray4_interlaced.png", 9, 10, 0, 4, interlaced=True),
    write("gray8_interlaced.png", 13, 11, 0, 8, interlaced=True),
    write("gray8_trns.png", 8, 5, 0, 8, trns="key"),
    write("gray_alpha8.png", 6, 7, 4, 8),
    write("gray_alpha8_interlaced.png", 10, 9, 4, 8, interlaced=True),
    write("rgb8_trns_interlaced.png", 9, 9, 2, 8, interlaced=True, trns="key"),
    write("rgba8_interlaced.png", 12, 7, 6, 8, interlaced=True),
    write("palette1.png", 17, 3, 3, 1, palette_size=2),
    write("palette2_trns.png", 9, 6, 3, 2, palette_size=4, trns="palette"),
    write("palette4_interlaced.png", 10, 10, 3, 4, interlaced=True, palette_size=11),
    write("palette8_trns.png", 7, 8, 3, 8, palette_size=200, trns="palette"),
    write("rgb8_gama_srgb.png", 6, 6, 2, 8, gama=45455),
    write("gray8_gama_linear.png", 6, 6, 0, 8, gama=100000),
]
with open(os.path.join(root, "..", "png_formats.json"), "w") as f:
    json.dump({"files": cases}, f)
print(f"wrote {len(cases)} files to {root}")
