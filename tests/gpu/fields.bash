# Field comparison for the GPU end-to-end scripts (sourced): the GPU machines have serial HDF5
# and no HDF5 tools, so python3 with h5py does what h5diff does elsewhere.
# same_fields A B: the /fields datasets of two files hold the same bits (h5diff where the HDF5
# tools are installed; h5py on the GPU machines, which lack them)
same_fields() {
  local tol=${3:-0}
  if [ "$tol" = 0 ] && command -v h5diff >/dev/null; then
    h5diff -q "$1" "$2" /fields /fields >/dev/null 2>&1
  else
    python3 - "$1" "$2" "$tol" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["fields"], h5py.File(sys.argv[2], "r")["fields"]
tol = float(sys.argv[3])
ok = sorted(a) == sorted(b)
for k in a:
    x, y = a[k][...], b[k][...]
    if x.shape != y.shape:
        ok = False
        continue
    rel = float(np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-300))
    same = x.dtype == y.dtype and x.tobytes() == y.tobytes()
    print(f"  {k} ({x.dtype}): max relative difference {rel:.3e}, {'bitwise identical' if same else 'bits differ'}")
    ok = ok and (same if tol == 0 else rel <= tol)
sys.exit(0 if ok else 1)
PY
  fi
}
