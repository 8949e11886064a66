"""Reads tessera's XDMF files through ParaView and compares what it shows with the HDF5 files.

usage: xvfb-run -a pvpython paraview_check.py DIR...

For each run's output directory DIR, final.xmf and (where the run wrote snapshots)
snapshots.xmf are opened with each of ParaView's XDMF readers (XDMFReader, Xdmf3ReaderS,
Xdmf3ReaderT). The series' times must be the `time` attributes of final.h5 / of the
snapshot_<step>.h5 files in step order, exactly; at each time every cell array must be every
dataset of /fields in that file, read with h5py, with the same type (float32 or float64), the
same values bit for bit in the same order (x fastest, as /fields is stored), on a mesh of the
file's cells whose bounds are the file's lo and hi. Each checkpoint of DIR is read the same way
through an XDMF file made from final.xmf (tessera writes none for checkpoints), so checkpoints
in parts (HDF5 virtual datasets) are read through ParaView too. Then the last snapshot (else
the final state) is rendered to DIR/paraview.png, which must have more than a few colours.
Exit 0 when all holds, else 1 with one line per problem.
"""
import glob
import math
import os
import re
import sys

import h5py
import numpy as np
from paraview import simple
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonDataModel import vtkDataObject
from vtkmodules.vtkIOImage import vtkPNGReader

READERS = ("XDMFReader", "Xdmf3ReaderS", "Xdmf3ReaderT")
problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def open_reader(kind, xmf):
    make = getattr(simple, kind)
    return make(FileNames=[xmf]) if kind == "XDMFReader" else make(FileName=[xmf])


def times_of(reader):
    tv = reader.TimestepValues
    if tv is None:
        return []
    return [tv] if isinstance(tv, float) else list(tv)


def leaf(data):
    """The one uniform grid in what a reader produced (a plain dataset or a composite)."""
    if not data.IsA("vtkCompositeDataSet"):
        return data
    it = data.NewIterator()
    it.InitTraversal()
    leaves = []
    while not it.IsDoneWithTraversal():
        leaves.append(it.GetCurrentDataObject())
        it.GoToNextItem()
    return leaves[0] if len(leaves) == 1 else None


def asymmetric(name, values):
    """A field read with its axes swapped must not look the same: refuse a test case whose
    field would (square and symmetric)."""
    swapped = values.transpose().ravel()
    if values.ndim < 2 or np.array_equal(values.ravel(), swapped):
        problem(name, "the field reads the same with its axes swapped: use an asymmetric case")


def compare(where, grid, h5path):
    with h5py.File(h5path, "r") as f:
        cells = [int(c) for c in f.attrs["cells"]]
        lo, hi = list(f.attrs["lo"]), list(f.attrs["hi"])
        fields = {k: f["fields"][k][...] for k in f["fields"]}
    dims = list(grid.GetDimensions())
    want = [c + 1 for c in cells] + ([2] if len(cells) == 2 else [])
    if dims != want:
        problem(where, f"mesh of {dims} nodes, the file has {cells} cells")
        return
    b = grid.GetBounds()
    for d in range(len(cells)):
        if not (math.isclose(b[2 * d], lo[d], rel_tol=1e-12, abs_tol=1e-14) and
                math.isclose(b[2 * d + 1], hi[d], rel_tol=1e-12, abs_tol=1e-14)):
            problem(where, f"axis {d} spans {b[2 * d]}..{b[2 * d + 1]}, the file {lo[d]}..{hi[d]}")
    if len(cells) == 2 and not math.isclose(b[4], -b[5]):
        problem(where, f"a 2D grid's layer is not centred on z = 0: {b[4]}..{b[5]}")
    cd = grid.GetCellData()
    got = {cd.GetArrayName(i) for i in range(cd.GetNumberOfArrays())}
    if got != set(fields):
        problem(where, f"cell arrays {sorted(got)}, the file has {sorted(fields)}")
    for name in sorted(got & set(fields)):
        h5 = fields[name]
        asymmetric(f"{h5path}:/fields/{name}", h5)
        pv = numpy_support.vtk_to_numpy(cd.GetArray(name))
        if pv.dtype != h5.dtype:
            problem(where, f"{name}: ParaView reads {pv.dtype}, the file holds {h5.dtype}")
        elif pv.shape != (h5.size,) or not np.array_equal(pv, h5.ravel(order="C")):
            bad = int(np.count_nonzero(pv != h5.ravel())) if pv.shape == (h5.size,) else pv.size
            problem(where, f"{name}: {bad} of {h5.size} values differ from {h5path}")


def check_series(xmf, files):
    """files: the HDF5 files the series must show, in time order."""
    want = []
    for path in files:
        with h5py.File(path, "r") as f:
            want.append(float(f.attrs["time"]))
    checked = 0
    for kind in READERS:
        where = f"{xmf} ({kind})"
        reader = open_reader(kind, xmf)
        times = times_of(reader)
        if times != want:
            problem(where, f"times {times}, the files say {want}")
        for t, path in zip(want, files):
            reader.UpdatePipeline(t)
            out = reader.GetClientSideObject().GetOutputDataObject(0)
            shown = out.GetInformation().Get(vtkDataObject.DATA_TIME_STEP())
            if shown != t:
                problem(where, f"asked for t = {t!r}, got the data of t = {shown!r}")
            grid = leaf(out)
            if grid is None or not grid.IsA("vtkImageData"):
                problem(where, f"t = {t!r}: not one uniform grid")
                continue
            compare(f"{where} t={t!r}", grid, path)
            checked += 1
        simple.Delete(reader)
    return checked


def check_checkpoints(run):
    """An XDMF file per checkpoint, made from final.xmf with its file's name and time."""
    checked = 0
    with open(os.path.join(run, "final.xmf")) as f:
        final = f.read()
    for path in sorted(glob.glob(os.path.join(run, "checkpoint_*.h5"))):
        name = os.path.basename(path)
        if ".part" in name:
            continue
        with h5py.File(path, "r") as f:
            t = float(f.attrs["time"])
            vds = all(f["fields"][k].is_virtual for k in f["fields"])
        text = re.sub(r'<Time Value="[^"]*"/>', f'<Time Value="{t!r}"/>', final)
        text = text.replace(">final.h5:", f">{name}:")
        xmf = os.path.join(run, name[:-3] + ".paraview.xmf")
        with open(xmf, "w") as f:
            f.write(text)
        checked += check_series(xmf, [path])
        print(f"  {name}: {'virtual datasets over parts' if vds else 'one file'}")
    return checked


def render(xmf, png):
    reader = open_reader("Xdmf3ReaderS", xmf)
    times = times_of(reader)
    view = simple.CreateRenderView()
    view.ViewSize = [320, 240]
    view.ViewTime = times[-1] if times else 0.0
    display = simple.Show(reader, view)
    display.SetRepresentationType("Surface")  # a uniform grid shows as an outline by default
    field = reader.CellData.keys()[0]
    simple.ColorBy(display, ("CELLS", field))
    display.RescaleTransferFunctionToDataRange(True)
    view.ResetCamera()
    simple.SaveScreenshot(png, view, ImageResolution=[320, 240])
    simple.Delete(reader)
    simple.Delete(view)
    if not os.path.exists(png) or os.path.getsize(png) == 0:
        problem(png, "no image was written")
        return
    r = vtkPNGReader()
    r.SetFileName(png)
    r.Update()
    img = r.GetOutput()
    pix = numpy_support.vtk_to_numpy(img.GetPointData().GetScalars())
    pix = pix.reshape(pix.shape[0], -1)
    colours, counts = np.unique(pix, axis=0, return_counts=True)
    # the field, coloured, covers a good part of the picture; the rest is the background
    covered = 1.0 - counts.max() / len(pix)
    if list(img.GetDimensions()[:2]) != [320, 240] or len(colours) < 16 or covered < 0.15:
        problem(png, f"{img.GetDimensions()[:2]} pixels of {len(colours)} colours, "
                     f"{100 * covered:.0f}% not background: not a picture of the field")
    print(f"  {png}: 320 x 240, {len(colours)} colours, {100 * covered:.0f}% not background")


def main():
    for run in sys.argv[1:]:
        print(run)
        n = check_series(os.path.join(run, "final.xmf"), [os.path.join(run, "final.h5")])
        snaps = glob.glob(os.path.join(run, "snapshot_*.h5"))
        snaps.sort(key=lambda p: int(os.path.basename(p)[9:-3]))
        if snaps:
            n += check_series(os.path.join(run, "snapshots.xmf"), snaps)
        n += check_checkpoints(run)
        print(f"  {n} (reader, time) pairs compared with h5py")
        render(os.path.join(run, "snapshots.xmf" if snaps else "final.xmf"),
               os.path.join(run, "paraview.png"))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
