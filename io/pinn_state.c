#define _POSIX_C_SOURCE 200809L /* strdup */
#include "io/pinn_state.h"

#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/output_internal.h"
#include "tsr_version.h"

void tsr_pinn_state_free(tsr_pinn_state *st) {
  free(st->theta);
  free(st->m);
  free(st->v);
  free(st->hist);
  free(st->lbfgs_count);
  free(st->lbfgs_s);
  free(st->lbfgs_y);
  free(st->lbfgs_rho);
  int nr = st->nranks;
  const int64_t *boxes = st->boxes;
  int64_t slabs[3] = {st->slabs[0], st->slabs[1], st->slabs[2]}, sl = st->slab_lbfgs;
  int attempt = st->attempt, m = st->lbfgs_m;
  memset(st, 0, sizeof *st);
  st->slab_lbfgs = sl;
  st->lbfgs_m = m; /* the history asked for stays */
  st->nranks = nr; /* the decomposition asked for stays */
  st->boxes = boxes;
  st->attempt = attempt;
  memcpy(st->slabs, slabs, sizeof slabs);
}

static tsr_err h5_fail(const char *what, const char *path) {
  return tsr_err_set(TSR_ERR_HDF5, __FILE__, __LINE__, "HDF5 could not %s in '%s'; %s", what,
                     path, TSR_OUTPUT_DIR_ADVICE);
}

/* A float64 dataset of rank 1 or 2, chunked with Fletcher32 checksums. */
static tsr_err write_set(hid_t g, const char *name, int rank, const hsize_t *dims,
                         const double *data, const char *path) {
  hsize_t chunk[2] = {dims[0] ? dims[0] : 1, rank == 2 ? (dims[1] ? dims[1] : 1) : 1};
  if (chunk[0] * chunk[1] > 65536) chunk[0] = 65536 / chunk[1] ? 65536 / chunk[1] : 1;
  hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int ok = sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
           H5Pset_fletcher32(dcpl) >= 0;
  hid_t d = ok ? H5Dcreate2(g, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
  ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
  if (d >= 0) H5Dclose(d);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (sp >= 0) H5Sclose(sp);
  return ok ? TSR_OK : h5_fail("write a dataset", path);
}

static int attr_ints(hid_t f, const char *name, const int64_t *v, hsize_t n) {
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t a = sp >= 0 ? H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  return ok;
}

static int attr_str(hid_t f, const char *name, const char *s) {
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  int ok = t >= 0 && sp >= 0 && H5Tset_size(t, strlen(s) + 1) >= 0;
  hid_t a = ok ? H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  ok = a >= 0 && H5Awrite(a, t, s) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return ok;
}

static tsr_err write_file(const tsr_case *c, const char *tmp, const tsr_pinn_state *st) {
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return tsr_output_write_error(tmp, errno);
  hid_t g = H5Gcreate2(f, "pinn", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int nr = st->nranks > 1 ? st->nranks : 1;
  hsize_t hd[2] = {(hsize_t)st->hist_rows, (hsize_t)st->hist_cols};
  hsize_t np[2] = {nr > 1 ? (hsize_t)nr : st->nparam, st->nparam};
  int rank = nr > 1 ? 2 : 1;
  tsr_err err = g >= 0 ? TSR_OK : h5_fail("create group /pinn", tmp);
  if (!err) err = write_set(g, "theta", rank, np, st->theta, tmp);
  if (!err) err = write_set(g, "adam_m", rank, np, st->m, tmp);
  if (!err) err = write_set(g, "adam_v", rank, np, st->v, tmp);
  int64_t nr64 = nr;
  if (!err && nr > 1 && !(attr_ints(f, "ranks", &nr64, 1) &&
                          attr_ints(f, "boxes", st->boxes, (hsize_t)nr * 6)))
    err = h5_fail("write the decomposition", tmp);
  if (!err && st->slabs[0] > 1 && !attr_ints(f, "slabs", st->slabs, 3))
    err = h5_fail("write the time slabs", tmp);
  if (!err && st->slab_lbfgs > 0 && !attr_ints(f, "slab_lbfgs", &st->slab_lbfgs, 1))
    err = h5_fail("write the time slabs", tmp);
  if (!err && st->lbfgs_m > 0) {
    int64_t head[2] = {st->lbfgs_start, st->lbfgs_m};
    hsize_t sd[2] = {(hsize_t)nr * (hsize_t)st->lbfgs_m, st->nparam}, rd = sd[0];
    if (!(attr_ints(f, "lbfgs", head, 2) && attr_ints(f, "lbfgs_count", st->lbfgs_count, nr)))
      err = h5_fail("write L-BFGS's state", tmp);
    if (!err) err = write_set(g, "lbfgs_s", 2, sd, st->lbfgs_s, tmp);
    if (!err) err = write_set(g, "lbfgs_y", 2, sd, st->lbfgs_y, tmp);
    if (!err) err = write_set(g, "lbfgs_rho", 1, &rd, st->lbfgs_rho, tmp);
  }
  if (!err) err = write_set(g, "history", 2, hd, st->hist, tmp);
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, tsr_case_restart_hash(c));
  char *record = err ? NULL : tsr_case_record(c);
  if (!err && !record) err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  if (!err && !(attr_ints(f, "iteration", &st->iteration, 1) && attr_ints(f, "network", st->net, 4) &&
                attr_str(f, "method", "pinn") && attr_str(f, "case_text", record) &&
                attr_str(f, "case_hash", hash) && attr_str(f, "tessera_version", TSR_VERSION)))
    err = h5_fail("write the attributes", tmp);
  free(record);
  if (g >= 0) H5Gclose(g);
  if (H5Fclose(f) < 0 && !err) err = h5_fail("close the file", tmp);
  return err;
}

tsr_err tsr_pinn_state_write(const tsr_case *c, const char *dir, const tsr_pinn_state *st,
                             char *path, size_t n) {
  tsr_checkpoint_path(path, n, dir, st->iteration);
  char *tmp = tsr_output_tmp_name(path);
  if (!tmp) return TSR_ERR_MEMORY;
  tsr_err err = write_file(c, tmp, st);
  if (err) remove(tmp);
  else err = tsr_output_commit(tmp, path);
  free(tmp);
  TSR_CALL(err);
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  TSR_CALL(tsr_checkpoint_set_latest(dir, name));
  tsr_checkpoint_prune(dir, c->output.keep);
  return TSR_OK;
}

/* Damaged or altered files fail these quietly: the caller's message says which attribute. */
static int read_ints(hid_t f, const char *name, int64_t *v, int n) {
  int ok = 0;
  H5E_BEGIN_TRY {
    hid_t a = H5Aexists(f, name) > 0 ? H5Aopen(f, name, H5P_DEFAULT) : -1;
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    ok = sp >= 0 && tsr_output_attr_numeric(a) && H5Sget_simple_extent_npoints(sp) == n &&
         H5Aread(a, H5T_NATIVE_INT64, v) >= 0;
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
  }
  H5E_END_TRY;
  return ok;
}

/* A dataset of n values (rows x cols for the history: *rows, *cols set) into a new array. */
static double *read_set(hid_t f, const char *name, size_t want, int *rows, int *cols) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
  hsize_t dims[H5S_MAX_RANK] = {0, 0};
  int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  if (rank == 1 || rank == 2) H5Sget_simple_extent_dims(sp, dims, NULL);
  else rank = -1;
  /* values, not integers HDF5 would convert: a checkpoint holds them as written */
  if (t < 0 || H5Tget_class(t) != H5T_FLOAT || H5Tget_size(t) != sizeof(double)) rank = -1;
  if (t >= 0) H5Tclose(t);
  size_t n = rank == 1 ? dims[0] : rank == 2 ? dims[0] * dims[1] : 0;
  double *v = rank > 0 && (!want || n == want) ? malloc((n ? n : 1) * sizeof *v) : NULL;
  if (v && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
    free(v);
    v = NULL;
  }
  if (rows) *rows = (int)dims[0];
  if (cols) *cols = (int)dims[1];
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  return v;
}

/* One file into st, or an error saying why it cannot continue this case. */
/* The checkpoint's decomposition against the run's: the message when they differ. */
static tsr_err check_decomposition(hid_t f, const char *path, const tsr_pinn_state *st) {
  int64_t nr = 1;
  if (H5Aexists(f, "ranks") > 0 && !read_ints(f, "ranks", &nr, 1))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (its "
                       "attribute ranks does not read)", path);
  int want = st->nranks > 1 ? st->nranks : 1;
  if (nr != want && st->attempt >= 2)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' holds the networks of a PINN run "
                       "on %lld rank%s (one network per rank's box) and tessera supervise "
                       "relaunched it on %d (attempt %d, after GPUs were lost): a PINN run "
                       "continues only on the decomposition it was written with, so supervise "
                       "cannot continue it on fewer GPUs; relaunch it on %lld rank%s where that "
                       "many GPUs work (tessera supervise -- mpirun -np %lld ... --restart "
                       "latest), or start it over on %d without --restart", path, (long long)nr,
                       nr == 1 ? "" : "s", want, st->attempt, (long long)nr, nr == 1 ? "" : "s",
                       (long long)nr, want);
  TSR_CHECK(nr == want, TSR_ERR_INPUT, "'%s' holds the networks of a PINN run on %lld rank%s "
            "(one network per rank's box) and this run has %d; restart it on %lld rank%s with "
            "the decomposition it was written with, or run without --restart", path,
            (long long)nr, nr == 1 ? "" : "s", want, (long long)nr, nr == 1 ? "" : "s");
  int64_t sl[3] = {0, 0, 0};
  if (H5Aexists(f, "slabs") > 0 && !read_ints(f, "slabs", sl, 3))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (its "
                       "attribute slabs does not read)", path);
  TSR_CHECK(sl[0] == st->slabs[0] && sl[1] == st->slabs[1] && sl[2] == st->slabs[2],
            TSR_ERR_INPUT, "'%s' was written with %lld time slab%s (%s, %lld iterations a slab) "
            "and this run has %lld (%s, %lld); restart with the decomposition.time_slices, "
            "pinn.slabs and pinn.adam.iterations it was written with", path,
            (long long)(sl[0] > 1 ? sl[0] : 1), sl[0] > 1 ? "s" : "",
            sl[0] > 1 ? (sl[1] ? "causal" : "all") : "none", (long long)sl[2],
            (long long)(st->slabs[0] > 1 ? st->slabs[0] : 1),
            st->slabs[0] > 1 ? (st->slabs[1] ? "causal" : "all") : "none",
            (long long)st->slabs[2]);
  int64_t sll = 0;
  if (H5Aexists(f, "slab_lbfgs") > 0 && !read_ints(f, "slab_lbfgs", &sll, 1))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (its "
                       "attribute slab_lbfgs does not read)", path);
  TSR_CHECK(sll == st->slab_lbfgs, TSR_ERR_INPUT, "'%s' was written with %lld L-BFGS iterations "
            "a causal slab and this run has %lld: with pinn.slabs: causal they say where each slab "
            "begins, so they cannot change on a restart (without causal slabs a restart may "
            "raise pinn.lbfgs.iterations); restart with the pinn.lbfgs.iterations it was "
            "written with", path, (long long)sll,
            (long long)st->slab_lbfgs);
  if (want == 1) return TSR_OK;
  int64_t *boxes = malloc((size_t)want * 6 * sizeof *boxes);
  TSR_CHECK(boxes, TSR_ERR_MEMORY, "out of memory");
  int ok = read_ints(f, "boxes", boxes, want * 6), same = ok;
  int bad = -1;
  for (int r = 0; r < want && same; ++r)
    if (memcmp(boxes + 6 * r, st->boxes + 6 * r, 6 * sizeof *boxes) != 0) same = 0, bad = r;
  tsr_err err = TSR_OK;
  if (!ok)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (its "
                      "attribute boxes does not read)", path);
  else if (!same)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' was written with another "
                      "decomposition: rank %d's box was [%lld, %lld) x [%lld, %lld) x [%lld, "
                      "%lld) and is [%lld, %lld) x [%lld, %lld) x [%lld, %lld) in this run; "
                      "restart with the decomposition.partition (and ranks) it was written with",
                      path, bad, (long long)boxes[6 * bad], (long long)boxes[6 * bad + 3],
                      (long long)boxes[6 * bad + 1], (long long)boxes[6 * bad + 4],
                      (long long)boxes[6 * bad + 2], (long long)boxes[6 * bad + 5],
                      (long long)st->boxes[6 * bad], (long long)st->boxes[6 * bad + 3],
                      (long long)st->boxes[6 * bad + 1], (long long)st->boxes[6 * bad + 4],
                      (long long)st->boxes[6 * bad + 2], (long long)st->boxes[6 * bad + 5]);
  free(boxes);
  return err;
}

/* The head of L-BFGS's state, where the checkpoint has it: st->lbfgs_m (the run's history) must
 * be the file's; *has: the file has the state. A refusal (another history) or a damaged head. */
static tsr_err lbfgs_head(hid_t f, const char *path, const tsr_pinn_state *st, int64_t head[2],
                          int *has) {
  *has = H5Aexists(f, "lbfgs") > 0;
  if (!*has) return TSR_OK;
  TSR_CHECK(read_ints(f, "lbfgs", head, 2) && head[1] >= 1, TSR_ERR_INPUT, "'%s' is not a valid "
            "checkpoint (its attribute lbfgs does not read)", path);
  TSR_CHECK(head[1] == st->lbfgs_m, TSR_ERR_INPUT, "'%s' was written during L-BFGS with %lld "
            "pairs kept and this run keeps %d; restart with the pinn.lbfgs.history it was written "
            "with", path, (long long)head[1], st->lbfgs_m);
  return TSR_OK;
}

/* L-BFGS's arrays (the head read: lbfgs_head). */
static tsr_err read_lbfgs(hid_t f, const char *path, tsr_pinn_state *st) {
  int nr = st->nranks > 1 ? st->nranks : 1, m = st->lbfgs_m;
  size_t n = (size_t)nr * (size_t)m;
  st->lbfgs_count = malloc((size_t)nr * sizeof *st->lbfgs_count);
  int ok = st->lbfgs_count && read_ints(f, "lbfgs_count", st->lbfgs_count, nr);
  H5E_BEGIN_TRY {
    ok = ok && (st->lbfgs_s = read_set(f, "pinn/lbfgs_s", n * st->nparam, NULL, NULL)) &&
         (st->lbfgs_y = read_set(f, "pinn/lbfgs_y", n * st->nparam, NULL, NULL)) &&
         (st->lbfgs_rho = read_set(f, "pinn/lbfgs_rho", n, NULL, NULL));
  }
  H5E_END_TRY;
  for (int r = 0; ok && r < nr; ++r) ok = st->lbfgs_count[r] >= -1 && st->lbfgs_count[r] <= m;
  TSR_CHECK(ok, TSR_ERR_INPUT, "'%s' is not a valid checkpoint (L-BFGS's state is missing, of "
            "the wrong size or fails its checksum)", path);
  return TSR_OK;
}

/* A checkpoint of another case, with the keys that differ from the case it records (for a
 * PINN time.end too: the time domain the network was trained on); the hashes alone when that
 * case does not read or no listed key differs (a key of pinn:). */
static tsr_err another_case(hid_t f, const tsr_case *c, const char *path, const char *hash,
                            const char *want) {
  char *text = NULL, name[4200];
  tsr_case *old = NULL;
  tsr_case_changes d = {0};
  snprintf(name, sizeof name, "%s (its case_text)", path);
  int listed = tsr_output_read_string(f, path, "case_text", &text) == TSR_OK && text &&
               tsr_case_load_record(name, text, &old) == TSR_OK &&
               tsr_case_diff(old, c, &d) == TSR_OK && d.n > 0;
  free(text);
  tsr_case_destroy(&old);
  tsr_err_clear();
  if (!listed) {
    tsr_case_changes_free(&d);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "'%s' is a checkpoint of another case (its case hash %s, this case's %s; "
                       "no key outside pinn: differs, so one of pinn:'s does, or the case it "
                       "records does not read); restart with the case file and --set options "
                       "that wrote it, or run without --restart", path, hash ? hash : "none",
                       want);
  }
  tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
              "'%s' is a checkpoint of another case; these keys differ%s:", path,
              d.nstop ? " (time.end is the time domain the network was trained on)" : "");
  tsr_case_changes_append(&d, "checkpoint", "this case", 24);
  tsr_err_append("restart with the case file and --set options that wrote it, or run without "
                 "--restart");
  tsr_case_changes_free(&d);
  return TSR_ERR_INPUT;
}

static tsr_err read_file(const tsr_case *c, const char *path, const int64_t net[4],
                         tsr_pinn_state *st, int *refused) {
  *refused = 0;
  hid_t f = -1;
  H5E_BEGIN_TRY { f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT); }
  H5E_END_TRY;
  TSR_CHECK(f >= 0, TSR_ERR_INPUT, "'%s' is not a valid checkpoint (HDF5 cannot open it)", path);
  char *method, *hash;
  /* one that does not read is left NULL: the messages below say what that means for a restart */
  (void)tsr_output_read_string(f, path, "method", &method);
  (void)tsr_output_read_string(f, path, "case_hash", &hash);
  char want[17];
  snprintf(want, sizeof want, "%016" PRIx64, tsr_case_restart_hash(c));
  int64_t got[4];
  tsr_err err = TSR_OK;
  if (!method || strcmp(method, "pinn") != 0)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a checkpoint of method "
                      "pinn; restart a PINN case from its own checkpoints", path);
  else if (!hash || strcmp(hash, want) != 0)
    err = another_case(f, c, path, hash, want);
  else if (!read_ints(f, "network", got, 4) || memcmp(got, net, sizeof got) != 0)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' holds another network (width, "
                      "depth, activation or precision differ); keep pinn.network and precision "
                      "as they were", path);
  else if (!read_ints(f, "iteration", &st->iteration, 1) || st->iteration < 0)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (no "
                      "iteration >= 0 in its attribute 'iteration')", path);
  if (!err) err = check_decomposition(f, path, st);
  int64_t lhead[2] = {0, 0};
  int has_lbfgs = 0;
  if (!err) err = lbfgs_head(f, path, st, lhead, &has_lbfgs);
  /* a file that reads but belongs to another run: an older one will not do either */
  *refused = err != TSR_OK;
  size_t nwant = st->nparam * (size_t)(st->nranks > 1 ? st->nranks : 1);
  H5E_BEGIN_TRY {
    if (!err && (!(st->theta = read_set(f, "pinn/theta", nwant, NULL, NULL)) ||
                 !(st->m = read_set(f, "pinn/adam_m", nwant, NULL, NULL)) ||
                 !(st->v = read_set(f, "pinn/adam_v", nwant, NULL, NULL)) ||
                 !(st->hist = read_set(f, "pinn/history", 0, &st->hist_rows, &st->hist_cols))))
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (a "
                        "dataset is missing, of the wrong size or fails its checksum)", path);
  }
  H5E_END_TRY;
  /* training from NaN parameters fails at once with advice to continue from this very file;
   * refused here, `latest` goes on to an older one */
  for (size_t i = 0; !err && i < nwant; ++i)
    if (!isfinite(st->theta[i]) || !isfinite(st->m[i]) || !(st->v[i] >= 0.0) || isinf(st->v[i]))
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint: its "
                        "parameters or Adam moments hold a non-finite value (at %zu); restart "
                        "from an earlier checkpoint (--restart FILE) or from the start", path, i);
  if (!err && has_lbfgs) err = read_lbfgs(f, path, st);
  if (!err) st->lbfgs_start = has_lbfgs ? lhead[0] : -1;
  free(method);
  free(hash);
  H5Fclose(f);
  if (err) {
    size_t np = st->nparam;
    tsr_pinn_state_free(st);
    st->nparam = np;
  }
  return err;
}

/* tsr_pinn_state_read's reader for tsr_checkpoint_first */
typedef struct {
  const tsr_case *c;
  const int64_t *net;
  tsr_pinn_state *st;
} read_arg;

static tsr_err read_one(const char *path, int *refused, char *at, size_t n, void *arg) {
  read_arg *a = arg;
  tsr_err err = read_file(a->c, path, a->net, a->st, refused);
  if (!err) snprintf(at, n, "iteration %" PRId64, a->st->iteration);
  return err;
}

tsr_err tsr_pinn_state_read(const tsr_case *c, const char *spec, const char *dir,
                            tsr_pinn_state *st, char *path, size_t n) {
  int64_t net[4];
  memcpy(net, st->net, sizeof net);
  int refused;
  if (strcmp(spec, "latest") != 0) {
    snprintf(path, n, "%s", spec);
    return read_file(c, path, net, st, &refused);
  }
  /* what latest names, then the others newest first; a damaged one (a node that died while
   * writing, a failing disk) is skipped, one of another run ends the search */
  enum { MAX_CAND = 256 };
  char(*cand)[64] = malloc(sizeof *cand * MAX_CAND);
  char(*full)[4200] = malloc(sizeof *full * MAX_CAND);
  const char **paths = malloc(sizeof *paths * MAX_CAND);
  tsr_err err = cand && full && paths ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                                             "out of memory");
  int named = 0, ncand = err ? 0 : tsr_checkpoint_candidates(dir, cand, MAX_CAND, &named);
  for (int i = 0; i < ncand; ++i) {
    snprintf(full[i], sizeof full[i], "%s/%s", dir, cand[i]);
    paths[i] = full[i];
  }
  read_arg a = {c, net, st};
  int used = -1;
  if (!err) err = tsr_checkpoint_first(1, dir, ncand, paths, named, named, read_one, &a, &used);
  if (!err) snprintf(path, n, "%s", paths[used]);
  free(cand), free(full), free(paths);
  return err;
}
