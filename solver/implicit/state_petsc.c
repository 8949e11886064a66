/* The implicit method's state on disk (solver/implicit/implicit_impl.h): checkpoints,
 * final.h5 and restart, with TSBDF's history, which a checkpoint holds so that a restart
 * continues the run exactly. */
#include <math.h>
#include <petscts.h>
#include <petscversion.h>
#include <petsc/private/tsimpl.h> /* ts->data (TSBDF's history), ts->steprestart */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "solver/ckpt_writer.h"
#include "solver/implicit/implicit.h"
#include "solver/implicit/implicit_impl.h"
#include "solver/watchdog.h"

/* ---- TSBDF's history ----------------------------------------------------------------------
 * PETSc's TSBDF keeps the states of the previous steps (and their times) in its private
 * context, and has no call to give it a history: a TSSolve that starts (or a TSRestartStep)
 * takes its first step as a half step of backward Euler and then BDF on the unequal steps,
 * which is not the step an uninterrupted run takes there. To continue a run exactly, a
 * checkpoint records that history and a restart puts it back, through this mirror of the
 * private context's layout (src/ts/impls/bdf/bdf.c; the same in PETSc 3.18 to 3.22, checked
 * against their sources). Other versions, or a context whose order does not read back as
 * TSBDFGetOrder's, restart BDF as PETSc does (history dropped, said on stdout). */
#if PETSC_VERSION_GE(3, 18, 0) && PETSC_VERSION_LT(3, 23, 0)
#define BDF_HISTORY 1
#define BDF_SLOTS 8 /* 6 + 2 */
typedef struct {
  PetscInt k, n;               /* order in use; states held in work[1..n] */
  PetscReal time[BDF_SLOTS];   /* time[i] of work[i]; 0: the step being solved */
  Vec work[BDF_SLOTS];
  Vec tvwork[BDF_SLOTS];
  PetscReal shift;
  Vec vec_dot, vec_wrk, vec_lte;
  PetscBool transientvar;
  PetscInt order;
  TSStepStatus status;
} bdf_mirror;
#else
#define BDF_HISTORY 0
#endif
#define MAX_HIST 6

/* The history TSBDF holds between two steps: *nh states hist[i] at times th[i] (the newest
 * first), its order in use k and count n. *nh 0 for another scheme or PETSc. */
static void bdf_history(impl *m, int *nh, Vec *hist, double *th, PetscInt *k, PetscInt *n) {
  *nh = 0;
  *k = *n = 0;
#if BDF_HISTORY
  PetscBool isbdf = PETSC_FALSE;
  PetscObjectTypeCompare((PetscObject)m->ts, TSBDF, &isbdf);
  if (!isbdf) return;
  PetscInt order = 0;
  if (TSBDFGetOrder(m->ts, &order)) return;
  const bdf_mirror *b = (const bdf_mirror *)m->ts->data;
  if (!b || b->order != order || b->n < 0 || b->n >= BDF_SLOTS || b->k < 0 || b->k > order)
    return;
  int h = (int)(b->n < order ? b->n : order);
  if (h > MAX_HIST) h = MAX_HIST;
  for (int i = 0; i < h; ++i) {
    hist[i] = b->work[i + 1];
    th[i] = b->time[i + 1];
  }
  *nh = h;
  *k = b->k;
  *n = b->n;
#else
  (void)m, (void)hist, (void)th;
#endif
}

/* Puts a history read from a checkpoint back into TSBDF (after TSSetUp, before TSSolve), so
 * that the next step is the uninterrupted run's. Returns 1 when it did. */
static int bdf_restore(impl *m, int nh, Vec *hist, const double *th, PetscInt k, PetscInt n,
                       PetscInt order_then) {
#if BDF_HISTORY
  PetscBool isbdf = PETSC_FALSE;
  PetscObjectTypeCompare((PetscObject)m->ts, TSBDF, &isbdf);
  PetscInt order = 0;
  if (!isbdf || TSBDFGetOrder(m->ts, &order) || order != order_then || nh < 1) return 0;
  bdf_mirror *b = (bdf_mirror *)m->ts->data;
  if (!b || b->order != order || n < nh || n >= BDF_SLOTS || k < 1 || k > order) return 0;
  for (int i = 0; i < nh; ++i) {
    if (!b->work[i + 1] || VecCopy(hist[i], b->work[i + 1])) return 0;
    b->time[i + 1] = th[i];
  }
  b->k = k;
  b->n = n;
  m->ts->steprestart = PETSC_FALSE;
  return 1;
#else
  (void)m, (void)nh, (void)hist, (void)th, (void)k, (void)n, (void)order_then;
  return 0;
#endif
}

/* ---- checkpoints ---------------------------------------------------------------------------
 * The explicit method's file (io/checkpoint.h: global datasets /fields/<comp>, independent of
 * the decomposition, and its attributes) with what the scheme needs to go on: the step TS takes
 * next (implicit_next_dt: the adaptive step), and with BDF its history: /fields/<comp>_prev<i>
 * (the state i + 1 steps back, i from 0) at implicit_prev_time<i>, and TSBDF's order in use and
 * count (implicit_bdf_k, implicit_bdf_n, implicit_bdf_order). Written in the background by the
 * explicit method's writer (solver/ckpt_writer.h) from a copy of all that made at the step;
 * final.h5, the end of the run, in the step loop. */

/* The owned cells of vector V (components interlaced) into data[q] (one array a component). */
static tsr_err vec_split(Vec V, int nc, int64_t n, double *const *data) {
  const PetscScalar *a;
  TSR_PETSC(VecGetArrayRead(V, &a));
  for (int64_t i = 0; i < n; ++i)
    for (int q = 0; q < nc; ++q) data[q][i] = a[i * nc + q];
  TSR_PETSC(VecRestoreArrayRead(V, &a));
  return TSR_OK;
}

static tsr_err vec_join(Vec V, int nc, int64_t n, double *const *data) {
  PetscScalar *a;
  TSR_PETSC(VecGetArray(V, &a));
  for (int64_t i = 0; i < n; ++i)
    for (int q = 0; q < nc; ++q) a[i * nc + q] = data[q][i];
  TSR_PETSC(VecRestoreArray(V, &a));
  return TSR_OK;
}

/* The state of the step just taken, as a checkpoint holds it: U and BDF's history split into
 * one array a component (in m->state_buf, allocated once), their dataset names, and the
 * attributes of what the scheme needs besides. Not collective. */
typedef struct {
  double *data[TSR_MAX_COMP * (1 + MAX_HIST)];
  char namebuf[TSR_MAX_COMP * MAX_HIST][64];
  const char *names[TSR_MAX_COMP * (1 + MAX_HIST)];
  char tname[MAX_HIST][32];
  tsr_output_attr more[6 + MAX_HIST];
  tsr_ckpt_state s;
} state_view;

static tsr_err state_get(impl *m, state_view *v) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  const int nc = c->ncomp;
  const int64_t n = tsr_box_cells(&x->box);
  Vec hist[MAX_HIST];
  double th[MAX_HIST];
  int nh;
  PetscInt k, bn, order = 0;
  bdf_history(m, &nh, hist, th, &k, &bn);
  if (nh) TSBDFGetOrder(m->ts, &order);
  PetscReal next_dt;
  TSR_PETSC(TSGetTimeStep(m->ts, &next_dt));
  const int nf = nc * (1 + nh);
  if (!m->state_buf) {
    TSR_ALLOC(m->state_buf, (size_t)n * (size_t)nc * (1 + MAX_HIST) + 1, "a checkpoint's state");
  }
  for (int f = 0; f < nf; ++f) v->data[f] = m->state_buf + (int64_t)f * n;
  for (int q = 0; q < nc; ++q) v->names[q] = tsr_models[c->model].comp[q];
  for (int i = 0; i < nh; ++i)
    for (int q = 0; q < nc; ++q) {
      snprintf(v->namebuf[i * nc + q], sizeof v->namebuf[0], "%s_prev%d", v->names[q], i);
      v->names[nc * (1 + i) + q] = v->namebuf[i * nc + q];
    }
  TSR_CALL(vec_split(m->U, nc, n, v->data));
  for (int i = 0; i < nh; ++i) TSR_CALL(vec_split(hist[i], nc, n, v->data + nc * (1 + i)));
  int nmore = 0;
  v->more[nmore++] = (tsr_output_attr){.name = "implicit_scheme",
                                       .str = tsr_implicit_scheme_name(c->implicit.scheme)};
  v->more[nmore++] = (tsr_output_attr){.name = "implicit_next_dt", .num = next_dt};
  v->more[nmore++] = (tsr_output_attr){.name = "implicit_history", .num = nh};
  v->more[nmore++] = (tsr_output_attr){.name = "implicit_bdf_k", .num = (double)k};
  if (nh) {
    v->more[nmore++] = (tsr_output_attr){.name = "implicit_bdf_n", .num = (double)bn};
    v->more[nmore++] = (tsr_output_attr){.name = "implicit_bdf_order", .num = (double)order};
    for (int i = 0; i < nh; ++i) {
      snprintf(v->tname[i], sizeof v->tname[i], "implicit_prev_time%d", i);
      v->more[nmore++] = (tsr_output_attr){.name = v->tname[i], .num = th[i]};
    }
  }
  /* dt: the case's step (the adaptive run's next one), which a continued run keeps */
  v->s = (tsr_ckpt_state){.nfield = nf, .names = v->names, .data = (const double *const *)v->data,
                          .dt = m->adaptive ? next_dt : x->dt, .attrs = v->more,
                          .nattr = nmore};
  return TSR_OK;
}

/* The state of step `step` at t into `path`. Collective. */
static tsr_err write_state(impl *m, const char *path, int64_t step, double t) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  /* one thread of a rank in collective HDF5 at a time (solver/ckpt_writer.h) */
  TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  state_view v;
  tsr_err err = tsr_run_agree(x->comm, state_get(m, &v));
  char *record = err ? NULL : tsr_case_record(c);
  if (!err && !record)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory writing '%s'", path);
  err = tsr_run_agree(x->comm, err);
  if (!err) {
    tsr_grid_meta meta = tsr_run_grid_meta(c, t, step);
    int io = c->output.io == TSR_OUTPUT_IO_SERIAL || !tsr_output_parallel_available()
                 ? TSR_OUTPUT_IO_SERIAL : TSR_OUTPUT_IO_AUTO;
    err = tsr_checkpoint_write_file_more(x->comm, path, &meta, io, 1, v.s.dt, record,
                                         tsr_case_restart_hash(c), &x->box, v.s.nfield,
                                         v.names, v.s.data, NULL, NULL, v.more, v.s.nattr);
  }
  free(record);
  return err;
}

tsr_err tsr_implicit_write_final(impl *m, int64_t step, double t) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  char path[4200];
  snprintf(path, sizeof path, "%s/final.h5", x->out_dir);
  TSR_CALL(write_state(m, path, step, t));
  tsr_err err = TSR_OK;
  if (x->rank == 0) {
    tsr_grid_meta meta = tsr_run_grid_meta(c, t, step);
    snprintf(path, sizeof path, "%s/final.xmf", x->out_dir);
    err = tsr_output_write_xdmf(path, "final.h5", &meta, c->ncomp, tsr_models[c->model].comp);
  }
  return tsr_run_agree(x->comm, err);
}

tsr_err tsr_implicit_checkpoint(impl *m, int64_t step, double t) {
  tsr_run_ctx *x = m->x;
  double t0 = MPI_Wtime();
  if (!x->ckpt) TSR_CALL(tsr_ckpt_writer_create(x, &x->ckpt));
  state_view v;
  TSR_CALL(tsr_run_agree(x->comm, state_get(m, &v)));
  TSR_CALL(tsr_ckpt_writer_save_state(x->ckpt, x, step, t, &v.s));
  m->ckpt_step = step;
  m->nckpt++;
  m->ckpt_wall += MPI_Wtime() - t0;
  tsr_watchdog_beat(step);
  return TSR_OK;
}

static double read_num(MPI_Comm comm, const char *path, const char *name, double dflt,
                       tsr_err *err) {
  double v = dflt;
  if (*err) return v;
  tsr_err e = tsr_output_read_attr(comm, path, name, NULL, 0, &v);
  if (e) *err = e;
  return v;
}

tsr_err tsr_implicit_restart(impl *m, double *t0, double *next_dt) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  const int nc = c->ncomp;
  const int64_t n = tsr_box_cells(&x->box);
  double start = MPI_Wtime();
  double *buf = malloc(sizeof(double) * (size_t)(n * nc * (1 + MAX_HIST)) + 1);
  TSR_CHECK(buf, TSR_ERR_MEMORY, "out of memory reading a checkpoint");
  double *data[TSR_MAX_COMP * (1 + MAX_HIST)];
  for (int f = 0; f < nc * (1 + MAX_HIST); ++f) data[f] = buf + (int64_t)f * n;
  tsr_checkpoint_info info;
  tsr_err err = tsr_checkpoint_load(x->comm, x->opts.restart, x->out_dir, nc,
                                    tsr_models[c->model].comp, &x->box, data, &info,
                                    tsr_run_restart_accept, x);
  if (!err) err = vec_join(m->U, nc, n, data);
  /* a run continued to a later end keeps the dt it started with (as the explicit method) */
  if (!err && !m->adaptive && info.dt != x->dt) {
    if (x->restart_same) {
      int64_t steps = c->time.steps;
      if (!c->time.has_steps) {
        double v = ceil(c->time.end / info.dt * (1.0 - 1e-12));
        steps = v >= 1.0 && v < 1e15 ? (int64_t)v : 0;
      }
      if (steps < 1)
        err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s: time.end = %g with the "
                          "checkpoint's dt = %g is no whole number of steps", c->path,
                          c->time.end, info.dt);
      else {
        x->dt = info.dt;
        x->nsteps = steps;
      }
    } else {
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "checkpoint %s has dt = %.17g where this run has %.17g; a run goes on "
                        "with the dt it started with: add --set time.dt=%.17g",
                        info.path, info.dt, x->dt, info.dt);
    }
  }
  if (!err && !m->adaptive) err = tsr_run_restart_within(x, &info);
  /* with a fixed dt, step dt's summed by TS (rounding: a few ulps a step) */
  const double tsum = (double)info.step * info.dt;
  if (!err && (info.time < 0.0 ||
               (!m->adaptive && fabs(info.time - tsum) > 1e-9 * (fabs(tsum) + info.dt))))
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "'%s' is not a valid checkpoint: its time %.17g is not its step x dt "
                      "(%lld x %.17g); it was damaged or altered", info.path, info.time,
                      (long long)info.step, info.dt);
  err = tsr_run_agree(x->comm, err);
  /* what the implicit method added (a checkpoint of the explicit method has none: --restart-
   * force took it, and it goes on from its state with the case's dt) */
  char scheme[64] = "";
  int implicit = 0;
  if (!err) {
    implicit = tsr_output_read_attr(x->comm, info.path, "implicit_scheme", scheme,
                                    sizeof scheme, NULL) == TSR_OK;
    tsr_err_clear();
  }
  int nh = 0;
  PetscInt k = 0, bn = 0, order = 0;
  double th[MAX_HIST];
  *next_dt = x->dt;
  const tsr_err early = err;
  enum { BDF_BOUND = 8 }; /* past any order or count TSBDF holds (6, and 6 + 2 slots) */
  if (!err && implicit) {
    *next_dt = read_num(x->comm, info.path, "implicit_next_dt", x->dt, &err);
    const double dh = read_num(x->comm, info.path, "implicit_history", 0, &err);
    const double dk = read_num(x->comm, info.path, "implicit_bdf_k", 0, &err);
    double dn = 0.0, dord = 0.0;
    /* what the method wrote, or the file was damaged or altered (read before any is used) */
    int ok = isfinite(*next_dt) && *next_dt > 0.0 && dh >= 0.0 && dh <= MAX_HIST &&
             dh == floor(dh) && dk >= 0.0 && dk <= BDF_BOUND;
    nh = ok ? (int)dh : 0;
    k = ok ? (PetscInt)dk : 0;
    if (nh) {
      dn = read_num(x->comm, info.path, "implicit_bdf_n", 0, &err);
      dord = read_num(x->comm, info.path, "implicit_bdf_order", 0, &err);
      ok &= dn >= nh && dn < BDF_BOUND && dord >= 1.0 && dord < BDF_BOUND;
      bn = ok ? (PetscInt)dn : 0;
      order = ok ? (PetscInt)dord : 0;
      for (int i = 0; i < nh; ++i) {
        char an[32];
        snprintf(an, sizeof an, "implicit_prev_time%d", i);
        th[i] = read_num(x->comm, info.path, an, 0, &err);
        /* the states 1, 2, ... steps back, each earlier than the one after it */
        ok &= isfinite(th[i]) && th[i] < (i ? th[i - 1] : info.time);
      }
    }
    if (!err && !ok)
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "its implicit_* attributes do not describe a step (next dt %g, %g states "
                        "of history, BDF k %g, n %g, order %g, or their times): it was damaged "
                        "or altered", *next_dt, dh, dk, dn, dord);
    if (strcmp(scheme, tsr_implicit_scheme_name(c->implicit.scheme)) != 0) nh = 0;
  }
  Vec hist[MAX_HIST] = {0};
  for (int i = 0; i < nh && !err; ++i) {
    for (int q = 0; q < nc && !err; ++q) {
      char name[64];
      snprintf(name, sizeof name, "%s_prev%d", tsr_models[c->model].comp[q], i);
      err = tsr_output_read_field(x->comm, info.path, name, &x->box, data[q], NULL);
    }
    PetscErrorCode pe = err ? 0 : VecDuplicate(m->U, &hist[i]);
    if (pe) err = tsr_petsc_err(pe, "VecDuplicate", __FILE__, __LINE__);
    if (!err) err = vec_join(hist[i], nc, n, data);
  }
  free(buf);
  err = tsr_run_agree(x->comm, err);
  /* the file read as a checkpoint; what failed is the implicit method's part of it */
  if (err && !early)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint of "
                      "method implicit (%s); restart from an older checkpoint", info.path,
                      tsr_err_message());
  if (!err) {
    m->restored = bdf_restore(m, nh, hist, th, k, bn, order) ? nh : 0;
    /* a one-step scheme, or BDF without its history: a fresh start from this state */
    PetscErrorCode pe = m->restored ? 0 : TSRestartStep(m->ts);
    if (pe) err = tsr_petsc_err(pe, "TSRestartStep", __FILE__, __LINE__);
  }
  for (int i = 0; i < MAX_HIST; ++i)
    if (hist[i]) VecDestroy(&hist[i]);
  TSR_CALL(err);
  if (x->rank == 0) {
    if (!implicit)
      printf("restart: %s was written by method explicit: method implicit starts from its "
             "state\n", info.path);
    else if (c->implicit.scheme == TSR_ISCHEME_BDF2 && !m->restored)
      printf("restart: %s holds no BDF history this PETSc can take (scheme %s): BDF starts "
             "again from its state, as a new run does\n", info.path, scheme);
    fflush(stdout);
  }
  x->start_step = info.step;
  *t0 = info.time;
  if (!implicit) *next_dt = x->dt;
  x->phase[PH_INIT] += MPI_Wtime() - start;
  return TSR_OK;
}

