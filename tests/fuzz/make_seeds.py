#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora from the project's own inputs, so they follow the tests:
   make_seeds.py SOURCE_DIR OUT_DIR  ->  OUT_DIR/case/*, OUT_DIR/expr/*
case seeds: cases/*.yaml, tests/cases/*.yaml, every case file and --set option that
tests/scripts/bad_input.sh passes to tessera (it runs with a stand-in tessera that records them),
and the case texts and overrides of tests/unit/test_case.c. expr seeds: the quoted expressions
of those case files and the string literals of tests/unit/test_expr.c, with its params' names.
Inputs are the fuzzers' format: the text, then NUL-separated --set options (or param names)."""
import hashlib
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

src, out = Path(sys.argv[1]), Path(sys.argv[2])
seeds = {"case": set(), "expr": set()}

STRING = r'"(?:\\.|[^"\\\n])*"'


def c_strings(path):
    """The string literals of a C file, adjacent ones joined, #define'd literals expanded."""
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    macros = {}
    for m in re.finditer(r"^#define (\w+) ((?:%s\s*)+)$" % STRING, text, flags=re.M):
        macros[m.group(1)] = m.group(2)
    text = re.sub(r"^#.*$", " ", text, flags=re.M)
    for name, value in macros.items():
        text = re.sub(r"\b%s\b" % name, lambda _: value, text)
    for m in re.finditer(r"(?:%s\s*)+" % STRING, text):
        parts = re.findall(STRING, m.group(0))
        raw = "".join(p[1:-1] for p in parts)
        yield raw.encode().decode("unicode_escape")


def expressions(yaml_text):
    for m in re.finditer(r'"([^"\n]*)"', yaml_text):
        seeds["expr"].add(m.group(1).encode())


for pattern in ("cases/*.yaml", "tests/cases/*.yaml"):
    for f in sorted(src.glob(pattern)):
        seeds["case"].add(f.read_bytes())
        expressions(f.read_text())

case_texts, overrides = [], []
for s in c_strings(src / "tests/unit/test_case.c"):
    if "\n" in s and ":" in s:
        case_texts.append(s)
    elif re.match(r"^[A-Za-z_][\w.\[\]]*=", s):
        overrides.append(s)
good = "model: heat\ngrid: {cells: [16, 16]}\ninitial: {u: sin(pi*x)}\ntime: {end: 0.1}\n"
for s in case_texts:
    seeds["case"].add(s.encode())
    expressions(s)
for o in overrides:
    seeds["case"].add((good + "\0" + o).encode())

params = b"\0kappa\0a\0b\0c"  # test_expr.c's params
for s in c_strings(src / "tests/unit/test_expr.c"):
    if len(s) <= 4096:
        seeds["expr"].add(s.encode() + params)

# bad_input.sh with a stand-in tessera that records its case file and --set options
with tempfile.TemporaryDirectory() as tmp:
    rec = Path(tmp) / "rec"
    rec.mkdir()
    fake = Path(tmp) / "tessera"
    fake.write_text(r"""#!/usr/bin/env python3
import hashlib, sys, pathlib
a = sys.argv[1:]
case = next((a[i + 1] for i in range(len(a) - 1) if a[i] in ("run", "check")), None)
sets = [a[i + 1] for i in range(len(a) - 1) if a[i] == "--set"]
try:
    data = pathlib.Path(case).read_bytes() if case else b""
except OSError:
    data = b""
data = b"\0".join([data] + [s.encode() for s in sets])
pathlib.Path("%s", hashlib.sha1(data).hexdigest()).write_bytes(data)
print("tessera: recorded", file=sys.stderr)
sys.exit(2)
""" % rec)
    launcher = Path(tmp) / "mpiexec"
    launcher.write_text('#!/bin/sh\nshift 2\nexec "$@"\n')  # drops "-n N"
    for f in (fake, launcher):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, TESSERA_BIN=str(fake), MPIEXEC=str(launcher), TESSERA_SOURCE=str(src))
    subprocess.run(["bash", str(src / "tests/scripts/bad_input.sh")], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    for f in rec.iterdir():
        data = f.read_bytes()
        if data:
            seeds["case"].add(data)
            expressions(data.split(b"\0")[0].decode(errors="replace"))

for kind, items in seeds.items():
    d = out / kind
    d.mkdir(parents=True, exist_ok=True)
    for data in items:
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print("seeds: %d %s inputs in %s" % (len(items), kind, d))
