#!/usr/bin/env python3
"""The C++ programs in the documentation, compiled and run as tests (CMakeLists.txt, "docs_programs").

Every ```cpp block of README.md and docs/*.md that is a whole program (it defines `int main`) is
written to <out>/<doc>_<n>.cpp (doc: the file's stem in lower case with '-' as '_'; n: the
program's number within that file, from 1), behind a #line directive, so that a compiler error
names the Markdown file and its line. The other blocks are fragments: they are counted, not
compiled.

Which programs run: all of them, except those marked compile-only by an HTML comment (invisible
in the rendered page) on the line just before the block's opening fence:

    <!-- docs-test: compile-only (trains on Fashion-MNIST for minutes) -->
    ```cpp

A fragment may quote the code instead: marked as an excerpt of a file of the repository,

    <!-- docs-test: excerpt of distribute/tensor_parallel_2d.cpp -->
    ```cpp

its lines must appear in that file, in order and each run of them contiguous; a line `// ...`
stands for lines left out. The test docs_excerpts_match_sources checks every such block.

A program that reads Fashion-MNIST (`datasets::fashion_mnist`) or names a GPU device ("gpu:...")
must carry the marker: a test cannot download data, train for minutes or expect a GPU, and the
extraction stops with an error naming the block otherwise.

Commands:
  extract ROOT OUT      write the programs and OUT/docs_programs.cmake (the list CMake reads);
                        files are rewritten only when their text changes
  summary ROOT OUT      print what the documentation holds (programs, fragments) and fail if it
                        no longer matches what was extracted (run cmake again)
  compile BUILD TARGET WHERE   build one program's target; on failure say which block it is
  run WHERE EXE DIR     run one program in a fresh DIR; on failure say which block it is
  excerpts ROOT         check that every block marked as an excerpt is in the file it names
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MAIN = re.compile(r"\bint\s+main\s*\(")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*compile-only\b.*-->\s*$")
EXCERPT = re.compile(r"^\s*<!--\s*docs-test:\s*excerpt of\s+(\S+)\s*-->\s*$")
ELISION = "// ..."
NEEDS_MARKER = [(re.compile(r"\bfashion_mnist\s*\("), "reads Fashion-MNIST"),
                (re.compile(r"\"gpu:"), "names a GPU device")]


class Block:
    def __init__(self, doc, line, text, compile_only, source=None):
        self.doc, self.line, self.text, self.compile_only = doc, line, text, compile_only
        self.source = source  # the file this block is an excerpt of, if it is marked so

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def docs(root):
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    return [f for f in files if f.is_file()]


def blocks(root, path):
    """The ```cpp blocks of one file: (line of the first code line, dedented text, marked)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = path.relative_to(root).as_posix()
    found, i = [], 0
    while i < len(lines):
        opening = lines[i]
        if opening.strip() == "```cpp":
            indent = len(opening) - len(opening.lstrip())
            marked = i > 0 and bool(MARKER.match(lines[i - 1]))
            excerpt = EXCERPT.match(lines[i - 1]) if i > 0 else None
            start, i = i + 1, i + 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            if i == len(lines):
                sys.exit(f"{rel}:{start}: a ```cpp block is never closed")
            body = [l[indent:] if l[:indent].strip() == "" else l for l in lines[start:i]]
            found.append(Block(rel, start + 1, "\n".join(body) + "\n", marked, excerpt.group(1) if excerpt else None))
        i += 1
    return found


def survey(root):
    """{doc: (programs, fragments)} over README.md and docs/*.md."""
    result = {}
    for path in docs(root):
        programs, fragments = [], 0
        for b in blocks(root, path):
            if MAIN.search(b.text):
                programs.append(b)
            else:
                fragments += 1
        result[path.relative_to(root).as_posix()] = (programs, fragments)
    return result


def name_of(doc, n):
    return re.sub(r"[^a-z0-9]+", "_", Path(doc).stem.lower()) + f"_{n}"


def manifest(found):
    rows = []
    for doc, (programs, _) in found.items():
        for n, b in enumerate(programs, 1):
            rows.append((name_of(doc, n), b))
    return rows


def program_text(b):
    return f'#line {b.line} "{b.doc}"\n{b.text}'


def write_if_changed(path, text):
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def extract(root, out):
    out.mkdir(parents=True, exist_ok=True)
    rows = manifest(survey(root))
    errors = []
    for name, b in rows:
        for pattern, why in NEEDS_MARKER:
            if not b.compile_only and pattern.search(b.text):
                errors.append(f"{b.where}: this program {why}, so it cannot run as a test: put "
                              f"<!-- docs-test: compile-only (why) --> on the line before its ```cpp")
        write_if_changed(out / f"{name}.cpp", program_text(b))
    if errors:
        sys.exit("\n".join(errors))
    for stale in out.glob("*.cpp"):
        if stale.stem not in {name for name, _ in rows}:
            stale.unlink()
    cmake = ["# Made by scripts/docs_programs.py extract; read by CMakeLists.txt. Do not edit."]
    cmake.append("set(TANDEM_DOCS_PROGRAMS " + " ".join(name for name, _ in rows) + ")")
    for name, b in rows:
        cmake.append(f'set(TANDEM_DOCS_{name}_WHERE "{b.where}")')
        cmake.append(f"set(TANDEM_DOCS_{name}_RUN {'OFF' if b.compile_only else 'ON'})")
    write_if_changed(out / "docs_programs.cmake", "\n".join(cmake) + "\n")
    write_if_changed(out / "summary.txt", report(survey(root)))


def report(found):
    lines, total_programs, total_run, total_fragments = [], 0, 0, 0
    for doc, (programs, fragments) in found.items():
        if not programs and not fragments:
            continue
        parts = [f"{b.line}: {'compiled' if b.compile_only else 'compiled and run'}" for b in programs]
        lines.append(f"{doc}: {len(programs)} program(s)" + (f" (line {'; line '.join(parts)})" if parts else "")
                     + f", {fragments} fragment(s) not compiled")
        total_programs += len(programs)
        total_run += sum(not b.compile_only for b in programs)
        total_fragments += fragments
    lines.append(f"total: {total_programs} whole programs ({total_run} run, {total_programs - total_run} "
                 f"compiled only), {total_fragments} fragments (no main) not compiled")
    return "\n".join(lines) + "\n"


def summary(root, out):
    now = report(survey(root))
    print(now, end="")
    recorded = out / "summary.txt"
    same = recorded.exists() and recorded.read_text(encoding="utf-8") == now
    for name, b in manifest(survey(root)):
        program = out / f"{name}.cpp"
        same = same and program.exists() and program.read_text(encoding="utf-8") == program_text(b)
    if not same:
        sys.exit("the documentation's C++ blocks changed since CMake extracted them: "
                 "run cmake (or cmake --build) again so that the docs_compile_*/docs_run_* tests match")


def compile_one(build, target, where):
    r = subprocess.run(["cmake", "--build", build, "--target", target], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        sys.exit(f"\nFAILED: the program in {where} no longer compiles against Tandem "
                 "(the compiler's messages above name the Markdown file and line)")
    print(f"{where}: compiles")


def run_one(where, exe, directory):
    d = Path(directory)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    r = subprocess.run([exe], cwd=d)
    if r.returncode != 0:
        sys.exit(f"FAILED: the program in {where} exited with status {r.returncode}")
    print(f"{where}: ran")


def runs_of(text):
    """The contiguous runs of lines of an excerpt, split at its `// ...` lines (blank edges dropped)."""
    runs, run = [], []
    for line in text.splitlines():
        if line.strip() == ELISION:
            runs.append(run)
            run = []
        else:
            run.append(line.rstrip())
    runs.append(run)
    trimmed = []
    for r in runs:
        while r and not r[0].strip():
            r = r[1:]
        while r and not r[-1].strip():
            r = r[:-1]
        if r:
            trimmed.append(r)
    return trimmed


def excerpts(root):
    failures, checked = [], 0
    for path in docs(root):
        for b in blocks(root, path):
            if not b.source:
                continue
            checked += 1
            source = root / b.source
            if not source.is_file():
                failures.append(f"{b.where}: the excerpt names {b.source}, which does not exist")
                continue
            lines = [l.rstrip() for l in source.read_text(encoding="utf-8").splitlines()]
            at = 0
            for run in runs_of(b.text):
                found = next((i for i in range(at, len(lines) - len(run) + 1) if lines[i:i + len(run)] == run), None)
                if found is None:
                    failures.append(f"{b.where}: these lines of the excerpt are not in {b.source} (after line {at}):\n  "
                                    + "\n  ".join(run))
                    break
                at = found + len(run)
    if failures:
        sys.exit("\n".join(failures))
    print(f"{checked} excerpt(s) match their sources")


def main(argv):
    if len(argv) >= 3 and argv[0] in ("extract", "summary"):
        root, out = Path(argv[1]).resolve(), Path(argv[2])
        (extract if argv[0] == "extract" else summary)(root, out)
    elif len(argv) == 4 and argv[0] == "compile":
        compile_one(*argv[1:])
    elif len(argv) == 4 and argv[0] == "run":
        run_one(*argv[1:])
    elif len(argv) == 2 and argv[0] == "excerpts":
        excerpts(Path(argv[1]).resolve())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
