#!/usr/bin/env python3
"""Checks that every #include "..." between folders is one that docs/architecture.md allows.

The table under "## Folder dependencies" in docs/architecture.md is the single source of truth: one
row per folder, and its "may include" column lists the folders that folder's files may include
(a folder may always include itself). A file's folder is src/<x> -> x, include/<x> -> x (the public
API is include/tandem -> tandem), otherwise its first path component (layers, distribute, io).
Includes are resolved against the including file's own folder, then src/, ., include/.

Exits 1 on a forbidden or unresolvable include, on a folder with no row, and on a cycle in the
table itself; otherwise prints one summary line and exits 0.

    python3 scripts/check-includes.py [--root DIR]   # DIR: the tree to check (default: this one)
"""
import argparse
import re
import sys
from pathlib import Path

SCANNED = ("src", "layers", "distribute", "io", "include")
INCLUDE_ROOTS = ("src", ".", "include")
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inl"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
DOC = "docs/architecture.md"


def folder_of(rel):
    parts = Path(rel).parts
    if parts[0] in ("src", "include") and len(parts) > 2:
        return parts[1]
    return parts[0]


def read_table(doc):
    """{folder: set of folders it may include}, from the Markdown table of the section."""
    lines = doc.read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip().lower() == "## folder dependencies")
    except StopIteration:
        sys.exit(f'{DOC}: no section "## Folder dependencies"')
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.strip().startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    if len(rows) < 3:
        sys.exit(f"{DOC}: the Folder dependencies section has no table")
    header = [h.lower() for h in rows[0]]
    if "may include" not in header:
        sys.exit(f'{DOC}: the Folder dependencies table has no "may include" column')
    col = header.index("may include")
    table = {}
    for row in rows[2:]:  # rows[1] is the |---| line
        name = row[0].strip("` ")
        table[name] = {w for w in re.findall(r"[A-Za-z_][\w]*", row[col].replace("`", ""))}
    return table


def table_errors(table):
    errors = [f"{DOC}: {a} may include {b}, which has no row"
              for a, allowed in sorted(table.items()) for b in sorted(allowed) if b not in table]
    # A cycle between folders (self-includes aside) is an error even where the table permits it.
    state = {}  # folder -> "open" while on the DFS stack, "done" after

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(table.get(node, ())):
            if nxt == node or nxt not in table:
                continue
            if state.get(nxt) == "open":
                cycle = path[path.index(nxt):] + [nxt]
                errors.append(f"{DOC}: the table permits a cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for folder in sorted(table):
        if folder not in state:
            visit(folder, [folder])
    return errors


def resolve(root, including, path):
    for base in [including.parent] + [root / r for r in INCLUDE_ROOTS]:
        candidate = (base / path).resolve()
        if candidate.is_file() and candidate.is_relative_to(root):
            return candidate.relative_to(root)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent, type=Path)
    root = parser.parse_args().root.resolve()
    table = read_table(root / DOC)
    errors = table_errors(table)
    checked, edges = 0, set()
    for top in SCANNED:
        for file in sorted((root / top).rglob("*")):
            if file.suffix not in SOURCE_SUFFIXES or not file.is_file():
                continue
            rel = file.relative_to(root)
            source = folder_of(rel)
            if source not in table:
                errors.append(f"UNLISTED: {rel}: folder {source} has no row in {DOC}")
                continue
            for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                path = match.group(1)
                target_rel = resolve(root, file, path)
                checked += 1
                if target_rel is None:
                    errors.append(f'UNRESOLVED: {rel}:{number} includes "{path}" (not found under '
                                  + ", ".join(r + "/" for r in INCLUDE_ROOTS) + ")")
                    continue
                target = folder_of(target_rel)
                edges.add((source, target))
                if target != source and target not in table[source]:
                    allowed = ", ".join(sorted(table[source]))
                    errors.append(f'FORBIDDEN: {rel}:{number} includes "{path}" ({source} -> {target}; '
                                  f"{DOC} allows {source} -> {{{allowed}}})")
    for e in errors:
        print(e)
    if errors:
        print(f"check-includes: {len(errors)} error(s)", file=sys.stderr)
        return 1
    crossing = sum(1 for a, b in edges if a != b)
    print(f"check-includes: {checked} includes checked, {crossing} folder -> folder edges, "
          f"all allowed by {DOC} ({len(table)} folders, no cycles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
