#include "solver/run.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/case_expr.h"
#include "io/checkpoint.h"
#include "io/output.h"
#include "solver/ckpt_writer.h"
#include "solver/device.h"
#include "solver/graph.h"
#include "solver/run_internal.h"
#include "solver/schedule.h"
#include "solver/stop.h"
#include "solver/supervise.h"
#include "solver/watchdog.h"

const char *const tsr_run_phase_names[PH_COUNT] = {
    "setup", "initial", "compute", "halo_wait", "boundary", "source", "monitor", "output"};

tsr_run_opts tsr_run_opts_default(void) {
  return (tsr_run_opts){.out_dir = NULL, .quiet = 0, .write_output = 1, .backend = TSR_BACKEND_AUTO,
                        .restart = NULL, .restart_force = 0};
}

/* Makes a locally found error collective: every rank returns the code of the lowest failing
 * rank with its message, so that no rank runs on while another has stopped. */
tsr_err tsr_run_agree(MPI_Comm comm, tsr_err err) {
  int rank, size, first;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = err ? rank : size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return TSR_OK;
  int code = (int)err;
  MPI_Bcast(&code, 1, MPI_INT, first, comm);
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", tsr_err_message());
  MPI_Bcast(msg, sizeof msg, MPI_CHAR, first, comm);
  tsr_err_set((tsr_err)code, __FILE__, __LINE__, "%s%s", "", msg);
  if (first != 0 && size > 1) tsr_err_prefix("rank %d: ", first);
  return (tsr_err)code;
}

/* A face of the box is exchanged unless it lies on the physical boundary: the boxes tile the
 * grid and periodic images cover the seams, so some peer fills every other face's ghosts. */
static void set_reach(tsr_run_ctx *x) {
  const tsr_box *b = &x->box;
  const tsr_layout *L = &x->layout;
  for (int f = 0; f < 6; ++f) {
    int d = f / 2;
    x->exchanged[f] = x->ghost > 0 && d < x->c->dim &&
                      (L->periodic[d] || (f % 2 == 0 ? b->lo[d] > L->global.lo[d]
                                                     : b->hi[d] < L->global.hi[d]));
  }
  x->reach = *b;
  for (int f = 0; f < 6; ++f)
    if (x->exchanged[f]) {
      if (f % 2 == 0) x->reach.lo[f / 2] -= x->ghost - x->radius;
      else x->reach.hi[f / 2] += x->ghost - x->radius;
    }
}

tsr_box tsr_run_grown(const tsr_run_ctx *x, int g) {
  tsr_box r = x->box;
  for (int f = 0; f < 6; ++f)
    if (x->exchanged[f]) {
      if (f % 2 == 0) r.lo[f / 2] -= g;
      else r.hi[f / 2] += g;
    }
  return r;
}

/* The region of a stage that begins an exchange, split for the overlap: the interior, whose
 * stencils read no ghost cell that the exchange fills, and the shell, at most 2*dim disjoint
 * slabs along the exchanged faces (the rest of the region). Faces on the physical boundary get
 * their ghosts from tsr_bc before the exchange starts, so their cells stay in the interior. The
 * stencils are stars (no diagonal neighbours), so only the face-adjacent ghost slabs count. */
void tsr_run_split_shell(tsr_run_ctx *x, int grow) {
  int dim = x->c->dim;
  tsr_box in = x->box, region = tsr_run_grown(x, grow);
  for (int d = 0; d < dim; ++d) {
    if (x->exchanged[2 * d]) in.lo[d] += x->radius;
    if (x->exchanged[2 * d + 1]) in.hi[d] -= x->radius;
  }
  x->nshell = 0;
  if (tsr_box_empty(&in)) { /* too thin to have an interior: all of it waits */
    x->shell[x->nshell++] = region;
    x->interior = (tsr_box){{0, 0, 0}, {0, 0, 0}};
    return;
  }
  x->interior = in;
  tsr_box rest = region;
  for (int d = 0; d < dim; ++d) {
    tsr_box lo = rest, hi = rest;
    lo.hi[d] = in.lo[d];
    hi.lo[d] = in.hi[d];
    if (!tsr_box_empty(&lo)) x->shell[x->nshell++] = lo;
    if (!tsr_box_empty(&hi)) x->shell[x->nshell++] = hi;
    rest.lo[d] = in.lo[d];
    rest.hi[d] = in.hi[d];
  }
}

tsr_err tsr_run_source_eval(tsr_run_ctx *x, double t) {
  if (!x->src || (x->src_valid && (!x->src_timed || x->src_at == t))) return TSR_OK;
  double t0 = MPI_Wtime();
  for (int q = 0; q < x->c->ncomp; ++q)
    if (x->src_expr[q]) TSR_CALL(x->be->eval(x, x->src_expr[q], x->src, q, t, &x->reach));
  x->src_valid = 1;
  x->src_at = t;
  x->phase[PH_SOURCE] += MPI_Wtime() - t0;
  return TSR_OK;
}

typedef tsr_run_norms norms;

tsr_err tsr_run_monitor(tsr_run_ctx *x, double t, norms *nm) {
  tsr_expr *const *exact = x->exact_expr;
  double t0 = MPI_Wtime();
  const tsr_case *c = x->c;
  int nc = c->ncomp;
  nm->has_exact = 0;
  for (int q = 0; q < nc; ++q)
    if (exact[q]) {
      TSR_CALL(x->be->eval(x, exact[q], x->exact, q, t, NULL));
      nm->has_exact = 1;
    }
  double lmin[TSR_MAX_COMP], lmax[TSR_MAX_COMP], lemax[TSR_MAX_COMP], lsum[3 * TSR_MAX_COMP];
  for (int q = 0; q < nc; ++q) {
    double v[TSR_NNORM];
    TSR_CALL(x->be->norms(x, x->slot[TSR_SLOT_U], exact[q] ? x->exact : NULL, q, v));
    lmin[q] = v[TSR_NORM_MIN];
    lmax[q] = v[TSR_NORM_MAX];
    lemax[q] = v[TSR_NORM_EMAX];
    lsum[3 * q] = v[TSR_NORM_SUM];
    lsum[3 * q + 1] = v[TSR_NORM_SQ];
    lsum[3 * q + 2] = v[TSR_NORM_ESQ];
  }
  double gsum[3 * TSR_MAX_COMP];
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  MPI_Allreduce(lmin, nm->min, nc, MPI_DOUBLE, MPI_MIN, x->comm);
  MPI_Allreduce(lmax, nm->max, nc, MPI_DOUBLE, MPI_MAX, x->comm);
  MPI_Allreduce(lemax, nm->emax, nc, MPI_DOUBLE, MPI_MAX, x->comm);
  MPI_Allreduce(lsum, gsum, 3 * nc, MPI_DOUBLE, MPI_SUM, x->comm);
  tsr_watchdog_waiting(0);
  int bad_error = 0;
  for (int q = 0; q < nc; ++q) {
    nm->sum[q] = gsum[3 * q] * x->cellvol;
    nm->sq[q] = sqrt(gsum[3 * q + 1] * x->cellvol);
    nm->esq[q] = sqrt(gsum[3 * q + 2] * x->cellvol);
    bad_error |= exact[q] && !isfinite(nm->esq[q]);
  }
  /* an exact solution that is not finite somewhere made the error sums NaN, and the maximum
   * skipped those cells: the figures were wrong with exit 0. The sums tell, on every rank
   * alike, when to look for the point (a solution that is not finite also makes them so) */
  tsr_err err = TSR_OK;
  for (int q = 0; q < nc && bad_error && !err; ++q)
    if (exact[q]) err = tsr_run_find_nonfinite(x, exact[q], &c->exact[q], t);
  if (bad_error) TSR_CALL(tsr_run_agree(x->comm, err));
  x->phase[PH_MONITOR] += MPI_Wtime() - t0;
  return TSR_OK;
}

void tsr_run_monitor_line(const tsr_run_ctx *x, int64_t step, double t, const norms *nm,
                          double cps, char *buf, size_t n) {
  const tsr_case *c = x->c;
  size_t w = x->steps_by_time
                 ? (size_t)snprintf(buf, n, "step %lld t=%.6e dt=%.3e", (long long)step, t, x->dt)
                 : (size_t)snprintf(buf, n, "step %lld/%lld t=%.6e dt=%.3e", (long long)step,
                                    (long long)x->nsteps, t, x->dt);
  for (int q = 0; q < c->ncomp && w < n; ++q) {
    w += (size_t)snprintf(buf + w, n - w, " | %s min=%.6e max=%.6e L2=%.6e",
                          tsr_models[c->model].comp[q], nm->min[q], nm->max[q], nm->sq[q]);
    if (c->exact[q].text && w < n)
      w += (size_t)snprintf(buf + w, n - w, " errL2=%.3e errLinf=%.3e", nm->esq[q], nm->emax[q]);
  }
  if (w < n) snprintf(buf + w, n - w, " | %.3g cells/s", cps);
}

/* A directory that cannot be made or written is the user's to change (exit 2: tessera
 * supervise would only fail again), unless the file system failed in a way that may pass. */
static tsr_err dir_err(int e) {
  return e == ENOSPC || e == EDQUOT || e == EIO || e == ENOMEM || e == ENFILE || e == EMFILE ||
                 e == EINTR || e == EAGAIN
             ? TSR_ERR_IO
             : TSR_ERR_INPUT;
}

#define OUTDIR_WHAT_TO_DO "choose another with --out DIR or output.dir"

/* mkdir -p of dir, each directory it makes recorded in *od (rank 0). */
static tsr_err make_dirs(const char *dir, tsr_run_outdir *od) {
  size_t n = strlen(dir);
  if (n > TSR_RUN_OUTDIR_MAX) /* refused whole: a longer one was cut, and made in part */
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "output directory '%.60s...' is %zu bytes long, and the limit is %d "
                       "(PATH_MAX, %d, less room for the files written in it); choose a shorter "
                       "path with --out DIR or output.dir",
                       dir, n, TSR_RUN_OUTDIR_MAX, PATH_MAX);
  char *p = malloc(n + 1);
  size_t *made = malloc((n + 1) * sizeof *made);
  if (!p || !made) {
    free(p);
    free(made);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory making output directory '%s'", dir);
  }
  memcpy(p, dir, n + 1);
  while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
  *od = (tsr_run_outdir){.path = p, .made = made, .nmade = 0};
  for (size_t i = 1; i <= n; ++i) {
    if (i < n && p[i] != '/') continue;
    p[i] = '\0'; /* p: the directory of this level */
    struct stat st;
    int e = mkdir(p, 0777) == 0 ? 0 : errno, there = e == EEXIST;
    if (!e) made[od->nmade++] = i;
    else if (there) e = stat(p, &st) == 0 ? 0 : errno; /* stat fails for a link to nothing */
    if (e && i == n)
      return tsr_err_set(dir_err(e), __FILE__, __LINE__,
                         "cannot create output directory '%s': %s; " OUTDIR_WHAT_TO_DO, dir,
                         strerror(e));
    if (e)
      return tsr_err_set(dir_err(e), __FILE__, __LINE__,
                         "cannot create output directory '%s': mkdir '%s': %s; " OUTDIR_WHAT_TO_DO,
                         dir, p, strerror(e));
    if (there && !S_ISDIR(st.st_mode) && i == n) /* a file, a FIFO, a device */
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "cannot create output directory '%s': it exists and is not a directory; "
                         OUTDIR_WHAT_TO_DO, dir);
    if (there && !S_ISDIR(st.st_mode))
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "cannot create output directory '%s': '%s' exists and is not a "
                         "directory; " OUTDIR_WHAT_TO_DO, dir, p);
    if (i < n) p[i] = '/';
  }
  return TSR_OK;
}

void tsr_run_outdir_end(tsr_run_outdir *od, int failed) {
  /* deepest first: each prefix is shorter than the one made after it */
  for (int k = od->nmade - 1; failed && k >= 0; --k) {
    od->path[od->made[k]] = '\0';
    rmdir(od->path); /* only succeeds when empty */
  }
  free(od->path);
  free(od->made);
  *od = (tsr_run_outdir){0};
}

tsr_err tsr_run_prepare_outdir_ctx(tsr_run_ctx *x) {
  return tsr_run_prepare_outdir(x->comm, x->out_dir, &x->outdir);
}

tsr_err tsr_run_prepare_outdir(MPI_Comm comm, const char *dir, tsr_run_outdir *od) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  tsr_err err = rank == 0 ? make_dirs(dir, od) : TSR_OK;
  if (rank == 0 && !err) {
    char probe[TSR_RUN_OUTDIR_MAX + 64];
    snprintf(probe, sizeof probe, "%s/.tessera-probe-%d", dir, (int)getpid());
    FILE *fp = fopen(probe, "w");
    int e = errno;
    if (!fp)
      err = tsr_err_set(dir_err(e), __FILE__, __LINE__,
                        "output directory '%s' is not writable: %s; " OUTDIR_WHAT_TO_DO, dir,
                        strerror(e));
    else {
      fclose(fp);
      remove(probe);
    }
  }
  return tsr_run_agree(comm, err);
}

void tsr_run_ctx_free(tsr_run_ctx *x) {
  tsr_run_outdir_end(&x->outdir, 0); /* (tsr_run_ctx_end's removes what a failed run made) */
  tsr_ckpt_writer_destroy(&x->ckpt); /* first: it joins its thread and uses the backend */
  tsr_stop_end(&x->stop);
  tsr_graph_destroy(&x->graph);
  tsr_run_rebalance_free(x);
  tsr_run_fuse_auto_free(x);
  if (x->be_ready) x->be->teardown(x);
  tsr_field_destroy(&x->exact);
  tsr_snapshot_close(&x->snap);
  free(x->scratch);
  free(x->coords);
  for (int q = 0; q < TSR_MAX_COMP; ++q) {
    tsr_expr_destroy(&x->init_expr[q]);
    tsr_expr_destroy(&x->exact_expr[q]);
  }
  tsr_halo_plan_free(&x->plan);
  tsr_layout_free(&x->layout);
  for (int s = 0; s < TSR_NSLOT; ++s) tsr_field_destroy(&x->slot[s]);
  tsr_field_destroy(&x->acc);
  tsr_field_destroy(&x->src);
  tsr_bc_destroy(&x->bc);
  for (int q = 0; q < TSR_MAX_COMP; ++q) tsr_expr_destroy(&x->src_expr[q]);
}

tsr_part_opts tsr_run_part_opts(const tsr_case *c) {
  tsr_part_opts po = {0};
  po.kind = c->decomp.partition;
  po.min_width = tsr_models[c->model].ghost;
  for (int d = 0; d < 3; ++d) po.grid[d] = c->decomp.ranks[d] > 0 ? c->decomp.ranks[d] : 1;
  po.weights = c->decomp.nweights ? c->decomp.weights : NULL;
  return po;
}

tsr_err tsr_run_refit_field(tsr_run_ctx *x, tsr_field *f) {
  TSR_CALL(tsr_field_reshape(f, &x->box));
  return x->be->zero ? x->be->zero(x, f) : tsr_field_zero(f, NULL);
}

/* *f on x->box when need (created the first time, else re-shaped and zeroed), else none. */
static tsr_err box_field(tsr_run_ctx *x, tsr_field **f, int need) {
  const tsr_case *c = x->c;
  if (!need) {
    tsr_field_destroy(f);
    return TSR_OK;
  }
  if (*f) return tsr_run_refit_field(x, *f);
  const tsr_prec prec = c->precision == TSR_PRECISION_SINGLE ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
  return tsr_field_create_as(c->dim, &x->box, x->ghost, c->ncomp, x->be->mem, prec, f);
}

/* The fields of a box too large for the rank's memory: a bare "out of memory allocating a
 * field of N bytes" named no key and no remedy. Says what the rank needs in all. */
static tsr_err fields_too_large(const tsr_run_ctx *x, int nfield) {
  const tsr_case *c = x->c;
  const tsr_box g = tsr_box_grow(&x->box, c->dim, x->ghost);
  const tsr_prec prec = c->precision == TSR_PRECISION_SINGLE ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
  const double bytes = (double)tsr_box_cells(&g) * c->ncomp * nfield * (double)tsr_prec_size(prec);
  char dims[64];
  int w = 0;
  for (int d = 0; d < c->dim; ++d)
    w += snprintf(dims + w, sizeof dims - (size_t)w, "%s%d", d ? ", " : "", c->cells[d]);
  const int single = c->method == TSR_METHOD_EXPLICIT && c->precision == TSR_PRECISION_DOUBLE;
  return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                     "%s: grid.cells [%s]: rank %d cannot allocate its fields: %d fields of %d "
                     "component%s over its %lld cells and ghosts need %.3g GB (%.0f bytes); use "
                     "more ranks (each holds its part of the grid)%s or fewer cells",
                     c->path, dims, x->rank, nfield, c->ncomp, c->ncomp == 1 ? "" : "s",
                     (long long)tsr_box_cells(&g), bytes / 1e9, bytes,
                     single ? ", precision: single (half the bytes)" : "");
}

tsr_err tsr_run_box_fields(tsr_run_ctx *x, unsigned skip) {
  const tsr_case *c = x->c;
  int any_exact = 0, any_src = 0, nfield = x->scheme.uses_acc;
  for (int q = 0; q < c->ncomp; ++q) {
    any_exact |= c->exact[q].text != NULL;
    any_src |= x->src_expr[q] != NULL;
  }
  for (int s = 0; s < TSR_NSLOT; ++s) nfield += !(skip & 1u << s);
  nfield += any_exact + any_src;
  tsr_err err = TSR_OK;
  for (int s = 0; s < TSR_NSLOT && !err; ++s)
    if (!(skip & 1u << s)) err = box_field(x, &x->slot[s], 1);
  if (!err) err = box_field(x, &x->acc, x->scheme.uses_acc);
  if (!err) err = box_field(x, &x->exact, any_exact);
  x->src_valid = 0;
  if (!err) err = box_field(x, &x->src, any_src);
  if (err == TSR_ERR_MEMORY) return fields_too_large(x, nfield);
  TSR_CALL(err);
  set_reach(x);
  tsr_bc_destroy(&x->bc);
  TSR_CALL(tsr_bc_create(c, &x->box, &x->reach, x->radius, &x->bc));
  return TSR_OK;
}

int tsr_run_ghost_width(const tsr_case *c) {
  int r = tsr_models[c->model].ghost;
  int s = c->time.fuse == TSR_FUSE_AUTO ? TSR_FUSE_AUTO_MAX : c->time.fuse;
  if (c->method != TSR_METHOD_EXPLICIT || c->decomp.time_slices > 1 || s <= 1) return r;
  return r * s * tsr_integrate_plan(c->time.scheme).nstage;
}

/* The thinnest box of L along an axis it exchanges (INT_MAX: none exchanges), its axis and
 * owner. */
static int thinnest_box(const tsr_case *c, const tsr_layout *L, int *axis, int *owner) {
  int thinnest = INT_MAX;
  for (int b = 0; b < L->nbox; ++b)
    for (int d = 0; d < c->dim; ++d) {
      const tsr_box *bx = &L->boxes[b];
      int len = tsr_box_len(bx, d);
      int nb = L->periodic[d] || bx->lo[d] > L->global.lo[d] || bx->hi[d] < L->global.hi[d];
      if (nb && len < thinnest) thinnest = len, *axis = d, *owner = L->owner[b];
    }
  return thinnest;
}

int tsr_run_fuse_auto_max(const tsr_case *c, const tsr_layout *L) {
  int axis = 0, owner = 0, thin = thinnest_box(c, L, &axis, &owner);
  if (thin == INT_MAX) return 0;
  int per = tsr_models[c->model].ghost * tsr_integrate_plan(c->time.scheme).nstage, s = 1;
  while (2 * s <= TSR_FUSE_AUTO_MAX && 2 * s * per <= thin) s *= 2;
  return s;
}

tsr_err tsr_run_check_fuse(const tsr_case *c, const tsr_layout *L) {
  const int ghost = tsr_run_ghost_width(c), radius = tsr_models[c->model].ghost;
  if (ghost <= radius || c->time.fuse == TSR_FUSE_AUTO) return TSR_OK;
  int axis = 0, owner = 0, thinnest = thinnest_box(c, L, &axis, &owner);
  if (thinnest >= ghost) return TSR_OK;
  const tsr_scheme_plan sp = tsr_integrate_plan(c->time.scheme);
  const int fits = thinnest / (radius * sp.nstage);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: time.fuse: %d steps of %s need ghosts %d cells deep, but the box of "
                     "rank %d is %d cells wide along %c; use time.fuse: %d or less%s, fewer "
                     "ranks or a larger grid",
                     c->path, c->time.fuse, sp.name, ghost, owner, thinnest, "xyz"[axis],
                     fits > 1 ? fits : 1, fits > 1 ? "" : " (1: an exchange every stage)");
}

tsr_err tsr_run_setup(tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  x->scheme = tsr_integrate_plan(c->time.scheme);
  x->radius = tsr_models[c->model].ghost;
  x->ghost = tsr_run_ghost_width(c);
  x->fuse = x->ghost > x->radius && c->time.fuse != TSR_FUSE_AUTO ? c->time.fuse : 1;
  /* under parareal x is one time-slice group's, whose ranks split the grid */
  const int slices = c->decomp.time_slices > 1;
  if (c->decomp.nweights && c->decomp.nweights != x->size)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s: decomposition.weights: %d weights given but %s %d ranks; give one "
                       "weight per rank%s",
                       c->path, c->decomp.nweights,
                       slices ? "each time-slice group (which splits the grid) has" : "the run has",
                       x->size, slices ? " of a group" : "");
  if (!x->layout.nbox) {
    tsr_part_opts po = tsr_run_part_opts(c);
    TSR_CALL(tsr_partition(c->dim, c->cells, c->periodic, x->size, &po, &x->layout));
  }
  int b = tsr_layout_box_of(&x->layout, x->rank);
  TSR_CHECK(b >= 0, TSR_ERR_INTERNAL, "rank %d owns no box", x->rank);
  x->box = x->layout.boxes[b];
  TSR_CALL(tsr_run_check_fuse(c, &x->layout));
  if (c->time.fuse == TSR_FUSE_AUTO && x->ghost > x->radius) {
    /* auto: fields as deep as the largest fuse it tries; it starts exchanging every stage */
    int s = tsr_run_fuse_auto_max(c, &x->layout);
    x->ghost = s > 1 ? x->radius * s * x->scheme.nstage : x->radius;
    x->fuse = 1;
  }
  x->xghost = x->fuse > 1 ? x->ghost : x->radius;
  TSR_CALL(tsr_halo_plan_build(&x->layout, x->rank, x->xghost, &x->plan));
  set_reach(x);
  tsr_run_split_shell(x, 0);
  x->be_ready = 1; /* teardown also cleans up after a setup that failed half-way */
  TSR_CALL(x->be->setup(x));
  for (int q = 0; q < c->ncomp; ++q)
    if (c->source[q].text) {
      TSR_CALL(tsr_case_compile(c, &c->source[q], &x->src_expr[q]));
      if (tsr_expr_depends_on_time(x->src_expr[q])) x->src_timed = 1;
    }
  for (int q = 0; q < c->ncomp; ++q) {
    TSR_CALL(tsr_case_compile(c, &c->initial[q], &x->init_expr[q]));
    if (c->exact[q].text) TSR_CALL(tsr_case_compile(c, &c->exact[q], &x->exact_expr[q]));
  }
  x->cellvol = 1.0;
  for (int d = 0; d < 3; ++d) {
    x->h[d] = (c->hi[d] - c->lo[d]) / c->cells[d];
    if (d < c->dim) x->cellvol *= x->h[d];
  }
  TSR_CALL(tsr_run_box_fields(x, 0));
  tsr_stage_coef_init(&x->desc.coef, c->model, c->param_value, x->h, x->slot[TSR_SLOT_U]);
  TSR_CALL(tsr_integrate_time_plan(c, &x->dt, &x->nsteps, &x->dt_stable));
  x->desc.model = c->model;
  x->desc.ncomp = c->ncomp;
  x->desc.dt = x->dt;
  return x->be->prepare(x);
}

tsr_err tsr_run_initial(tsr_run_ctx *x) {
  double t0 = MPI_Wtime();
  for (int q = 0; q < x->c->ncomp; ++q)
    TSR_CALL(x->be->eval(x, x->init_expr[q], x->slot[TSR_SLOT_U], q, 0.0, NULL));
  TSR_CALL(x->be->sync(x));
  x->phase[PH_INIT] += MPI_Wtime() - t0;
  return TSR_OK;
}

/* Owned cells of every component of U into a new host buffer (n per component). */
static tsr_err download_all(tsr_run_ctx *x, double **out) {
  int64_t n = tsr_box_cells(&x->box);
  double *buf = malloc(sizeof(double) * (size_t)(n * x->c->ncomp) + 1);
  tsr_err err = buf ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for output");
  if (!err) err = x->be->sync(x);
  for (int q = 0; q < x->c->ncomp && !err; ++q)
    err = x->be->download(x, x->slot[TSR_SLOT_U], q, buf + q * n);
  err = tsr_run_agree(x->comm, err);
  if (err) {
    free(buf);
    buf = NULL;
  }
  *out = buf;
  return err;
}

tsr_grid_meta tsr_run_grid_meta(const tsr_case *c, double t, int64_t step) {
  return (tsr_grid_meta){c->dim, {c->cells[0], c->cells[1], c->cells[2]},
                         {c->lo[0], c->lo[1], c->lo[2]}, {c->hi[0], c->hi[1], c->hi[2]}, t, step,
                         c->precision == TSR_PRECISION_SINGLE};
}

tsr_err tsr_run_write_snapshot(tsr_run_ctx *x, int64_t step, double t) {
  double t0 = MPI_Wtime();
  /* one thread of a rank in collective HDF5 at a time (solver/ckpt_writer.h) */
  TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  double *buf;
  TSR_CALL(download_all(x, &buf));
  int64_t n = tsr_box_cells(&x->box);
  const double *data[TSR_MAX_COMP];
  for (int q = 0; q < x->c->ncomp; ++q) data[q] = buf + q * n;
  tsr_err err = tsr_snapshot_write(x->snap, step, t, &x->box, data);
  free(buf);
  x->phase[PH_OUTPUT] += MPI_Wtime() - t0;
  return err;
}

/* The snapshot series of output.snapshot_every: a new one starts with the initial state; after
 * a restart the series goes on from the snapshots up to the checkpoint's step, and those an
 * earlier run wrote after it go (without snapshot_every too: ParaView would show them as this
 * run's future). */
tsr_err tsr_run_start_snapshots(tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  tsr_grid_meta grid = tsr_run_grid_meta(c, 0.0, 0);
  /* a single-precision state has no more digits to show: its snapshots are float32 too */
  tsr_snapshot_opts so = {c->output.snapshot_single || c->precision == TSR_PRECISION_SINGLE,
                          c->output.io == TSR_OUTPUT_IO_SERIAL};
  TSR_CALL(tsr_snapshot_open(x->comm, x->out_dir, &grid, c->ncomp, tsr_models[c->model].comp,
                             x->opts.restart ? x->start_step : -1, &so, &x->snap));
  int removed = tsr_snapshot_removed(x->snap);
  if (removed) {
    printf("restart: removed %d snapshot%s after step %" PRId64 " left by the earlier run\n",
           removed, removed == 1 ? "" : "s", x->start_step);
    fflush(stdout);
  }
  if (!tsr_schedule_any(&c->output.snapshot_every)) tsr_snapshot_close(&x->snap);
  return x->opts.restart || !x->snap ? TSR_OK : tsr_run_write_snapshot(x, 0, 0.0);
}

static tsr_err write_final(tsr_run_ctx *x, double t) {
  double t0 = MPI_Wtime();
  const tsr_case *c = x->c;
  int64_t n = tsr_box_cells(&x->box);
  double *buf = malloc(sizeof(double) * (size_t)(n * c->ncomp));
  tsr_err err = buf ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for output");
  const double *data[TSR_MAX_COMP];
  for (int q = 0; q < c->ncomp && !err; ++q) {
    data[q] = buf + q * n;
    err = x->be->download(x, x->slot[TSR_SLOT_U], q, buf + q * n);
  }
  err = tsr_run_agree(x->comm, err);
  if (err) {
    free(buf);
    return err;
  }
  tsr_grid_meta meta = tsr_run_grid_meta(c, t, x->nsteps);
  char path[4200];
  snprintf(path, sizeof path, "%s/final.h5", x->out_dir);
  /* a checkpoint's datasets and attributes, so that a run continued to a later end starts
   * from it (--restart latest); one file, never parts */
  int io = c->output.io == TSR_OUTPUT_IO_SERIAL || !tsr_output_parallel_available()
               ? TSR_OUTPUT_IO_SERIAL : TSR_OUTPUT_IO_AUTO;
  char *record = tsr_case_record(c);
  err = record ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for the case text");
  err = tsr_run_agree(x->comm, err);
  if (!err)
    err = tsr_checkpoint_write_file(x->comm, path, &meta, io, omp_get_max_threads(), x->dt,
                                    record, tsr_case_restart_hash(c), &x->box, c->ncomp,
                                    tsr_models[c->model].comp, data, NULL,
                                    tsr_run_rebalance_state(x));
  free(record);
  free(buf);
  TSR_CALL(err);
  if (x->rank == 0) {
    snprintf(path, sizeof path, "%s/final.xmf", x->out_dir);
    err = tsr_output_write_xdmf(path, "final.h5", &meta, c->ncomp, tsr_models[c->model].comp);
  }
  TSR_CALL(tsr_run_agree(x->comm, err));
  x->phase[PH_OUTPUT] += MPI_Wtime() - t0;
  return TSR_OK;
}

int64_t tsr_run_monitor_every(const tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  if (c->output.monitor_every > 0) return c->output.monitor_every;
  return x->nsteps >= 20 ? x->nsteps / 20 : 1;
}

void tsr_run_result_norms(const tsr_run_ctx *x, const norms *nm, tsr_run_result *res) {
  res->has_exact = nm->has_exact;
  for (int q = 0; q < x->c->ncomp; ++q) {
    res->err_l2[q] = nm->esq[q];
    res->err_linf[q] = nm->emax[q];
    res->l2[q] = nm->sq[q];
    res->min[q] = nm->min[q];
    res->max[q] = nm->max[q];
    res->sum[q] = nm->sum[q];
  }
}

/* backend: host, cuda, or auto (cuda when every rank sees a GPU). */
tsr_err tsr_run_use_cuda(MPI_Comm comm, tsr_backend want, int *cuda) {
  *cuda = 0;
  if (want == TSR_BACKEND_HOST) return TSR_OK;
#ifdef TSR_HAVE_CUDA
  int n = 0, all = 0;
  tsr_err err = tsr_device_count(&n);
  if (err) return err;
  int mine = n > 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (want == TSR_BACKEND_CUDA && !all)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "backend cuda: %s; use backend host (or auto)",
                       mine ? "a rank on another node sees no GPU" : "this node has no GPU visible");
  *cuda = all;
  return TSR_OK;
#else
  TSR_CHECK(want != TSR_BACKEND_CUDA, TSR_ERR_INPUT,
            "backend cuda: this tessera was built without CUDA (nvcc was not found at build "
            "time); rebuild with CUDA or use backend host");
  return TSR_OK;
#endif
}

tsr_err tsr_run_choose_backend(tsr_run_ctx *x) {
  tsr_backend want = x->opts.backend != TSR_BACKEND_AUTO ? x->opts.backend : x->c->backend;
  int cuda;
  TSR_CALL(tsr_run_use_cuda(x->comm, want, &cuda));
#ifdef TSR_HAVE_CUDA
  x->be = cuda ? &tsr_backend_cuda : &tsr_backend_host;
#else
  x->be = &tsr_backend_host;
#endif
  return TSR_OK;
}

int tsr_run_halo_peers(const tsr_run_ctx *x, int *peers, int max) {
  int n = 0;
  for (int p = 0; p < x->plan.npeer && n < max; ++p)
    if (x->plan.peers[p].peer != x->rank) peers[n++] = x->plan.peers[p].peer;
  return n;
}

/* A run that tessera supervise relaunches (--restart latest) after it failed before writing
 * its first checkpoint starts over: there is nothing else to lose. Damaged checkpoints still
 * make --restart latest fail. A checkpoint is a checkpoint_<step>.h5 or whatever dir/latest
 * names (parareal's parareal_<iteration>.h5). */
int tsr_run_relaunch_fresh(MPI_Comm comm, const char *restart, const char *dir) {
  if (!restart || strcmp(restart, "latest") != 0 || tsr_supervise_attempt() < 2 ||
      tsr_checkpoint_count(comm, dir) > 0)
    return 0;
  int rank;
  MPI_Comm_rank(comm, &rank);
  char latest[256] = "";
  if (rank == 0) tsr_checkpoint_get_latest(dir, latest, sizeof latest);
  MPI_Bcast(latest, sizeof latest, MPI_CHAR, 0, comm);
  if (latest[0]) return 0;
  if (rank == 0) {
    printf("restart: no checkpoint in '%s' yet; starting from the initial conditions (attempt "
           "%d under tessera supervise)\n", dir, tsr_supervise_attempt());
    fflush(stdout);
  }
  return 1;
}

tsr_err tsr_run_report(tsr_run_ctx *x, const tsr_run_result *res) {
  double pmax[PH_COUNT], pmean[PH_COUNT];
  MPI_Reduce(x->phase, pmax, PH_COUNT, MPI_DOUBLE, MPI_MAX, 0, x->comm);
  MPI_Reduce(x->phase, pmean, PH_COUNT, MPI_DOUBLE, MPI_SUM, 0, x->comm);
  for (int p = 0; p < PH_COUNT; ++p) pmean[p] /= x->size;
  tsr_err err = x->rank == 0 ? tsr_report_write(x, res, pmax, pmean) : TSR_OK;
  return tsr_run_agree(x->comm, err);
}

tsr_err tsr_run_finish(tsr_run_ctx *x, tsr_run_result *res) {
  tsr_watchdog_beat(res->steps);
  TSR_CALL(write_final(x, res->t_final));
  return tsr_run_report(x, res);
}

void tsr_run_ctx_init(tsr_run_ctx *x, const tsr_case *c, MPI_Comm comm,
                      const tsr_run_opts *opts) {
  memset(x, 0, sizeof *x);
  x->c = c;
  x->opts = opts ? *opts : tsr_run_opts_default();
  x->out_dir = x->opts.out_dir ? x->opts.out_dir : c->output.dir;
  x->comm = comm;
  x->device_comm = MPI_COMM_NULL;
  x->stop.comm = MPI_COMM_NULL;
  x->be = &tsr_backend_host;
  MPI_Comm_rank(comm, &x->rank);
  MPI_Comm_size(comm, &x->size);
}

void tsr_run_ctx_end(tsr_run_ctx *x, tsr_err err) {
  tsr_watchdog_stop(); /* before teardown: its abort hook may name the backend's communicator */
  tsr_run_outdir_end(&x->outdir, err != TSR_OK);
  tsr_run_ctx_free(x);
}
