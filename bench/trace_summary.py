#!/usr/bin/python3
"""Where a traced training step's time goes: the kernels of Chrome traces written by
FitOptions::trace_path (bench_fashion_mnist --trace, bench_transformer --trace), summed by op
name and dtype, largest first, as a markdown table. Given several traces of the same step (one per
run: a shared machine is noisy), each op's time is the median over them.

Usage: bench/trace_summary.py TRACE.json... [--top N]
"""

import argparse
import collections
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    per_trace = []  # per file: (op, dtype) -> [microseconds, calls]
    threads = set()
    for path in args.traces:
        events = json.load(open(path))["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
        # Kernels are the complete events that carry a dtype; the input pipeline's events carry none.
        sums = collections.defaultdict(lambda: [0.0, 0])
        for e in events:
            if e.get("ph") == "X" and "dtype" in e.get("args", {}):
                sums[(e["name"], e["args"]["dtype"])][0] += e["dur"]
                sums[(e["name"], e["args"]["dtype"])][1] += 1
                threads.add(names.get(e["tid"], str(e["tid"])))
        per_trace.append(sums)
    by_op = {k: [statistics.median(t.get(k, [0.0, 0])[0] for t in per_trace), per_trace[0].get(k, [0.0, 0])[1]]
             for k in set().union(*per_trace)}
    total = sum(v[0] for v in by_op.values())
    print(f"{sum(v[1] for v in by_op.values())} kernels on {', '.join(sorted(threads))}, median of {len(per_trace)} "
          f"trace(s): {total / 1e3:.2f} ms")
    print()
    print("| op | dtype | calls | ms | share |")
    print("|---|---|---:|---:|---:|")
    ranked = sorted(by_op.items(), key=lambda kv: -kv[1][0])
    for (name, dtype), (us, calls) in ranked[:args.top]:
        print(f"| {name} | {dtype} | {calls} | {us / 1e3:.2f} | {100 * us / total:.0f} % |")
    rest = ranked[args.top:]
    if rest:
        us = sum(v[0] for _, v in rest)
        print(f"| {len(rest)} others | | {sum(v[1] for _, v in rest)} | {us / 1e3:.2f} | {100 * us / total:.0f} % |")
    casts = sum(v[0] for (name, _), v in by_op.items() if name == "cast")
    print()
    print(f"casts: {casts / 1e3:.2f} ms ({100 * casts / total:.0f} % of the kernels' time)")


if __name__ == "__main__":
    main()
