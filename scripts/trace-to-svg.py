#!/usr/bin/env python3
"""Renders one traced training step (fit's trace_path) as an SVG timeline: a row per device's
compute track, its actions ("forward j", "backward j", "update") as coloured boxes labelled with
the micro-batch j, and the time a recv kernel waited for another device drawn in grey over them (not computing).

    scripts/trace-to-svg.py TRACE.json OUT.svg [TITLE]
"""
import json
import sys

COLOURS = {"forward": "#4c78a8", "backward": "#f58518", "update": "#54a24b"}
WAIT = "#d9d9d9"
ROW, GAP, LEFT, TOP, WIDTH = 34, 10, 70, 40, 1000


def load(path):
    events = json.load(open(path))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = sorted(t for t, n in names.items() if n.endswith(" compute"))
    actions, waits = [], []
    for e in events:
        if e["ph"] != "X" or e["tid"] not in tracks or e["dur"] <= 0:
            continue
        kind = e["name"].split(" ")[0]
        if kind in COLOURS:
            actions.append(e)
        elif e["name"] == "recv":
            waits.append(e)
    return [names[t].removesuffix(" compute") for t in tracks], tracks, actions, waits


def render(trace, out, title):
    devices, tracks, actions, waits = load(trace)
    if not actions:
        sys.exit(f"{trace}: no forward/backward/update slices on a compute track")
    begin = min(a["ts"] for a in actions)
    end = max(a["ts"] + a["dur"] for a in actions)
    scale = WIDTH / (end - begin)
    row_of = {t: i for i, t in enumerate(tracks)}
    height = TOP + len(tracks) * (ROW + GAP) + 50

    def x(ts):
        return LEFT + (ts - begin) * scale

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="14">{title}</text>']
    for i, d in enumerate(devices):
        y = TOP + i * (ROW + GAP)
        svg.append(f'<text x="{LEFT - 8}" y="{y + ROW / 2 + 4}" text-anchor="end">{d}</text>')
    for a in actions:
        y = TOP + row_of[a["tid"]] * (ROW + GAP)
        kind, _, micro = a["name"].partition(" ")
        w = a["dur"] * scale
        svg.append(f'<rect x="{x(a["ts"]):.1f}" y="{y}" width="{w:.1f}" height="{ROW}" fill="{COLOURS[kind]}" '
                   f'stroke="white" stroke-width="0.5"><title>{a["name"]}: {a["dur"] / 1000:.2f} ms</title></rect>')
        if micro and w > 9:
            svg.append(f'<text x="{x(a["ts"]) + w / 2:.1f}" y="{y + ROW / 2 + 4}" text-anchor="middle" fill="white">{micro}</text>')
    for r in waits:
        y = TOP + row_of[r["tid"]] * (ROW + GAP)
        svg.append(f'<rect x="{x(r["ts"]):.1f}" y="{y}" width="{r["dur"] * scale:.1f}" height="{ROW}" fill="{WAIT}" '
                   'fill-opacity="0.8"/>')
    axis = TOP + len(tracks) * (ROW + GAP)
    span_ms = (end - begin) / 1000
    svg.append(f'<line x1="{LEFT}" y1="{axis}" x2="{LEFT + WIDTH}" y2="{axis}" stroke="black"/>')
    ticks = 10
    for k in range(ticks + 1):
        tx = LEFT + WIDTH * k / ticks
        svg.append(f'<line x1="{tx:.1f}" y1="{axis}" x2="{tx:.1f}" y2="{axis + 4}" stroke="black"/>')
        svg.append(f'<text x="{tx:.1f}" y="{axis + 16}" text-anchor="middle">{span_ms * k / ticks:.1f} ms</text>')
    legend = axis + 36
    for i, (kind, colour) in enumerate(list(COLOURS.items()) + [("waiting in recv", WAIT)]):
        lx = LEFT + i * 150
        svg.append(f'<rect x="{lx}" y="{legend - 10}" width="12" height="12" fill="{colour}"/>')
        svg.append(f'<text x="{lx + 18}" y="{legend}">{kind}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    render(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else "one training step")
