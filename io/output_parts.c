/* Fields files written in parts (io/output_internal.h tsr_output_write_parts): where HDF5 is
 * serial, ranks writing in turn into one file are one stream into one file, bounded by what one
 * writer gets from the disk; each rank writing its own part at the same time is not. The file
 * the user names still holds global datasets: HDF5 virtual datasets over the parts, read by
 * HDF5 itself (h5py, h5dump, tessera on any decomposition). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/output_internal.h"

#define H5_FAIL(what, path) tsr_output_h5_fail(__LINE__, (what), (path))
#define PATH_MAX_ 4096

static const char *base_of(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* path without ".h5", then ".part<r>.h5": a name that tsr_checkpoint's listing never takes for
 * a checkpoint, sorted beside its file. */
static void part_name(char *buf, size_t n, const char *path, int r) {
  size_t len = strlen(path);
  int stem = (int)(len >= 3 && !strcmp(path + len - 3, ".h5") ? len - 3 : len);
  snprintf(buf, n, "%.*s.part%04d.h5", stem, path, r);
}

/* ---- writing --------------------------------------------------------------------------- */

/* This rank's part: an ordinary checksummed fields file of its box's sub-grid, written under
 * its temporary name and renamed when complete. */
static tsr_err write_part(const char *ppath, const char *path, const char *id,
                          const tsr_grid_meta *meta, const tsr_box *owned, int nfield,
                          const char *const *names, const double *const *data,
                          const tsr_output_opts *opts, int full) {
  tsr_grid_meta pm = *meta;
  tsr_box local = *owned;
  for (int d = 0; d < meta->dim; ++d) {
    double h = (meta->hi[d] - meta->lo[d]) / meta->cells[d];
    pm.cells[d] = tsr_box_len(owned, d);
    pm.lo[d] = meta->lo[d] + h * owned->lo[d];
    pm.hi[d] = meta->lo[d] + h * owned->hi[d];
    local.lo[d] = 0;
    local.hi[d] = pm.cells[d];
  }
  tsr_output_attr attrs[] = {{.name = "part_of", .str = base_of(path)},
                             {.name = "parts_id", .str = id}};
  tsr_output_opts po = *opts;
  po.parts = 0;
  po.nattr = 2;
  po.attrs = attrs;
  tsr_output_slab s = tsr_output_make_slab(meta->dim, pm.cells, &local);
  double need = tsr_output_estimate(&pm, nfield, &po);
  char *tmp = tsr_output_tmp_name(ppath);
  if (!tmp) return TSR_ERR_MEMORY;
  tsr_err err = tsr_output_check_space(ppath, need);
  if (!err && full) tsr_output_plant_enospc(tmp);
  hid_t file = -1;
  if (!err) err = tsr_output_open(tmp, ppath, TSR_OUTPUT_CREATE, 0, MPI_COMM_SELF, &file);
  if (!err && (err = tsr_output_reserve(tmp, ppath, need, NULL))) {
    if (truncate(tmp, 0) != 0) { /* or the close's flush meets the full disk too; best effort */
    }
    H5Fclose(file);
  } else if (!err) {
    err = tsr_output_fill_close(file, tmp, ppath, &pm, &s, nfield, names, data, &po);
  }
  if (!err) {
    tsr_output_release_reserve(tmp);
    err = tsr_output_commit(tmp, ppath);
  } else {
    remove(tmp);
  }
  free(tmp);
  return err;
}

/* Field name of the file on rank 0: a virtual dataset over the grid mapping each rank's box
 * (boxes: lo[3] hi[3] per rank) to dataset /fields/<name> of that rank's part. */
static tsr_err virtual_field(hid_t g, hid_t space, const tsr_grid_meta *m, const int *boxes,
                             int size, const char *name, const char *path) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return H5_FAIL("create a dataset creation list", path);
  /* a part HDF5 cannot open reads as NaN, never as plausible zeros (tsr_output_parts_check
   * refuses such a file before any read) */
  double nan = NAN;
  float nanf = NAN;
  tsr_err err = TSR_OK;
  if (H5Pset_fill_value(dcpl, m->single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE,
                        m->single ? (const void *)&nanf : (const void *)&nan) < 0)
    err = H5_FAIL("set a fill value", path);
  char src[512], part[PATH_MAX_];
  snprintf(src, sizeof src, "/fields/%s", name);
  for (int r = 0; r < size && !err; ++r) {
    tsr_box b;
    memcpy(b.lo, boxes + 6 * r, sizeof b.lo);
    memcpy(b.hi, boxes + 6 * r + 3, sizeof b.hi);
    if (tsr_box_empty(&b)) continue;
    tsr_output_slab ps = tsr_output_make_slab(m->dim, m->cells, &b);
    hid_t vs = H5Scopy(space), ss = H5Screate_simple(ps.rank, ps.count, NULL);
    part_name(part, sizeof part, base_of(path), r); /* relative: the parts travel with the file */
    if (vs < 0 || ss < 0 ||
        H5Sselect_hyperslab(vs, H5S_SELECT_SET, ps.start, NULL, ps.count, NULL) < 0 ||
        H5Pset_virtual(dcpl, vs, part, src, ss) < 0)
      err = H5_FAIL("map a part into a virtual dataset", path);
    if (vs >= 0) H5Sclose(vs);
    if (ss >= 0) H5Sclose(ss);
  }
  hid_t d = err ? -1 : H5Dcreate2(g, name, m->single ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, space,
                                  H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (!err && d < 0) err = H5_FAIL("create a virtual dataset", path);
  if (d >= 0) H5Dclose(d);
  H5Pclose(dcpl);
  return err;
}

/* The file itself, on rank 0 once every part is in place: root attributes (those of a
 * one-piece file, plus parts and parts_id) and one virtual dataset per field. */
static tsr_err write_master(const char *tmp, const char *path, const char *id,
                            const tsr_grid_meta *meta, const int *boxes, int size, int nfield,
                            const char *const *names, const tsr_output_opts *opts) {
  int nparts = 0;
  for (int r = 0; r < size; ++r) {
    tsr_box b;
    memcpy(b.lo, boxes + 6 * r, sizeof b.lo);
    memcpy(b.hi, boxes + 6 * r + 3, sizeof b.hi);
    nparts += !tsr_box_empty(&b);
  }
  tsr_output_attr *attrs = malloc((size_t)(opts->nattr + 2) * sizeof *attrs);
  if (!attrs)
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory writing '%s'", path);
  if (opts->nattr) memcpy(attrs, opts->attrs, (size_t)opts->nattr * sizeof *attrs);
  attrs[opts->nattr] = (tsr_output_attr){.name = "parts_id", .str = id};
  attrs[opts->nattr + 1] = (tsr_output_attr){.name = "parts", .num = nparts};
  tsr_output_opts mo = *opts;
  mo.nattr = opts->nattr + 2;
  mo.attrs = attrs;
  hid_t file = -1, g = -1, space = -1;
  tsr_err err = tsr_output_open(tmp, path, TSR_OUTPUT_CREATE, 0, MPI_COMM_SELF, &file);
  if (!err) err = tsr_output_write_root(file, meta, &mo, path);
  if (!err && (g = H5Gcreate2(file, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0)
    err = H5_FAIL("create group /fields", path);
  tsr_box whole = tsr_box_make(meta->dim, meta->cells);
  tsr_output_slab gs = tsr_output_make_slab(meta->dim, meta->cells, &whole);
  if (!err && (space = H5Screate_simple(gs.rank, gs.gdims, NULL)) < 0)
    err = H5_FAIL("create a dataspace", path);
  for (int f = 0; f < nfield && !err; ++f)
    err = virtual_field(g, space, meta, boxes, size, names[f], path);
  if (space >= 0) H5Sclose(space);
  if (g >= 0) H5Gclose(g);
  if (!err && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) err = H5_FAIL("flush the file", path);
  if (file >= 0 && H5Fclose(file) < 0 && !err) err = H5_FAIL("close the file", path);
  free(attrs);
  return err;
}

tsr_err tsr_output_write_parts(MPI_Comm comm, const char *path, const char *tmp,
                               const tsr_grid_meta *meta, const tsr_box *owned, int nfield,
                               const char *const *names, const double *const *data,
                               const tsr_output_opts *opts, int full) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int *boxes = malloc((size_t)size * 6 * sizeof *boxes);
  tsr_err err = TSR_OK;
  if (!boxes)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory writing '%s'", path);
  err = tsr_output_agree(comm, err);
  if (err) return err;
  int mine[6];
  memcpy(mine, owned->lo, sizeof owned->lo);
  memcpy(mine + 3, owned->hi, sizeof owned->hi);
  MPI_Allgather(mine, 6, MPI_INT, boxes, 6, MPI_INT, comm);
  /* which write this is, in the file and in each part: a part left by an earlier write of the
   * same name (another rank count) is never taken for one of this write's */
  char id[17] = "";
  if (rank == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                 ((uint64_t)getpid() << 40);
    snprintf(id, sizeof id, "%016llx", (unsigned long long)v);
  }
  MPI_Bcast(id, sizeof id, MPI_CHAR, 0, comm);

  char ppath[PATH_MAX_];
  part_name(ppath, sizeof ppath, path, rank);
  err = tsr_output_agree(comm, tsr_box_empty(owned) ? TSR_OK
                                                    : write_part(ppath, path, id, meta, owned,
                                                                 nfield, names, data, opts, full));
  if (!err)
    err = tsr_output_agree(comm, rank == 0 ? write_master(tmp, path, id, meta, boxes, size, nfield,
                                                          names, opts)
                                           : TSR_OK);
  if (!err) err = tsr_output_agree(comm, rank == 0 ? tsr_output_commit(tmp, path) : TSR_OK);
  if (err) { /* nothing of this write stays: no part without its file */
    if (!tsr_box_empty(owned)) remove(ppath);
    if (rank == 0) remove(tmp);
  }
  free(boxes);
  return err;
}

/* ---- reading --------------------------------------------------------------------------- */

int tsr_output_is_parted(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 0;
  int yes = H5Aexists(f, "parts") > 0;
  H5Fclose(f);
  return yes;
}

static void dir_of(const char *path, char *dir, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, "./");
  else snprintf(dir, n, "%.*s", (int)(slash - path) + 1, path);
}

hid_t tsr_output_parts_dapl(const char *path) {
  char dir[PATH_MAX_];
  dir_of(path, dir, sizeof dir);
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  if (dapl >= 0 && H5Pset_virtual_prefix(dapl, dir) < 0) {
    H5Pclose(dapl);
    return -1;
  }
  return dapl;
}

/* The fixed-length string attribute name of obj into buf ("" when it is missing). */
static void read_id(hid_t obj, const char *name, char *buf, size_t n) {
  buf[0] = '\0';
  hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
  hid_t t = a < 0 ? -1 : H5Aget_type(a);
  char tmp[256] = "";
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
      H5Tget_size(t) < sizeof tmp && H5Aread(a, t, tmp) >= 0)
    snprintf(buf, n, "%s", tmp);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
}

/* Part ppath of path belongs to write id and holds dataset dname of rank dims (the block the
 * file maps to it) and of the virtual dataset's type vtype (HDF5 would convert another). */
static tsr_err check_part(const char *ppath, const char *path, const char *dname, const char *id,
                          int rank, const hsize_t *dims, hid_t vtype) {
  TSR_CHECK(access(ppath, R_OK) == 0, TSR_ERR_INPUT,
            "'%s' is written in parts, and its part '%s' cannot be read (%s); a file in parts "
            "needs its .part*.h5 files beside it",
            path, ppath, strerror(errno));
  hid_t f = H5Fopen(ppath, H5F_ACC_RDONLY, H5P_DEFAULT);
  TSR_CHECK(f >= 0, TSR_ERR_INPUT, "'%s': its part '%s' is not an HDF5 file or is damaged", path,
            ppath);
  char have[64];
  read_id(f, "parts_id", have, sizeof have);
  hid_t d = strcmp(have, id) ? -1 : H5Dopen2(f, dname, H5P_DEFAULT);
  hid_t sp = d < 0 ? -1 : H5Dget_space(d);
  hsize_t have_dims[H5S_MAX_RANK];
  int same = sp >= 0 && H5Sget_simple_extent_dims(sp, have_dims, NULL) == rank;
  for (int a = 0; same && a < rank; ++a) same = have_dims[a] == dims[a];
  hid_t t = d < 0 ? -1 : H5Dget_type(d);
  same = same && t >= 0 && H5Tequal(t, vtype) > 0;
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  H5Fclose(f);
  TSR_CHECK(!strcmp(have, id), TSR_ERR_INPUT,
            "'%s': its part '%s' belongs to another write of that name (parts_id '%s', not '%s')",
            path, ppath, have, id);
  TSR_CHECK(same, TSR_ERR_INPUT,
            "'%s': its part '%s' has no dataset '%s' of the extent and type the file maps to "
            "it", path, ppath, dname);
  return TSR_OK;
}

tsr_err tsr_output_parts_check(hid_t file, hid_t d, const char *path, const tsr_output_slab *s) {
  if (s->empty) return TSR_OK;
  char id[64], dir[PATH_MAX_];
  read_id(file, "parts_id", id, sizeof id);
  dir_of(path, dir, sizeof dir);
  hid_t dcpl = H5Dget_create_plist(d);
  size_t n = 0;
  TSR_CHECK(dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Pget_virtual_count(dcpl, &n) >= 0,
            TSR_ERR_INPUT, "'%s' says it is written in parts, but its fields are not virtual "
            "datasets over them; the file is damaged", path);
  hid_t vtype = H5Dget_type(d);
  tsr_err err = vtype < 0 ? H5_FAIL("read a field's type", path) : TSR_OK;
  for (size_t i = 0; i < n && !err; ++i) {
    hid_t vs = H5Pget_virtual_vspace(dcpl, i);
    hsize_t lo[3], hi[3];
    int touch = vs >= 0 && H5Sget_select_bounds(vs, lo, hi) >= 0;
    for (int a = 0; touch && a < s->rank; ++a)
      touch = lo[a] < s->start[a] + s->count[a] && hi[a] >= s->start[a];
    char fname[PATH_MAX_] = "", dname[512] = "", ppath[2 * PATH_MAX_];
    if (touch && (H5Pget_virtual_filename(dcpl, i, fname, sizeof fname) < 0 ||
                  H5Pget_virtual_dsetname(dcpl, i, dname, sizeof dname) < 0))
      err = H5_FAIL("read the map of a virtual dataset", path);
    else if (touch) {
      snprintf(ppath, sizeof ppath, "%s%s", fname[0] == '/' ? "" : dir, fname);
      hsize_t dims[3];
      for (int a = 0; a < s->rank; ++a) dims[a] = hi[a] - lo[a] + 1;
      err = check_part(ppath, path, dname, id, s->rank, dims, vtype);
    }
    if (vs >= 0) H5Sclose(vs);
  }
  if (vtype >= 0) H5Tclose(vtype);
  H5Pclose(dcpl);
  return err;
}
