/* h5_damage: copies an HDF5 file (a checkpoint) and damages the copy in one way, through
 * HDF5's API, for tests/scripts/damaged.sh: files that HDF5 still opens but that tessera did
 * not write that way.
 *
 *   h5_damage IN OUT OP [ARGS...]
 *
 * OP:
 *   copy                              a plain copy
 *   del-attr NAME                     delete root attribute NAME
 *   set-attr NAME TYPE V1 [V2 ...]    replace (or add) root attribute NAME, TYPE:
 *                                       i64 | i32 | f64: a value per V (one value: a scalar,
 *                                                        unless TYPE ends in 'a', e.g. i64a)
 *                                       str: one fixed-length string; strarr: V1 .. Vn;
 *                                       vlstr: a variable-length string
 *                                     numbers: nan, inf, -inf and 2^N are understood
 *   del-dset PATH                     delete dataset (link) PATH
 *   rename-dset PATH NEWPATH          move a dataset
 *   reshape-dset PATH KIND [DIMS...]  replace dataset PATH by one holding its values (as many
 *                                     as fit, the rest 0.25); KIND: shape DIMS (float64 of
 *                                     these dims), int (int64, values x 1000), f32, 1d, nochunk,
 *                                     nofl32 (chunked, no Fletcher32), str, nan (every value)
 *   set-dset-attr PATH NAME TYPE V... as set-attr, on object PATH
 *   del-group PATH                    delete a group link (/fields, /pinn)
 *
 * Exit 0 done, 1 with a message otherwise. */
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *m, const char *a) {
  fprintf(stderr, "h5_damage: %s%s%s\n", m, a ? ": " : "", a ? a : "");
  exit(1);
}

static void copy_file(const char *in, const char *out) {
  FILE *i = fopen(in, "rb");
  if (!i) die("cannot open input", in);
  FILE *o = fopen(out, "wb");
  if (!o) die("cannot create output", out);
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, i)) > 0)
    if (fwrite(buf, 1, n, o) != n) die("write failed", out);
  fclose(i);
  if (fclose(o)) die("close failed", out);
}

static double num(const char *s) {
  if (!strcmp(s, "nan")) return NAN;
  if (!strcmp(s, "inf")) return INFINITY;
  if (!strcmp(s, "-inf")) return -INFINITY;
  if (!strncmp(s, "2^", 2)) return ldexp(1.0, atoi(s + 2));
  if (!strncmp(s, "-2^", 3)) return -ldexp(1.0, atoi(s + 3));
  return strtod(s, NULL);
}

static void set_attr(hid_t obj, const char *name, const char *type, int nv, char **v) {
  if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0) die("cannot delete attribute", name);
  hid_t sp, t, a;
  int arr = type[strlen(type) - 1] == 'a';
  if (!strncmp(type, "i64", 3) || !strncmp(type, "i32", 3) || !strncmp(type, "f64", 3)) {
    hsize_t n = (hsize_t)nv;
    sp = (nv == 1 && !arr) ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
    if (type[0] == 'f') {
      double *d = malloc(sizeof(double) * nv);
      for (int i = 0; i < nv; ++i) d[i] = num(v[i]);
      a = H5Acreate2(obj, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
      if (a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, d) < 0) die("cannot write attribute", name);
      free(d);
    } else {
      int64_t *d = malloc(sizeof(int64_t) * nv);
      for (int i = 0; i < nv; ++i) d[i] = (int64_t)num(v[i]);
      for (int i = 0; i < nv; ++i)
        if (strchr(v[i], '^') == NULL && strchr(v[i], 'e') == NULL) d[i] = strtoll(v[i], NULL, 10);
      a = H5Acreate2(obj, name, type[1] == '6' ? H5T_STD_I64LE : H5T_STD_I32LE, sp, H5P_DEFAULT,
                     H5P_DEFAULT);
      if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, d) < 0) die("cannot write attribute", name);
      free(d);
    }
  } else if (!strcmp(type, "str") || !strcmp(type, "strarr")) {
    size_t len = 1;
    for (int i = 0; i < nv; ++i)
      if (strlen(v[i]) + 1 > len) len = strlen(v[i]) + 1;
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hsize_t n = (hsize_t)nv;
    sp = !strcmp(type, "str") ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
    char *buf = calloc((size_t)nv, len);
    for (int i = 0; i < nv; ++i) memcpy(buf + i * len, v[i], strlen(v[i]));
    a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, t, buf) < 0) die("cannot write attribute", name);
    free(buf);
    H5Tclose(t);
  } else if (!strcmp(type, "vlstr")) {
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    sp = H5Screate(H5S_SCALAR);
    a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    const char *s = v[0];
    if (a < 0 || H5Awrite(a, t, &s) < 0) die("cannot write attribute", name);
    H5Tclose(t);
  } else {
    die("unknown attribute type", type);
    return;
  }
  H5Aclose(a);
  H5Sclose(sp);
}

static void reshape(hid_t f, const char *path, const char *kind, int nd_new, char **dimv) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) die("no dataset", path);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[H5S_MAX_RANK], ndims[H5S_MAX_RANK];
  int nd = H5Sget_simple_extent_dims(sp, dims, NULL);
  hssize_t np = H5Sget_simple_extent_npoints(sp);
  double *old = malloc(sizeof(double) * (size_t)(np > 0 ? np : 1));
  if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, old) < 0)
    die("cannot read old values (virtual dataset without its parts?)", path);
  /* attributes of the dataset are dropped: none in tessera's files */
  H5Sclose(sp);
  H5Dclose(d);
  if (H5Ldelete(f, path, H5P_DEFAULT) < 0) die("cannot delete", path);

  int k = nd;
  for (int i = 0; i < nd; ++i) ndims[i] = dims[i];
  if (!strcmp(kind, "shape")) {
    k = nd_new;
    for (int i = 0; i < k; ++i) ndims[i] = (hsize_t)strtoull(dimv[i], NULL, 10);
  } else if (!strcmp(kind, "1d")) {
    k = 1;
    ndims[0] = (hsize_t)np;
  }
  hsize_t nn = 1;
  for (int i = 0; i < k; ++i) nn *= ndims[i];
  double *nv = malloc(sizeof(double) * (size_t)(nn ? nn : 1));
  for (hsize_t i = 0; i < nn; ++i) nv[i] = (hssize_t)i < np ? old[i] : 0.25;
  if (!strcmp(kind, "nan"))
    for (hsize_t i = 0; i < nn; ++i) nv[i] = NAN;
  hid_t nsp = H5Screate_simple(k, ndims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int chunk = strcmp(kind, "nochunk") != 0 && nn > 0;
  if (chunk) {
    hsize_t cd[H5S_MAX_RANK];
    for (int i = 0; i < k; ++i) cd[i] = ndims[i] ? ndims[i] : 1;
    H5Pset_chunk(dcpl, k, cd);
    if (strcmp(kind, "nofl32") != 0) H5Pset_fletcher32(dcpl);
  }
  hid_t ft = H5T_IEEE_F64LE, mt = H5T_NATIVE_DOUBLE;
  void *buf = nv;
  int64_t *iv = NULL;
  char *sv = NULL;
  hid_t st = -1;
  if (!strcmp(kind, "int")) {
    iv = malloc(sizeof(int64_t) * (size_t)(nn ? nn : 1));
    for (hsize_t i = 0; i < nn; ++i) iv[i] = (int64_t)llround(nv[i] * 1000);
    ft = H5T_STD_I64LE;
    mt = H5T_NATIVE_INT64;
    buf = iv;
  } else if (!strcmp(kind, "f32")) {
    ft = H5T_IEEE_F32LE;
  } else if (!strcmp(kind, "str")) {
    st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 8);
    sv = calloc((size_t)(nn ? nn : 1), 8);
    for (hsize_t i = 0; i < nn; ++i) snprintf(sv + 8 * i, 8, "%.4f", nv[i]);
    ft = mt = st;
    buf = sv;
  }
  /* intermediate groups exist (same path) */
  hid_t nd2 = H5Dcreate2(f, path, ft, nsp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (nd2 < 0) die("cannot create new dataset", path);
  if (nn > 0 && H5Dwrite(nd2, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    die("cannot write new dataset", path);
  H5Dclose(nd2);
  H5Pclose(dcpl);
  H5Sclose(nsp);
  if (st >= 0) H5Tclose(st);
  free(old);
  free(nv);
  free(iv);
  free(sv);
}

int main(int argc, char **argv) {
  if (argc < 4) die("usage: h5_damage IN OUT OP [ARGS...]", NULL);
  const char *in = argv[1], *out = argv[2], *op = argv[3];
  copy_file(in, out);
  if (!strcmp(op, "copy")) return 0;
  hid_t f = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) die("cannot open copy as HDF5", out);
  if (!strcmp(op, "del-attr") && argc == 5) {
    if (H5Adelete(f, argv[4]) < 0) die("cannot delete attribute", argv[4]);
  } else if (!strcmp(op, "set-attr") && argc >= 7) {
    set_attr(f, argv[4], argv[5], argc - 6, argv + 6);
  } else if (!strcmp(op, "set-dset-attr") && argc >= 8) {
    hid_t o = H5Oopen(f, argv[4], H5P_DEFAULT);
    if (o < 0) die("no object", argv[4]);
    set_attr(o, argv[5], argv[6], argc - 7, argv + 7);
    H5Oclose(o);
  } else if ((!strcmp(op, "del-dset") || !strcmp(op, "del-group")) && argc == 5) {
    if (H5Ldelete(f, argv[4], H5P_DEFAULT) < 0) die("cannot delete", argv[4]);
  } else if (!strcmp(op, "rename-dset") && argc == 6) {
    if (H5Lmove(f, argv[4], f, argv[5], H5P_DEFAULT, H5P_DEFAULT) < 0) die("cannot move", argv[4]);
  } else if (!strcmp(op, "reshape-dset") && argc >= 6) {
    reshape(f, argv[4], argv[5], argc - 6, argv + 6);
  } else {
    die("unknown op or wrong argument count", op);
  }
  if (H5Fclose(f) < 0) die("close failed", out);
  return 0;
}
