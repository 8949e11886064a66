#!/usr/bin/env python3
"""Checks an XDMF time series that tessera wrote (DIR/snapshots.xmf) against its HDF5 files.

usage: xdmf_check.py SERIES.xmf STEPS PRECISION
  STEPS      the snapshot steps the series must list, in order, comma-separated ("0,4,8")
  PRECISION  the bytes per value every listed dataset must have (8 or 4)

It must parse as XML; hold one Temporal collection of uniform grids named snapshot_<step>;
each grid's time must equal its file's time attribute, its step the file's step attribute, and
times must increase; every DataItem of Format HDF must name a file that exists and a dataset in
it whose dimensions are the DataItem's (a 2D dataset's DataItem has a leading 1: one layer of
cells across z) and whose type has PRECISION bytes; the topology must count one node more than
the DataItem's cells on every axis. Exit 0 when all holds, else 1 with
one line per problem. Reads the HDF5 files with h5dump (hdf5-tools)."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def h5dump(*args):
    r = subprocess.run(["h5dump", *args], capture_output=True, text=True)
    return r.returncode, r.stdout


def attr(path, name):
    rc, out = h5dump("-m", "%.17g", "-a", "/" + name, path)
    m = re.search(r"DATA \{\s*\(0\): ([^\s]+)", out)
    return float(m.group(1)) if rc == 0 and m else None


def dataset(path, name):
    """(dims, bytes per value) of dataset name in path, or None."""
    rc, out = h5dump("-H", "-d", name, path)
    t = re.search(r"DATATYPE\s+H5T_IEEE_F(32|64)LE", out)
    d = re.search(r"DATASPACE\s+SIMPLE \{ \( ([0-9, ]+) \)", out)
    if rc != 0 or not t or not d:
        return None
    return [int(x) for x in d.group(1).split(",")], int(t.group(1)) // 8


def main():
    xmf, steps, precision = sys.argv[1], [int(s) for s in sys.argv[2].split(",") if s], int(sys.argv[3])
    problems = []
    try:
        root = ET.parse(xmf).getroot()
    except (ET.ParseError, OSError) as e:
        print(f"{xmf}: does not parse: {e}")
        return 1
    where = os.path.dirname(xmf) or "."
    coll = root.findall("./Domain/Grid")
    if len(coll) != 1 or coll[0].get("GridType") != "Collection" or coll[0].get("CollectionType") != "Temporal":
        print(f"{xmf}: expected one Temporal collection under Domain")
        return 1
    grids = coll[0].findall("Grid")
    names = [g.get("Name") for g in grids]
    want = [f"snapshot_{s:08d}" for s in steps]
    if names != want:
        problems.append(f"grids {names}, expected {want}")
    last = None
    for g in grids:
        name = g.get("Name")
        h5 = os.path.join(where, name + ".h5")
        t = float(g.find("Time").get("Value"))
        if last is not None and not t > last:
            problems.append(f"{name}: time {t} does not increase")
        last = t
        if not os.path.exists(h5):
            problems.append(f"{name}: {h5} does not exist")
            continue
        if attr(h5, "time") != t:
            problems.append(f"{name}: Time {t!r}, but the file's time attribute is {attr(h5, 'time')!r}")
        if attr(h5, "step") != int(name.split("_")[1]):
            problems.append(f"{name}: the file's step attribute is {attr(h5, 'step')!r}")
        nodes = [int(x) for x in g.find("Topology").get("Dimensions").split()]
        items = g.findall("./Attribute/DataItem")
        if not items:
            problems.append(f"{name}: no attributes")
        for it in items:
            if it.get("Format") != "HDF":
                continue
            file, _, ds = it.text.strip().partition(":")
            dims = [int(x) for x in it.get("Dimensions").split()]
            got = dataset(os.path.join(where, file), ds)
            if got is None:
                problems.append(f"{name}: {file}:{ds} does not exist")
                continue
            # a 2D grid is one layer of cells across z (output_xdmf.c): 1 ny nx over [ny][nx]
            layer = len(dims) == 3 and dims[0] == 1 and len(got[0]) == 2
            if got[0] != (dims[1:] if layer else dims):
                problems.append(f"{name}: {file}:{ds} has dimensions {got[0]}, the XDMF says {dims}")
            if got[1] != precision or int(it.get("Precision")) != precision:
                problems.append(f"{name}: {file}:{ds} holds {got[1]}-byte values, the XDMF says "
                                f"{it.get('Precision')}, expected {precision}")
            if [d + 1 for d in dims] != nodes:
                problems.append(f"{name}: topology {nodes} is not the cells {dims} plus one")
    for p in problems:
        print(f"{xmf}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
