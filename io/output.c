/* HDF5 fields files: global datasets written and read as per-rank hyperslabs (io/output.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/output.h"

#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/output_chunks.h"
#include "io/output_internal.h"
#include "tsr_version.h"

/* TSR_OUTPUT_NO_MPIO lets a parallel-HDF5 machine compile the serial-only build that GPU
 * machines get, so that path is checked before it ships. */
#if defined(H5_HAVE_PARALLEL) && !defined(TSR_OUTPUT_NO_MPIO)
#define TSR_MPIO 1
#else
#define TSR_MPIO 0
#endif

#define MSG_MAX 4096

int tsr_output_parallel_available(void) { return TSR_MPIO; }

static pthread_mutex_t io_mutex = PTHREAD_MUTEX_INITIALIZER;
void tsr_io_lock(void) { pthread_mutex_lock(&io_mutex); }
void tsr_io_unlock(void) { pthread_mutex_unlock(&io_mutex); }

/* ---- errors ---------------------------------------------------------------------------- */

/* HDF5 prints its whole error stack to stderr by default; we report one message of our own,
 * and restore the caller's setting on the way out. */
typedef struct {
  H5E_auto2_t func;
  void *data;
} quiet_state;

static quiet_state h5_quiet(void) {
  quiet_state q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return q;
}

static void h5_restore(quiet_state q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

typedef struct {
  char *buf;
  size_t n;
} reason_buf;

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data) {
  reason_buf *r = data;
  if (!e->desc || !e->desc[0]) return 0;
  /* the first entry with text, unless a later one carries the system's errno text (a write
   * that failed below a flush, several entries up the stack) */
  if (!r->buf[0] || (strstr(e->desc, "errno = ") && !strstr(r->buf, "errno = ")))
    snprintf(r->buf, r->n, "%s", e->desc);
  (void)n;
  return 0;
}

/* The innermost entry of HDF5's error stack says what really failed (errno text included for
 * file opens and writes). Call it right after the failing call: the next API call clears the
 * stack. */
static void h5_reason(char *buf, size_t n) {
  reason_buf r = {buf, n};
  buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &r);
  if (!buf[0]) snprintf(buf, n, "unknown HDF5 error");
}

static int saw_full_disk;

/* A full disk, said plainly (HDF5's innermost reason is a long line of offsets), or TSR_OK
 * when why is about something else. */
static tsr_err full_disk(int line, const char *why, const char *path) {
  if (!strstr(why, "No space left on device") && !strstr(why, "MPI_ERR_NO_SPACE")) return TSR_OK;
  saw_full_disk = 1;
  return tsr_err_set(TSR_ERR_IO, __FILE__, line,
                     "cannot write '%s': no space left on device; free space there or write "
                     "elsewhere (--out DIR or output.dir)",
                     path);
}

static tsr_err h5_fail(int line, const char *what, const char *path) {
  char why[1024];
  h5_reason(why, sizeof why);
  if (full_disk(line, why, path)) return TSR_ERR_IO;
  return tsr_err_set(TSR_ERR_HDF5, __FILE__, line, "HDF5 could not %s in '%s': %s", what, path,
                     why);
}
#define H5_FAIL(what, path) h5_fail(__LINE__, (what), (path))

tsr_err tsr_output_h5_fail(int line, const char *what, const char *path) {
  return h5_fail(line, what, path);
}

/* Every rank returns the code and the message of the lowest failing rank, so no rank reports
 * success (or waits in a collective call) while another has failed. Collective. */
tsr_err tsr_output_agree(MPI_Comm comm, tsr_err local) {
  int rank, size, mine, first;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mine = local != TSR_OK ? rank : size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return TSR_OK;
  int code = (int)local;
  char msg[MSG_MAX];
  if (rank == first) snprintf(msg, sizeof msg, "%s", tsr_err_message());
  MPI_Bcast(&code, 1, MPI_INT, first, comm);
  MPI_Bcast(msg, MSG_MAX, MPI_CHAR, first, comm);
  if (size > 1) {
    if (rank == first) {
      tsr_err_prefix("rank %d: ", first);
    } else {
      tsr_err_clear();
      tsr_err_append("rank %d: %s", first, msg);
    }
  }
  return (tsr_err)code;
}

#define agree tsr_output_agree

/* ---- fault injection (tests) ----------------------------------------------------------- */

static int inject_enospc;

void tsr_output_inject_enospc(void) { inject_enospc = 1; }

/* Rank 0, before any rank opens tmp: tmp becomes a link to /dev/full, where every write fails
 * with ENOSPC; removing tmp on the error path removes the link. */
void tsr_output_plant_enospc(const char *tmp) {
  remove(tmp);
  if (symlink("/dev/full", tmp) != 0)
    fprintf(stderr, "tessera: --inject-fault kind=enospc: cannot link '%s' to /dev/full: %s\n",
            tmp, strerror(errno));
}

/* ---- layout ---------------------------------------------------------------------------- */

typedef tsr_output_slab slab;

tsr_output_slab tsr_output_make_slab(int dim, const int cells[3], const tsr_box *b) {
  slab s = {.rank = dim, .empty = tsr_box_empty(b)};
  for (int i = 0; i < dim; ++i) {
    int a = dim - 1 - i;
    s.gdims[i] = (hsize_t)cells[a];
    s.start[i] = s.empty ? 0 : (hsize_t)b->lo[a];
    s.count[i] = s.empty ? 0 : (hsize_t)tsr_box_len(b, a);
  }
  return s;
}

static int valid_name(const char *name) {
  return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0;
}

static tsr_err check_meta(const tsr_grid_meta *m, const char *path) {
  TSR_CHECK(m->dim == 2 || m->dim == 3, TSR_ERR_INTERNAL,
            "cannot write '%s': grid dimension %d is not 2 or 3", path, m->dim);
  for (int d = 0; d < m->dim; ++d)
    TSR_CHECK(m->cells[d] >= 1, TSR_ERR_INTERNAL, "cannot write '%s': grid has %d cells on axis %d",
              path, m->cells[d], d);
  return TSR_OK;
}

static tsr_err check_box(const tsr_box *owned, int dim, const int cells[3], const char *path) {
  tsr_box global = tsr_box_make(dim, cells);
  char z[32] = "";
  if (dim == 3) snprintf(z, sizeof z, "x%d", cells[2]);
  TSR_CHECK(tsr_box_contains(&global, owned), TSR_ERR_INPUT,
            "owned box [%d,%d)x[%d,%d)x[%d,%d) does not fit the grid of %dx%d%s cells of '%s'",
            owned->lo[0], owned->hi[0], owned->lo[1], owned->hi[1], owned->lo[2], owned->hi[2],
            cells[0], cells[1], z, path);
  return TSR_OK;
}

static tsr_err check_write_args(const char *path, const tsr_grid_meta *meta, const tsr_box *owned,
                                int nfield, const char *const *names, const double *const *data,
                                const tsr_output_layout *lay) {
  TSR_CHECK(path && path[0] && meta && owned, TSR_ERR_INTERNAL,
            "tsr_output_write_fields: NULL argument");
  TSR_CALL(check_meta(meta, path));
  TSR_CALL(check_box(owned, meta->dim, meta->cells, path));
  TSR_CHECK(!lay || (lay->base && lay->sy >= 1 && lay->sy >= tsr_box_len(owned, 0) &&
                     (meta->dim == 2 || (lay->sz % lay->sy == 0 &&
                                         lay->sz / lay->sy >= tsr_box_len(owned, 1)))),
            TSR_ERR_INTERNAL, "cannot write '%s': the fields' layout does not hold the box", path);
  static const double *none[1]; /* data unused with a layout */
  if (lay) data = none;
  for (int f = 0; lay && f < nfield; ++f)
    TSR_CHECK(lay->base[f] || tsr_box_empty(owned), TSR_ERR_INTERNAL,
              "cannot write '%s': no data for field '%s'", path,
              names && names[f] ? names[f] : "?");
  TSR_CHECK(nfield >= 0 && (nfield == 0 || (names && data)), TSR_ERR_INTERNAL,
            "cannot write '%s': %d fields without names or data", path, nfield);
  for (int f = 0; f < nfield; ++f) {
    TSR_CHECK(valid_name(names[f]), TSR_ERR_INPUT,
              "cannot write '%s': field name '%s' is empty or contains '/'", path,
              names[f] ? names[f] : "(null)");
    TSR_CHECK(lay || data[f] || tsr_box_empty(owned), TSR_ERR_INTERNAL,
              "cannot write '%s': no data for field '%s'", path, names[f]);
    for (int g = 0; g < f; ++g)
      TSR_CHECK(strcmp(names[f], names[g]) != 0, TSR_ERR_INPUT,
                "cannot write '%s': field '%s' is given twice", path, names[f]);
  }
  return TSR_OK;
}

/* ---- files ----------------------------------------------------------------------------- */

tsr_err tsr_output_open(const char *name, const char *path, enum tsr_output_open_mode mode,
                        int mpio, MPI_Comm comm, hid_t *file) {
  *file = -1;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return H5_FAIL("create a file access list", path);
#if TSR_MPIO
  if (mpio && H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0) {
    tsr_err e = H5_FAIL("select the MPI-IO driver", path);
    H5Pclose(fapl);
    return e;
  }
#else
  (void)mpio;
  (void)comm;
#endif
  char why[1024];
  if (mode == TSR_OUTPUT_CREATE) {
    /* the root's attributes in dense storage (a heap; the 1.8 file format): the case text is
     * one of them, and a compact attribute stops at 64 KiB ("object header message is too
     * large") */
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fcpl >= 0 && H5Pset_attr_phase_change(fcpl, 0, 0) >= 0 &&
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) >= 0)
      *file = H5Fcreate(name, H5F_ACC_TRUNC, fcpl, fapl);
    if (*file < 0) h5_reason(why, sizeof why); /* before the next call clears the stack */
    if (fcpl >= 0) H5Pclose(fcpl);
  } else {
    *file = H5Fopen(name, mode == TSR_OUTPUT_READ ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl);
    if (*file < 0) h5_reason(why, sizeof why);
  }
  H5Pclose(fapl);
  if (*file >= 0) return TSR_OK;
  if (mode == TSR_OUTPUT_READ)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "cannot read '%s': not an HDF5 file or damaged (%s)", path, why);
  if (full_disk(__LINE__, why, path)) return TSR_ERR_IO;
  tsr_output_dir_problem(path, why, sizeof why);
  return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__, "cannot write '%s': %s; " TSR_OUTPUT_DIR_ADVICE,
                     path, why);
}

/* One attribute on obj: n values, or a scalar when n == 0. */
static tsr_err attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, int n,
                          const void *v, const char *path) {
  hsize_t len = (hsize_t)n;
  hid_t sp = n ? H5Screate_simple(1, &len, NULL) : H5Screate(H5S_SCALAR);
  hid_t a = sp < 0 ? -1 : H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
  tsr_err err = TSR_OK;
  if (a < 0 || H5Awrite(a, mtype, v) < 0) err = H5_FAIL("write an attribute", path);
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  return err;
}

tsr_err tsr_output_write_root(hid_t file, const tsr_grid_meta *m, const tsr_output_opts *o,
                              const char *path) {
  int dim = m->dim;
  int64_t cells[3] = {1, 1, 1}, step = m->step;
  for (int d = 0; d < dim; ++d) cells[d] = m->cells[d];
  TSR_CALL(attr_write(file, "lo", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dim, m->lo, path));
  TSR_CALL(attr_write(file, "hi", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dim, m->hi, path));
  TSR_CALL(attr_write(file, "cells", H5T_STD_I64LE, H5T_NATIVE_INT64, dim, cells, path));
  TSR_CALL(attr_write(file, "time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &m->time, path));
  TSR_CALL(attr_write(file, "step", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &step, path));
  hid_t str = H5Tcopy(H5T_C_S1);
  if (str < 0 || H5Tset_size(str, strlen(TSR_VERSION) + 1) < 0)
    return H5_FAIL("make a string type", path);
  tsr_err err = attr_write(file, "tessera_version", str, str, 0, TSR_VERSION, path);
  H5Tclose(str);
  TSR_CALL(err);
  for (int i = 0; o && i < o->nattr; ++i) {
    const tsr_output_attr *a = &o->attrs[i];
    if (!a->str && a->ints) {
      TSR_CALL(attr_write(file, a->name, H5T_STD_I64LE, H5T_NATIVE_INT64, a->nint, a->ints, path));
      continue;
    }
    if (!a->str) {
      TSR_CALL(attr_write(file, a->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &a->num, path));
      continue;
    }
    if ((str = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(str, strlen(a->str) + 1) < 0)
      return H5_FAIL("make a string type", path);
    err = attr_write(file, a->name, str, str, 0, a->str, path);
    H5Tclose(str);
    TSR_CALL(err);
  }
  return TSR_OK;
}

/* Root attributes, the /fields group and empty datasets: collective metadata in parallel, so
 * every rank passes the same values. */
static tsr_err write_layout(hid_t file, const tsr_grid_meta *m, const slab *s, int nfield,
                            const char *const *names, const tsr_output_opts *o,
                            const char *path) {
  tsr_err err = tsr_output_write_root(file, m, o, path);
  if (err) return err;
  hid_t g = H5Gcreate2(file, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return H5_FAIL("create group /fields", path);
  hid_t space = H5Screate_simple(s->rank, s->gdims, NULL);
  if (space < 0) err = H5_FAIL("create a dataspace", path);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) err = H5_FAIL("create a dataset creation list", path);
  /* every value is written by some rank: no fill values first. Parallel HDF5 allocates the
   * storage at the create and would write them there, collectively, ending in a barrier that a
   * rank whose write fails (a full disk) never reaches, so the others wait forever */
  else if (H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0)
    err = H5_FAIL("set the fill time", path);
  if (!err && o && o->checksum) {
    /* chunks of at most 4 MiB (HDF5 caps a chunk at 4 GiB; small chunks keep a damaged byte
     * from costing more than its chunk) */
    hsize_t chunk[3];
    tsr_output_chunk_dims(s->rank, s->gdims, o->chunk_bytes, chunk);
    if (H5Pset_chunk(dcpl, s->rank, chunk) < 0 || H5Pset_fletcher32(dcpl) < 0)
      err = H5_FAIL("set chunking and checksums", path);
  }
  hid_t ftype = m->single ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
  for (int f = 0; f < nfield && !err; ++f) {
    hid_t d = H5Dcreate2(g, names[f], ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) err = H5_FAIL("create a field dataset", path);
    else H5Dclose(d);
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  H5Gclose(g);
  return err;
}

/* File and memory selections of this rank's slab. An empty slab selects nothing and still
 * takes part in collective transfers. */
static tsr_err select_slab(hid_t dset, const slab *s, hid_t *fspace, hid_t *mspace,
                           const char *path) {
  hsize_t one = 1;
  *fspace = H5Dget_space(dset);
  *mspace = s->empty ? H5Screate_simple(1, &one, NULL) : H5Screate_simple(s->rank, s->count, NULL);
  if (*fspace < 0 || *mspace < 0) return H5_FAIL("get a dataspace", path);
  herr_t st = s->empty ? H5Sselect_none(*fspace)
                       : H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, s->start, NULL, s->count, NULL);
  if (st >= 0 && s->empty) st = H5Sselect_none(*mspace);
  if (st < 0) return H5_FAIL("select a hyperslab", path);
  return TSR_OK;
}

/* Reads (read = 1) or writes this rank's slab of dataset d. */
static tsr_err transfer(hid_t d, hid_t dxpl, const slab *s, int read, void *buf,
                        const char *path) {
  hid_t fspace = -1, mspace = -1;
  double dummy = 0; /* a valid address for ranks that select nothing */
  void *p = s->empty ? &dummy : buf;
  tsr_err err = select_slab(d, s, &fspace, &mspace, path);
  if (!err) {
    herr_t st = read ? H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, p)
                     : H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, p);
    if (st < 0) err = H5_FAIL(read ? "read field" : "write field", path);
  }
  if (fspace >= 0) H5Sclose(fspace);
  if (mspace >= 0) H5Sclose(mspace);
  return err;
}

/* Transfer list: collective MPI-IO where the file is open with MPI-IO. */
static hid_t make_dxpl(int mpio) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
#if TSR_MPIO
  if (dxpl >= 0 && mpio && H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0) {
    H5Pclose(dxpl);
    return -1;
  }
#else
  (void)mpio;
#endif
  return dxpl;
}

/* A step of a parallel (mpio) write ends with every rank knowing whether any failed: a full
 * disk fails only the ranks whose writes hit it (MPI-IO aggregators, the metadata writer), and
 * the others would go on into the next collective call alone and wait there forever. Ranks in
 * turn need no agreement inside their turn. */
static tsr_err step_end(int mpio, MPI_Comm comm, tsr_err err) {
  return mpio ? agree(comm, err) : err;
}

/* On a failed write, before the close: the file is garbage, so its space is given back first,
 * or the close's own flush of metadata meets the same full disk, fails, and leaves HDF5 holding
 * the file until exit (where closing it again crashes). Under MPI-IO one rank truncates, after
 * every rank has stopped writing. */
static void make_room(const char *tmp, int mpio, MPI_Comm comm) {
  int rank = 0;
  if (mpio) MPI_Comm_rank(comm, &rank);
  if (rank == 0 && truncate(tmp, 0) != 0) { /* the file is removed after the close anyway */
  }
  if (mpio) MPI_Barrier(comm);
}

/* Everything done with the open file tmp: create the layout (create), write slabs, close. */
static tsr_err fill_and_close(hid_t file, const char *tmp, const char *path, int create, int mpio,
                              MPI_Comm comm, const tsr_grid_meta *m, const slab *s, int nfield,
                              const char *const *names, const double *const *data,
                              const tsr_output_opts *o) {
  tsr_err err = TSR_OK;
  hid_t dxpl = make_dxpl(mpio), g = -1;
  if (dxpl < 0) err = H5_FAIL("create a transfer list", path);
  if (!err && create) err = write_layout(file, m, s, nfield, names, o, path);
  if (!err && (g = H5Gopen2(file, "fields", H5P_DEFAULT)) < 0) err = H5_FAIL("open /fields", path);
  err = step_end(mpio, comm, err);
  for (int f = 0; f < nfield && !err && (mpio || !s->empty); ++f) {
    hid_t d = H5Dopen2(g, names[f], H5P_DEFAULT);
    int done = 0; /* checksummed datasets in turn: chunks built by threads (io/output_chunks.h) */
    const tsr_output_layout *lay = o ? o->layout : NULL;
    tsr_output_src src = tsr_output_src_of(s, lay ? NULL : data[f], lay, f);
    if (d < 0) err = H5_FAIL("open a field to write", path);
    err = step_end(mpio, comm, err);
    if (!err && !mpio && o && o->checksum)
      err = tsr_output_chunks_write(d, dxpl, s, &src, o->threads, path, &done);
    if (!err && !done)
      err = lay ? tsr_output_src_write(d, dxpl, s, &src, path)
                : transfer(d, dxpl, s, 0, (void *)data[f], path);
    /* the close writes what the chunk cache still holds: its failure is the write's */
    if (d >= 0 && H5Dclose(d) < 0 && !err) err = H5_FAIL("write a field", path);
    err = step_end(mpio, comm, err);
  }
  if (g >= 0 && H5Gclose(g) < 0 && !err) err = H5_FAIL("close group /fields", path);
  /* the flush pushes everything to disk before the rename makes the file visible */
  if (!err && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) err = H5_FAIL("flush the file", path);
  err = step_end(mpio, comm, err);
  if (dxpl >= 0) H5Pclose(dxpl);
  if (err) make_room(tmp, mpio, comm);
  if (H5Fclose(file) < 0 && !err) err = H5_FAIL("close the file", path);
  return err;
}

tsr_err tsr_output_fill_close(hid_t file, const char *tmp, const char *path,
                              const tsr_grid_meta *m, const tsr_output_slab *s, int nfield,
                              const char *const *names, const double *const *data,
                              const tsr_output_opts *o) {
  return fill_and_close(file, tmp, path, 1, 0, MPI_COMM_SELF, m, s, nfield, names, data, o);
}

tsr_err tsr_output_write_fields(MPI_Comm comm, const char *path, const tsr_grid_meta *meta,
                                const tsr_box *owned, int nfield, const char *const *names,
                                const double *const *data, const tsr_output_opts *opts) {
  tsr_io_lock();
  quiet_state q = h5_quiet();
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char *tmp = NULL;
  tsr_err err =
      check_write_args(path, meta, owned, nfield, names, data, opts ? opts->layout : NULL);
  if (!err && !(tmp = tsr_output_tmp_name(path))) err = TSR_ERR_MEMORY;
  int full = inject_enospc && opts && opts->checksum;
  if (full) inject_enospc = 0;
  double need = err ? 0 : tsr_output_estimate(meta, nfield, opts);
  if (!err && rank == 0) err = tsr_output_check_space(path, need);
  int parts = opts && opts->parts && opts->checksum && size > 1;
  if (full && !err && rank == 0 && !parts) tsr_output_plant_enospc(tmp);
  err = agree(comm, err);
  if (err) goto out;

  /* a write error inside a collective HDF5 create or close (a full disk) leaves the other
   * ranks waiting in it, which only the watchdog ends; the space reserved after the create
   * keeps a real full disk out of them, but /dev/full cannot be reserved: the injected full
   * disk takes the ranks-in-turn path, where the error comes back to every rank */
  if (parts) {
    err = tsr_output_write_parts(comm, path, tmp, meta, owned, nfield, names, data, opts, full);
    goto out;
  }
  int mpio = TSR_MPIO && !(opts && opts->force_serial) && !full;
  slab s = tsr_output_make_slab(meta->dim, meta->cells, owned);
  hid_t file = -1;
  if (mpio) {
    err = agree(comm, tsr_output_open(tmp, path, TSR_OUTPUT_CREATE, 1, comm, &file));
    int reserved = 1;
    if (!err && (err = agree(comm, rank == 0 ? tsr_output_reserve(tmp, path, need, &reserved)
                                              : TSR_OK))) {
      make_room(tmp, 1, comm);
      H5Fclose(file);
    } else if (!err && (MPI_Bcast(&reserved, 1, MPI_INT, 0, comm), !reserved)) {
      /* nothing could be reserved (no fallocate there): a disk that fills now would stop
       * parallel HDF5 inside its own collective calls, so the ranks write in turn instead,
       * where a full disk comes back to every rank as an error */
      H5Fclose(file);
      if (rank == 0) remove(tmp);
      mpio = 0;
      MPI_Barrier(comm);
    } else if (!err) {
      err = agree(comm, fill_and_close(file, tmp, path, 1, 1, comm, meta, &s, nfield, names, data,
                                        opts));
    } else if (file >= 0) {
      H5Fclose(file); /* opened here while another rank failed */
    }
    /* parallel writes through filters need an HDF5 built for them (1.10.2+ with MPI-3):
     * checkpoints fall back to the ranks-in-turn path rather than fail */
    if (err == TSR_ERR_HDF5 && opts && opts->checksum) {
      if (rank == 0) remove(tmp);
      tsr_err_clear();
      err = TSR_OK;
      mpio = 0;
      MPI_Barrier(comm);
    }
  }
  if (!mpio) {
    /* ranks take turns; rank 0 creates the file, a rank with nothing to write skips its turn.
     * Each agree() is also the barrier that orders the turns. */
    for (int turn = 0; turn < size && !err; ++turn) {
      tsr_err mine = TSR_OK;
      if (rank == turn && (turn == 0 || !s.empty)) {
        mine = tsr_output_open(tmp, path, turn == 0 ? TSR_OUTPUT_CREATE : TSR_OUTPUT_WRITE, 0,
                               comm, &file);
        if (!mine && turn == 0 && (mine = tsr_output_reserve(tmp, path, need, NULL))) {
          make_room(tmp, 0, comm);
          H5Fclose(file);
        } else if (!mine)
          mine = fill_and_close(file, tmp, path, turn == 0, 0, comm, meta, &s, nfield, names, data,
                              opts);
      }
      err = agree(comm, mine);
    }
  }
  /* every rank has closed the file here (the last agree() came after the closes) */
  if (!err && rank == 0) tsr_output_release_reserve(tmp);
  if (!err) err = agree(comm, rank == 0 ? tsr_output_commit(tmp, path) : TSR_OK);
  else if (rank == 0) remove(tmp);
out:
  free(tmp);
  /* HDF5 1.10 keeps the file that a create failing on a full disk left half-made and, where its
   * error printing is on, reports it at exit as "infinite loop closing library"; the message
   * above says what happened, so its printing stays off */
  if (!saw_full_disk) h5_restore(q);
  tsr_io_unlock();
  return err;
}

/* ---- reading --------------------------------------------------------------------------- */

int tsr_output_attr_numeric(hid_t a) {
  hid_t t = H5Aget_type(a);
  const H5T_class_t cls = t < 0 ? H5T_NO_CLASS : H5Tget_class(t);
  if (t >= 0) H5Tclose(t);
  return cls == H5T_INTEGER || cls == H5T_FLOAT;
}

/* A string or compound attribute read as numbers fails with HDF5's own words only. */
static tsr_err not_numbers(int line, const char *path, const char *name) {
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, line,
                     "'%s': root attribute '%s' does not hold numbers; the file was not "
                     "written by tessera, or was altered since", path, name);
}

static tsr_err attr_read(hid_t obj, const char *name, hid_t mtype, int n, void *v,
                         const char *path) {
  TSR_CHECK(H5Aexists(obj, name) > 0, TSR_ERR_INPUT,
            "'%s' is not a tessera fields file: root attribute '%s' is missing", path, name);
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return H5_FAIL("open an attribute", path);
  hid_t sp = H5Aget_space(a);
  hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  tsr_err err = TSR_OK;
  if (!tsr_output_attr_numeric(a)) err = not_numbers(__LINE__, path, name);
  else if (np != (n ? n : 1))
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "'%s': root attribute '%s' has %lld values where %d were expected", path, name,
                      (long long)np, n ? n : 1);
  else if (H5Aread(a, mtype, v) < 0)
    err = H5_FAIL("read an attribute", path);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return err;
}

static tsr_err read_meta(hid_t file, tsr_grid_meta *m, const char *path) {
  memset(m, 0, sizeof *m);
  TSR_CHECK(H5Aexists(file, "cells") > 0, TSR_ERR_INPUT,
            "'%s' is not a tessera fields file: root attribute 'cells' is missing", path);
  hid_t a = H5Aopen(file, "cells", H5P_DEFAULT), sp = a < 0 ? -1 : H5Aget_space(a);
  m->dim = sp < 0 ? -1 : (int)H5Sget_simple_extent_npoints(sp);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  TSR_CHECK(m->dim == 2 || m->dim == 3, TSR_ERR_INPUT,
            "'%s': root attribute 'cells' has %d values where 2 or 3 were expected", path, m->dim);
  int64_t cells[3] = {1, 1, 1};
  TSR_CALL(attr_read(file, "cells", H5T_NATIVE_INT64, m->dim, cells, path));
  TSR_CALL(attr_read(file, "lo", H5T_NATIVE_DOUBLE, m->dim, m->lo, path));
  TSR_CALL(attr_read(file, "hi", H5T_NATIVE_DOUBLE, m->dim, m->hi, path));
  TSR_CALL(attr_read(file, "time", H5T_NATIVE_DOUBLE, 0, &m->time, path));
  TSR_CALL(attr_read(file, "step", H5T_NATIVE_INT64, 0, &m->step, path));
  for (int d = 0; d < 3; ++d) {
    TSR_CHECK(cells[d] >= 1 && cells[d] <= INT32_MAX, TSR_ERR_INPUT,
              "'%s': root attribute 'cells' holds %lld on axis %d", path, (long long)cells[d], d);
    m->cells[d] = (int)cells[d];
  }
  return TSR_OK;
}

/* "a, b, c": the fields the file does have, for the message about one it does not. */
static void list_fields(hid_t g, char *buf, size_t n) {
  H5G_info_t info;
  buf[0] = '\0';
  if (H5Gget_info(g, &info) < 0) return;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256];
    if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0)
      return;
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", i ? ", " : "", name);
  }
}

/* Checks the file against the request; *dset is open on return when the field exists.
 * Only the box check differs between ranks, so it comes last: every rank then holds the
 * dataset open or none does, and the collective closes match. */
static tsr_err inspect(hid_t file, const char *path, const char *name, const tsr_box *owned,
                       int parted, tsr_grid_meta *m, hid_t *dset) {
  *dset = -1;
  TSR_CALL(read_meta(file, m, path));
  TSR_CHECK(H5Lexists(file, "fields", H5P_DEFAULT) > 0, TSR_ERR_INPUT,
            "'%s' is not a tessera fields file: it has no /fields group", path);
  hid_t g = H5Gopen2(file, "fields", H5P_DEFAULT);
  if (g < 0) return H5_FAIL("open group /fields", path);
  if (H5Lexists(g, name, H5P_DEFAULT) <= 0) {
    char have[2048];
    list_fields(g, have, sizeof have);
    H5Gclose(g);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "'%s' has no field '%s' (it has: %s); check the field names of the model",
                       path, name, have[0] ? have : "none");
  }
  hid_t dapl = parted ? tsr_output_parts_dapl(path) : H5P_DEFAULT;
  *dset = dapl < 0 ? -1 : H5Dopen2(g, name, dapl);
  if (*dset < 0) {
    tsr_err e = H5_FAIL("open a field", path);
    if (parted && dapl >= 0) H5Pclose(dapl);
    H5Gclose(g);
    return e;
  }
  if (parted) H5Pclose(dapl);
  H5Gclose(g);
  hid_t sp = H5Dget_space(*dset), type = H5Dget_type(*dset);
  hsize_t dims[H5S_MAX_RANK];
  int nd = sp < 0 ? -1 : H5Sget_simple_extent_dims(sp, dims, NULL);
  H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
  if (sp >= 0) H5Sclose(sp);
  if (type >= 0) H5Tclose(type);
  TSR_CHECK(cls == H5T_FLOAT, TSR_ERR_INPUT, "field '%s' in '%s' is not floating point", name,
            path);
  int ok = nd == m->dim;
  for (int i = 0; ok && i < nd; ++i) ok = dims[i] == (hsize_t)m->cells[nd - 1 - i];
  TSR_CHECK(ok, TSR_ERR_INPUT,
            "field '%s' in '%s' has %d axes of lengths %llu %llu %llu (slowest first), which do "
            "not match the grid's %dD cells attribute",
            name, path, nd, nd > 0 ? (unsigned long long)dims[0] : 0,
            nd > 1 ? (unsigned long long)dims[1] : 0, nd > 2 ? (unsigned long long)dims[2] : 0,
            m->dim);
  TSR_CALL(check_box(owned, m->dim, m->cells, path));
  if (!parted) return TSR_OK;
  slab s = tsr_output_make_slab(m->dim, m->cells, owned);
  return tsr_output_parts_check(file, *dset, path, &s);
}

static tsr_err check_readable(const char *path) {
  TSR_CHECK(access(path, R_OK) == 0, TSR_ERR_IO, "cannot read '%s': %s; check the file name",
            path, strerror(errno));
  /* HDF5 would wait on a FIFO's writer for ever, and words of its own about a directory */
  struct stat st;
  TSR_CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), TSR_ERR_IO,
            "cannot read '%s': not a regular file; check the file name", path);
  return TSR_OK;
}

tsr_err tsr_output_read_field(MPI_Comm comm, const char *path, const char *name,
                              const tsr_box *owned, double *data, tsr_grid_meta *meta) {
  tsr_io_lock();
  quiet_state q = h5_quiet();
  tsr_err err = TSR_OK;
  if (!path || !name || !owned || (!data && !tsr_box_empty(owned)))
    err = tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__, "tsr_output_read_field: NULL argument");
  else if (!valid_name(name))
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "cannot read '%s': field name '%s' is empty or contains '/'", path, name);
  else
    err = check_readable(path);
  /* agreed before the open, which is collective with MPI-IO */
  err = agree(comm, err);
  if (err) goto out;

  /* a file in parts is read by each rank on its own: its virtual datasets open the parts a
   * rank's box touches, which differ between ranks */
  int rank, parted = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) parted = tsr_output_is_parted(path);
  MPI_Bcast(&parted, 1, MPI_INT, 0, comm);
  int mpio = TSR_MPIO && !parted;
  hid_t file = -1, dset = -1;
  tsr_grid_meta m = {0};
  err = agree(comm, tsr_output_open(path, path, TSR_OUTPUT_READ, mpio, comm, &file));
  if (!err) err = agree(comm, inspect(file, path, name, owned, parted, &m, &dset));
  if (!err) {
    slab s = tsr_output_make_slab(m.dim, m.cells, owned);
    hid_t dxpl = make_dxpl(mpio);
    tsr_err mine = dxpl < 0 ? H5_FAIL("create a transfer list", path)
                            : transfer(dset, dxpl, &s, 1, data, path);
    if (dxpl >= 0) H5Pclose(dxpl);
    err = agree(comm, mine);
  }
  if (dset >= 0) H5Dclose(dset);
  if (file >= 0) H5Fclose(file);
  if (!err && meta) *meta = m;
out:
  h5_restore(q);
  tsr_io_unlock();
  return err;
}

tsr_err tsr_output_read_string(hid_t obj, const char *path, const char *name, char **out) {
  *out = NULL;
  hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
  hid_t t = a < 0 ? -1 : H5Aget_type(a), sp = a < 0 ? -1 : H5Aget_space(a);
  /* one string: H5Aread fills every element of the attribute's space */
  const hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  if (sp >= 0) H5Sclose(sp);
  size_t len = t < 0 || np != 1 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) > 0
                   ? 0 : H5Tget_size(t);
  char *buf = len ? calloc(len + 1, 1) : NULL;
  tsr_err err = TSR_OK;
  if (len && !buf)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading '%s'", path);
  else if (!buf || H5Aread(a, t, buf) < 0)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "'%s': root attribute '%s' is missing or not one fixed-length string",
                      path, name);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  if (err) free(buf);
  else *out = buf;
  return err;
}

/* Rank 0 opens path for reading (check_readable's failure becomes an input error). */
static tsr_err open_for_attrs(const char *path, hid_t *file) {
  *file = -1;
  tsr_err err = check_readable(path);
  if (err) return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s", tsr_err_message());
  return tsr_output_open(path, path, TSR_OUTPUT_READ, 0, MPI_COMM_SELF, file);
}

tsr_err tsr_output_read_attr(MPI_Comm comm, const char *path, const char *name, char *str,
                             size_t n, double *num) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  tsr_err err = TSR_OK;
  char text[MSG_MAX] = "";
  double v = 0;
  if (rank == 0) {
    tsr_io_lock();
    quiet_state q = h5_quiet();
    hid_t file = -1;
    err = open_for_attrs(path, &file);
    if (!err && !str) err = attr_read(file, name, H5T_NATIVE_DOUBLE, 0, &v, path);
    if (!err && str) {
      char *buf;
      err = tsr_output_read_string(file, path, name, &buf);
      if (!err) snprintf(text, sizeof text, "%s", buf);
      free(buf);
    }
    if (file >= 0) H5Fclose(file);
    h5_restore(q);
    tsr_io_unlock();
  }
  err = agree(comm, err);
  if (err) return err;
  MPI_Bcast(text, MSG_MAX, MPI_CHAR, 0, comm);
  MPI_Bcast(&v, 1, MPI_DOUBLE, 0, comm);
  if (str) snprintf(str, n, "%s", text);
  else *num = v;
  return TSR_OK;
}

tsr_err tsr_output_read_ints(MPI_Comm comm, const char *path, const char *name, int64_t *vals,
                             int max, int *n) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  tsr_err err = TSR_OK;
  *n = 0;
  if (rank == 0) {
    tsr_io_lock();
    quiet_state q = h5_quiet();
    hid_t file = -1;
    err = open_for_attrs(path, &file);
    if (!err && H5Aexists(file, name) > 0) {
      hid_t a = H5Aopen(file, name, H5P_DEFAULT), sp = a < 0 ? -1 : H5Aget_space(a);
      hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
      if (np < 0) err = H5_FAIL("read an attribute", path);
      else if (!tsr_output_attr_numeric(a)) err = not_numbers(__LINE__, path, name);
      else if (np > max) *n = -1;
      else if (H5Aread(a, H5T_NATIVE_INT64, vals) < 0) err = H5_FAIL("read an attribute", path);
      else *n = (int)np;
      if (sp >= 0) H5Sclose(sp);
      if (a >= 0) H5Aclose(a);
    }
    if (file >= 0) H5Fclose(file);
    h5_restore(q);
    tsr_io_unlock();
  }
  err = agree(comm, err);
  if (err) return err;
  MPI_Bcast(n, 1, MPI_INT, 0, comm);
  if (*n > 0) MPI_Bcast(vals, *n, MPI_INT64_T, 0, comm);
  return TSR_OK;
}

tsr_err tsr_output_read_text(MPI_Comm comm, const char *path, const char *name, char **out) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  *out = NULL;
  char *buf = NULL;
  tsr_err err = TSR_OK;
  if (rank == 0) {
    tsr_io_lock();
    quiet_state q = h5_quiet();
    hid_t file = -1;
    err = open_for_attrs(path, &file);
    if (!err) err = tsr_output_read_string(file, path, name, &buf);
    if (file >= 0) H5Fclose(file);
    h5_restore(q);
    tsr_io_unlock();
  }
  unsigned long long len = buf ? strlen(buf) : 0;
  MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  if (rank != 0 && !err && !(buf = malloc(len + 1)))
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading '%s'", path);
  err = agree(comm, err);
  if (err) {
    free(buf);
    return err;
  }
  /* in pieces: an MPI count is an int */
  for (unsigned long long at = 0; at < len + 1; at += 1u << 30) {
    unsigned long long n = len + 1 - at < (1u << 30) ? len + 1 - at : (1u << 30);
    MPI_Bcast(buf + at, (int)n, MPI_CHAR, 0, comm);
  }
  *out = buf;
  return TSR_OK;
}

tsr_err tsr_output_read_meta(MPI_Comm comm, const char *path, tsr_grid_meta *meta) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  tsr_grid_meta m = {0};
  tsr_err err = TSR_OK;
  if (rank == 0) {
    tsr_io_lock();
    quiet_state q = h5_quiet();
    hid_t file = -1;
    err = open_for_attrs(path, &file);
    if (!err) err = read_meta(file, &m, path);
    if (file >= 0) H5Fclose(file);
    h5_restore(q);
    tsr_io_unlock();
  }
  err = agree(comm, err);
  if (err) return err;
  MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, 0, comm);
  *meta = m;
  return TSR_OK;
}
