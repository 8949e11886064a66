/* The PINN trainer: set-up (decomposition, backend, points, network, interface exchange,
 * restart), the loop of Adam iterations in chunks between log points, checkpoints and
 * resampling, and the stop on a non-finite loss.
 *
 * On several ranks each rank trains the network of its own box (issue 18): the boxes are the
 * classical method's partition, the interface exchange runs inside every iteration of the
 * engine, and the ranks agree once per chunk (one MPI_Allgather of a few numbers per rank:
 * losses, error sums, mismatch, a non-finite flag), so every rank leaves the loop, checkpoints
 * and stops at the same iteration. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/pinn_state.h"
#include "io/case_expr.h"
#include "solver/device.h"
#include "solver/fault.h"
#include "solver/pinn/lbfgs.h"
#include "solver/stop.h"
#include "solver/supervise.h"
#include "solver/watchdog.h"
#include "solver/pinn/pinn.h"
#include "solver/pinn/train.h"

const char *const tsr_pinn_hist_names[H_NCOL] = {
    "iteration", "loss", "pde", "boundary", "initial", "error_l2", "lr", "seconds",
    "interface", "mismatch"};

/* The history column of each loss group. */
static const int group_col[TSR_PINN_NGROUP] = {H_PDE, H_BOUNDARY, H_INITIAL, H_INTERFACE};

#ifdef TSR_HAVE_CUDA
tsr_err tsr_device_set_cuda(int device); /* solver/device_cuda.c */
#endif

/* The backend, and on GPUs this rank's GPU. With at most one rank per GPU on every node, local
 * rank r drives GPU r (tsr_device_select, as the explicit method does). With more ranks than
 * GPUs on a node, the ranks share the GPUs: local rank r takes GPU r mod (the node's GPUs), so
 * four subdomains run on two GPUs as two ranks a GPU (each network is small and each rank's
 * box is the decomposition); NCCL takes one rank per GPU, so such a run exchanges its interface
 * values over MPI through host memory (x->shared; solver/pinn/engine.h). Collective. */
static tsr_err choose_device(tsr_pinn_ctx *x, MPI_Comm comm) {
  tsr_backend want = x->opts.backend != TSR_BACKEND_AUTO ? x->opts.backend : x->c->backend;
  TSR_CALL(tsr_run_use_cuda(comm, want, &x->device));
  if (!x->device) return TSR_OK;
  int dev;
#ifdef TSR_HAVE_CUDA
  MPI_Comm node;
  int lr = 0, ls = 1, ngpu = 0;
  tsr_err err = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, x->rank, MPI_INFO_NULL, &node) ==
                        MPI_SUCCESS
                    ? TSR_OK
                    : tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Comm_split_type(SHARED) "
                                  "failed: cannot tell which ranks share a node");
  if (!err) {
    MPI_Comm_rank(node, &lr);
    MPI_Comm_size(node, &ls);
    MPI_Comm_free(&node);
    err = tsr_device_count(&ngpu);
  }
  TSR_CALL(tsr_run_agree(comm, err));
  int per = ngpu > 0 ? (ls + ngpu - 1) / ngpu : ls;
  MPI_Allreduce(&per, &x->per_gpu, 1, MPI_INT, MPI_MAX, comm);
  x->shared = x->per_gpu > 1;
  if (x->shared) return tsr_run_agree(comm, tsr_device_set_cuda(lr % ngpu));
#endif
  return tsr_device_select(comm, &dev);
}

/* The error's points: the grid's cell centres at `times` levels (cell centres of [0, end]), or
 * at once for a steady model; the exact solution there. */
static tsr_err error_points(tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  int has = 0;
  for (int k = 0; k < c->ncomp; ++k) has |= c->exact[k].text != NULL;
  x->has_exact = has;
  if (!has) return TSR_OK;
  int levels = x->batch.timed ? c->pinn.times : 1, nin = x->batch.nin;
  int64_t ng;
  double *G = NULL;
  TSR_CALL(tsr_pinn_grid_points(c, x->psub, 0.0, &G, &ng));
  /* with time slabs, each rank the levels in its slab: every (cell, level) counted once */
  int lv0 = 0, lv1 = levels;
  if (x->nslab > 1) {
    while (lv0 < levels && tsr_pinn_slab_of(c, x->nslab, (lv0 + 0.5) * (c->time.end / levels)) <
                               x->sub.slab)
      ++lv0;
    lv1 = lv0;
    while (lv1 < levels && tsr_pinn_slab_of(c, x->nslab, (lv1 + 0.5) * (c->time.end / levels)) ==
                               x->sub.slab)
      ++lv1;
  }
  levels = lv1 - lv0;
  x->ne = ng * levels;
  x->Xe = malloc((size_t)x->ne * nin * sizeof *x->Xe);
  x->ue = malloc((size_t)x->ne * c->ncomp * sizeof *x->ue);
  if (!x->Xe || !x->ue) {
    free(G);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for %lld error points",
                       (long long)x->ne);
  }
  for (int l = 0; l < levels; ++l) {
    double t = x->batch.timed ? (l + lv0 + 0.5) * (c->time.end / c->pinn.times) : 0.0;
    for (int64_t p = 0; p < ng; ++p) {
      double *X = x->Xe + (size_t)nin * (l * ng + p);
      memcpy(X, G + (size_t)nin * p, (size_t)nin * sizeof *X);
      if (x->batch.timed) X[c->dim] = t;
    }
  }
  free(G);
  for (int k = 0; k < c->ncomp; ++k) {
    tsr_expr *e = NULL;
    if (c->exact[k].text) TSR_CALL(tsr_case_compile(c, &c->exact[k], &e));
    for (int64_t p = 0; p < x->ne; ++p) {
      const double *X = x->Xe + (size_t)nin * p;
      double t = x->batch.timed ? X[c->dim] : 0.0;
      x->ue[k + c->ncomp * p] =
          e ? tsr_expr_eval(e, X[0], c->dim > 1 ? X[1] : 0.0, c->dim > 2 ? X[2] : 0.0, t) : NAN;
    }
    tsr_expr_destroy(&e);
  }
  return TSR_OK;
}

tsr_err tsr_pinn_error_sums(tsr_pinn_ctx *x, double *pse, double *psx) {
  *pse = *psx = 0.0;
  if (!x->ne) return TSR_OK;
  int nc = x->c->ncomp, cap = x->eo.eval_cap;
  double *u = malloc((size_t)cap * nc * sizeof *u);
  TSR_CHECK(u, TSR_ERR_MEMORY, "out of memory evaluating the error");
  double se = 0.0, sx = 0.0;
  tsr_err e = TSR_OK;
  for (int64_t p0 = 0; p0 < x->ne && !e; p0 += cap) {
    int n = (int)(x->ne - p0 < cap ? x->ne - p0 : cap);
    e = tsr_pinn_engine_eval(x->eng, x->Xe + (size_t)x->batch.nin * p0, n, u);
    for (int64_t i = 0; i < (int64_t)n * nc && !e; ++i) {
      double ex = x->ue[p0 * nc + i];
      if (isnan(ex)) continue; /* a component without exact */
      se += (u[i] - ex) * (u[i] - ex);
      sx += ex * ex;
    }
  }
  free(u);
  TSR_CALL(e);
  *pse = se;
  *psx = sx;
  return TSR_OK;
}

/* The relative error from every rank's sums, added in rank order (the same bits everywhere). */
static double error_of(const tsr_pinn_ctx *x, const double *se, const double *sx, int stride) {
  if (!x->has_exact) return NAN;
  double a = 0.0, b = 0.0;
  for (int r = 0; r < x->size; ++r) {
    a += se[(size_t)r * stride];
    b += sx[(size_t)r * stride];
  }
  return b > 0.0 ? sqrt(a / b) : sqrt(a);
}

tsr_err tsr_pinn_error(tsr_pinn_ctx *x, double *err) {
  double mine[2], *all = malloc((size_t)x->size * 2 * sizeof *all);
  TSR_CHECK(all, TSR_ERR_MEMORY, "out of memory");
  tsr_err e = tsr_pinn_error_sums(x, &mine[0], &mine[1]);
  MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, x->comm);
  *err = error_of(x, all, all + 1, 2);
  free(all);
  return tsr_run_agree(x->comm, e);
}

static tsr_err add_row(tsr_pinn_ctx *x, const double *row) {
  if (x->nrow == x->caprow) {
    int cap = x->caprow ? 2 * x->caprow : 256;
    double *h = realloc(x->hist, (size_t)cap * H_NCOL * sizeof *h);
    TSR_CHECK(h, TSR_ERR_MEMORY, "out of memory for the training history");
    x->hist = h;
    x->caprow = cap;
  }
  memcpy(x->hist + (size_t)x->nrow * H_NCOL, row, H_NCOL * sizeof *row);
  ++x->nrow;
  return TSR_OK;
}

static double lr_at(const tsr_case *c, int64_t it) {
  return c->pinn.lr * pow(c->pinn.decay, (double)it / (double)c->pinn.decay_every);
}

static int active_slab(const tsr_pinn_ctx *x, int64_t it);
static int trains(const tsr_pinn_ctx *x, int64_t it);

/* A phase of training: Adam's iterations, or L-BFGS's after them; [start, end) of the run's
 * iterations; with causal slabs each slab has both, in turn. */
typedef struct {
  int lbfgs;
  int64_t start, end;
} tsr_pinn_phase;

/* The phase iteration it (the next to run, < x->total) is in. */
static tsr_pinn_phase phase_at(const tsr_pinn_ctx *x, int64_t it) {
  int64_t I = x->c->pinn.iterations, base = 0;
  if (x->causal) {
    int64_t k = it / x->slab_len;
    base = (k < x->nslab ? k : x->nslab - 1) * x->slab_len;
  }
  if (it - base < I) return (tsr_pinn_phase){0, base, base + I};
  return (tsr_pinn_phase){1, base + I, base + x->slab_len};
}

/* The draw of random interior points at iteration it: L-BFGS keeps its phase's first (its line
 * search needs one objective). */
static uint64_t draw_at(const tsr_pinn_ctx *x, int64_t it) {
  int64_t re = x->c->pinn.resample_every;
  if (!re) return 0;
  tsr_pinn_phase p = phase_at(x, it < x->total ? it : x->total - 1);
  return (uint64_t)((p.lbfgs ? p.start : it) / re);
}

/* What each rank contributes at the end of a chunk (gather_row). */
enum { A_GROUP = 0, A_TOTAL = A_GROUP + TSR_PINN_NGROUP, A_BAD, A_SE, A_SX, A_MISMATCH,
       A_SECONDS, A_DONE, A_STEP, A_N };

/* A term whose loss is not finite in any of the n rows: the stop's message. */
static tsr_err check_finite(const tsr_pinn_ctx *x, const double *rows, int n, int64_t it) {
  int nt = x->batch.nterm;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < nt; ++k) {
      if (isfinite(rows[(size_t)i * nt + k])) continue;
      char last[4300];
      if (x->ckpt_path[0]) snprintf(last, sizeof last, "the last checkpoint, %s, is good: lower "
                                    "pinn.adam.lr and continue from it with --restart latest",
                                    x->ckpt_path);
      else snprintf(last, sizeof last, "no checkpoint was written; lower pinn.adam.lr");
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "the loss became %s at iteration %lld in term %s (%s); %s",
                         isnan(rows[(size_t)i * nt + k]) ? "NaN" : "infinite",
                         (long long)(it + i), x->batch.name[k],
                         tsr_pinn_group_names[x->batch.group[k]], last);
    }
  return TSR_OK;
}

/* Every rank's n figures into v (an MPI_Allgather): the ranks that do not train now (a causal
 * run's other slabs, which wait here whole chunks) poll it asleep instead of spinning on the
 * cores that the training ranks need (8 slabs on 2 CPU cores: the one that trains got a sixth of
 * a core). Collective. */
static tsr_err allgather(const double *mine, double *v, int n, MPI_Comm comm, int idle) {
  MPI_Request rq;
  int rc = MPI_Iallgather(mine, n, MPI_DOUBLE, v, n, MPI_DOUBLE, comm, &rq), done = 0;
  while (rc == MPI_SUCCESS && !done) {
    rc = MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (!done && idle) nanosleep(&(struct timespec){0, 50000}, NULL);
  }
  TSR_CHECK(rc == MPI_SUCCESS, TSR_ERR_MPI, "MPI_Iallgather of the PINN's figures failed (MPI "
            "error %d)", rc);
  return TSR_OK;
}

/* The end of a chunk whose last iteration (it - 1) had this rank's loss terms `terms`: every
 * rank's figures gathered in one MPI_Allgather; a loss that is not finite on any rank stops
 * every rank (with the message of the lowest such rank: local is this rank's check); the
 * history row of iteration it from the figures of all ranks, summed in rank order (loss
 * groups, error sums; at log points, is_log, also the error and the interface mismatch).
 * Collective. */
static tsr_err gather_row(tsr_pinn_ctx *x, const double *terms, int64_t it, int is_log,
                          tsr_err local, double *row) {
  double mine[A_N];
  for (int k = 0; k < A_N; ++k) mine[k] = 0.0;
  for (int g = 0; g < TSR_PINN_NGROUP; ++g) mine[A_GROUP + g] = NAN;
  double all = 0.0;
  for (int k = 0; k < x->batch.nterm; ++k) {
    double *g = &mine[A_GROUP + x->batch.group[k]];
    if (isnan(*g) && isfinite(terms[k])) *g = 0.0;
    *g += terms[k];
    all += terms[k];
  }
  if (terms != x->last_terms)
    memcpy(x->last_terms, terms, (size_t)x->batch.nterm * sizeof *terms);
  mine[A_TOTAL] = all;
  mine[A_SECONDS] = x->train_s;
  mine[A_DONE] = x->lb_done;
  mine[A_STEP] = x->lb_phase >= 0 ? x->lb_step : NAN;
  if (is_log && !local) {
    double te = MPI_Wtime();
    local = tsr_pinn_error_sums(x, &mine[A_SE], &mine[A_SX]);
    if (!local) local = tsr_pinn_engine_mismatch(x->eng, &mine[A_MISMATCH]);
    x->eval_s += MPI_Wtime() - te;
  }
  mine[A_BAD] = local != TSR_OK;
  double *v = malloc((size_t)x->size * A_N * sizeof *v);
  TSR_CHECK(v, TSR_ERR_MEMORY, "out of memory");
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err ge = allgather(mine, v, A_N, x->comm, x->causal && !trains(x, it - 1));
  tsr_watchdog_waiting(0);
  if (ge) {
    free(v);
    return ge;
  }
  int bad = 0;
  x->all_done = 1;
  for (int r = 0; r < x->size; ++r) {
    bad |= v[(size_t)r * A_N + A_BAD] != 0.0;
    x->all_done &= v[(size_t)r * A_N + A_DONE] != 0.0;
  }
  if (bad) {
    free(v);
    return tsr_run_agree(x->comm, local);
  }
  for (int k = 0; k < H_NCOL; ++k) row[k] = NAN;
  row[H_ITER] = (double)it;
  row[H_LOSS] = 0.0;
  x->worst = -INFINITY;
  x->worst_rank = 0;
  double mm = 0.0;
  for (int r = 0; r < x->size; ++r) {
    const double *q = v + (size_t)r * A_N;
    row[H_LOSS] += q[A_TOTAL];
    if (q[A_TOTAL] > x->worst) x->worst = q[A_TOTAL], x->worst_rank = r;
    for (int g = 0; g < TSR_PINN_NGROUP; ++g) {
      if (isnan(q[A_GROUP + g])) continue;
      double *c = &row[group_col[g]];
      *c = isnan(*c) ? q[A_GROUP + g] : *c + q[A_GROUP + g];
    }
    mm = fmax(mm, q[A_MISMATCH]);
  }
  x->mean = row[H_LOSS] / x->size;
  /* the training time: the slowest rank's, summed over the slabs of a causal run */
  double sec = 0.0;
  for (int k = 0; k < (x->causal ? x->nslab : 1); ++k) {
    double m = 0.0;
    int r0 = x->causal ? k * x->nspace : 0, r1 = x->causal ? r0 + x->nspace : x->size;
    for (int r = r0; r < r1; ++r) m = fmax(m, v[(size_t)r * A_N + A_SECONDS]);
    sec += m;
  }
  x->run_s = sec;
  if (is_log) {
    row[H_ERROR] = error_of(x, v + A_SE, v + A_SX, A_N);
    if (x->size > 1) row[H_MISMATCH] = x->mismatch = mm;
  }
  int a = active_slab(x, it - 1);
  row[H_LR] = lr_at(x->c, a < 0 ? it - 1 : it - 1 - (int64_t)a * x->slab_len);
  /* during L-BFGS: the line search's step of the lowest rank that trains */
  for (int r = 0; x->lb_phase >= 0 && r < x->size; ++r)
    if (!isnan(v[(size_t)r * A_N + A_STEP])) {
      row[H_LR] = v[(size_t)r * A_N + A_STEP];
      break;
    }
  row[H_SECONDS] = x->prior_s + x->run_s;
  free(v);
  return TSR_OK;
}

/* Once per group: a warning when its loss has not gone below 0.99 of its best for the last
 * fifth of the run so far (at least 10 log points). */
static void stall_warning(tsr_pinn_ctx *x, tsr_progress *pg, int *warned) {
  int n = x->nrow;
  if (n < 20) return;
  for (int g = 0; g < TSR_PINN_NGROUP; ++g) {
    if (warned[g]) continue;
    int cut = n - n / 5;
    double before = INFINITY, after = INFINITY;
    for (int i = 0; i < n; ++i) {
      double v = x->hist[(size_t)i * H_NCOL + group_col[g]];
      if (isnan(v)) continue;
      if (i < cut) before = v < before ? v : before;
      else after = v < after ? v : after;
    }
    if (isinf(before) || after < 0.99 * before) continue;
    char line[256];
    snprintf(line, sizeof line, "warning: loss term %s has not decreased since iteration %lld "
             "(best %.3e, now %.3e): the weights (pinn.weights) or the learning rate may need a "
             "change", tsr_pinn_group_names[g], (long long)x->hist[(size_t)cut * H_NCOL],
             before, x->hist[(size_t)(n - 1) * H_NCOL + group_col[g]]);
    tsr_progress_line(pg, line);
    warned[g] = 1;
  }
}

/* Every rank's box as the checkpoint records it (NULL on one rank); new. */
static int64_t *boxes_of(const tsr_pinn_ctx *x) {
  if (x->size == 1) return NULL;
  int64_t *b = malloc((size_t)x->size * 6 * sizeof *b);
  for (int r = 0; b && r < x->size; ++r) {
    const tsr_box *q = &x->layout.boxes[tsr_layout_box_of(&x->layout, r % x->nspace)];
    for (int a = 0; a < 3; ++a) {
      b[6 * r + a] = q->lo[a];
      b[6 * r + 3 + a] = q->hi[a];
    }
  }
  return b;
}

static tsr_pinn_state state_of(const tsr_pinn_ctx *x) {
  tsr_pinn_state s = {.nparam = x->nparam, .nranks = x->size,
                      .net = {x->c->pinn.width, x->c->pinn.depth, x->c->pinn.act,
                              x->c->precision == TSR_PRECISION_SINGLE}};
  if (x->nslab > 1) {
    s.slabs[0] = x->nslab;
    s.slabs[1] = x->causal;
    s.slabs[2] = x->causal ? x->c->pinn.iterations : 0;
    s.slab_lbfgs = x->causal ? x->c->pinn.lbfgs : 0;
  }
  return s;
}

/* The Adam iterations this rank's network has done at the run's iteration it: it (at most
 * pinn.adam.iterations, I), or in a causal run its slab's share of it (0 before its slab, I
 * after its Adam phase). */
static int64_t local_it(const tsr_pinn_ctx *x, int64_t it) {
  int64_t I = x->c->pinn.iterations, l = x->causal ? it - (int64_t)x->sub.slab * x->slab_len : it;
  return l < 0 ? 0 : l > I ? I : l;
}

/* The slab training at iteration it of a causal run (it < total), -1 without. */
static int active_slab(const tsr_pinn_ctx *x, int64_t it) {
  if (!x->causal) return -1;
  int64_t k = it / x->slab_len;
  return (int)(k < x->nslab ? k : x->nslab - 1);
}

/* Whether this rank trains at iteration it: every rank, or in a causal run the slab's. */
static int trains(const tsr_pinn_ctx *x, int64_t it) {
  return !x->causal || active_slab(x, it) == x->sub.slab;
}

/* The checkpoint of iteration it: every rank's parameters and moments (and during L-BFGS its
 * state) gathered on rank 0, which writes the file. Collective. */
static tsr_err checkpoint(tsr_pinn_ctx *x, int64_t it) {
  double t0 = MPI_Wtime();
  size_t np = x->nparam, nr = (size_t)x->size;
  int inl = x->lb_phase >= 0, hm = x->c->pinn.lbfgs_history;
  /* each rank's blob: theta, m, v [, pairs held, s (m x np), y (m x np), rho (m)] */
  size_t nl = inl ? 1 + 2 * (size_t)hm * np + (size_t)hm : 0, nb = 3 * np + nl;
  tsr_pinn_state st = state_of(x);
  st.iteration = it;
  st.hist_rows = x->nrow;
  st.hist_cols = H_NCOL;
  st.hist = x->hist;
  double *mine = calloc(nb, sizeof *mine);
  double *all = x->rank == 0 ? malloc(nb * nr * sizeof *all) : NULL;
  double *sorted = x->rank == 0 ? malloc(nb * nr * sizeof *sorted) : NULL;
  int64_t *counts = x->rank == 0 && inl ? malloc(nr * sizeof *counts) : NULL;
  int64_t *boxes = boxes_of(x);
  tsr_err err = mine && (x->rank || (all && sorted && (!inl || counts))) && (nr == 1 || boxes)
                    ? TSR_OK
                    : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                  "out of memory for a checkpoint");
  if (!err) err = tsr_pinn_engine_get_state(x->eng, mine, mine + np, mine + 2 * np);
  if (!err && inl) {
    double *q = mine + 3 * np;
    q[0] = -1.0;
    if (x->lb) {
      int cnt;
      /* L-BFGS's own parameters, in double: the engine holds them rounded to its precision */
      tsr_pinn_lbfgs_get(x->lb, mine, q + 1, q + 1 + (size_t)hm * np, q + 1 + 2 * (size_t)hm * np,
                         &cnt);
      q[0] = cnt;
    }
  }
  err = tsr_run_agree(x->comm, err);
  if (!err) {
    tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
    MPI_Gather(mine, (int)nb, MPI_DOUBLE, all, (int)nb, MPI_DOUBLE, 0, x->comm);
    tsr_watchdog_waiting(0);
    if (x->rank == 0) {
      /* rank-major blobs -> theta of every rank, then m, then v, then s, y, rho */
      for (size_t r = 0; r < nr; ++r) {
        const double *b = all + r * nb;
        for (int k = 0; k < 3; ++k)
          memcpy(sorted + (k * nr + r) * np, b + k * np, np * sizeof *all);
        if (!inl) continue;
        size_t pm = (size_t)hm * np;
        counts[r] = (int64_t)b[3 * np];
        memcpy(sorted + 3 * nr * np + r * pm, b + 3 * np + 1, pm * sizeof *all);
        memcpy(sorted + 3 * nr * np + nr * pm + r * pm, b + 3 * np + 1 + pm, pm * sizeof *all);
        memcpy(sorted + 3 * nr * np + 2 * nr * pm + r * hm, b + 3 * np + 1 + 2 * pm,
               (size_t)hm * sizeof *all);
      }
      st.theta = sorted;
      st.m = sorted + nr * np;
      st.v = sorted + 2 * nr * np;
      st.boxes = boxes;
      if (inl) {
        size_t pm = (size_t)hm * np;
        st.lbfgs_m = hm;
        st.lbfgs_start = x->lb_phase;
        st.lbfgs_count = counts;
        st.lbfgs_s = sorted + 3 * nr * np;
        st.lbfgs_y = st.lbfgs_s + nr * pm;
        st.lbfgs_rho = st.lbfgs_y + nr * pm;
      }
      err = tsr_pinn_state_write(x->c, x->out_dir, &st, x->ckpt_path, sizeof x->ckpt_path);
    }
    tsr_watchdog_waiting(TSR_WATCHDOG_PEERS); /* the others, while rank 0 writes */
    err = tsr_run_agree(x->comm, err);
    MPI_Bcast(x->ckpt_path, (int)sizeof x->ckpt_path, MPI_CHAR, 0, x->comm);
    tsr_watchdog_waiting(0);
  }
  free(mine);
  free(all);
  free(sorted);
  free(counts);
  free(boxes);
  x->ckpt_s += MPI_Wtime() - t0;
  if (!err) ++x->ckpt_count;
  return err;
}

/* From here on a rank that stops (crash, hang) stops the job instead of leaving its
 * neighbours waiting (solver/watchdog.h, comm.timeout), where x->watched: on several CPU ranks
 * that exchange every iteration (every iteration's exchange is progress; the ranks of a causal
 * run's later slabs wait whole chunks for the earlier one, and the GPU path's host waits are not
 * watched yet). The watchdog names the interface neighbours. */
static tsr_err start_watchdog(tsr_pinn_ctx *x) {
  if (!x->watched) return TSR_OK;
  const tsr_pinn_peers *pe = &x->batch.peers;
  int peers[64], n = 0;
  for (int i = 0; i < pe->npeer && n < 64; ++i) {
    int seen = pe->peer[i] == x->rank;
    for (int k = 0; k < n && !seen; ++k) seen = peers[k] == pe->peer[i];
    if (!seen) peers[n++] = pe->peer[i];
  }
  return tsr_watchdog_start(x->rank, x->c->comm.timeout, peers, n);
}

/* --inject-fault in a PINN run (a first launch: a relaunch neither checks nor fires it): the
 * kinds that fire after an iteration, on a rank of the run, at an iteration of Adam's; corrupt
 * at one that writes a checkpoint; hang where the watchdog runs (start_watchdog). enospc and
 * graph need the explicit method's checkpoint writer and CUDA graphs, which the PINN's loop
 * does not have. */
static tsr_err check_fault(const tsr_pinn_ctx *x) {
  const tsr_fault *f = x->opts.fault;
  if (!f || f->kind == TSR_FAULT_NONE || !tsr_fault_armed()) return TSR_OK;
  TSR_CHECK(f->kind != TSR_FAULT_HANG || x->watched, TSR_ERR_INPUT, "--inject-fault: kind=hang "
            "with method pinn needs the watchdog, which watches %s; run it on several CPU "
            "ranks without pinn.slabs: causal, or use kind=exit",
            x->device ? "CPU ranks only in this version" : x->size == 1 ? "several ranks"
                                                                        : "slabs trained at once");
  TSR_CHECK(f->kind == TSR_FAULT_EXIT || f->kind == TSR_FAULT_CORRUPT ||
            f->kind == TSR_FAULT_HANG || f->kind == TSR_FAULT_SIGNAL ||
            f->kind == TSR_FAULT_SIGNAL2 || f->kind == TSR_FAULT_NAN, TSR_ERR_INPUT,
            "--inject-fault: kind=%s is not available with method pinn in this version (its loop "
            "has no asynchronous checkpoint writer or CUDA graph capture); use kind=exit, "
            "corrupt, hang, signal, signal2 or nan", tsr_fault_kind_name(f->kind));
  /* checkpoint_every counts iterations here ({time: T} is refused with method pinn) */
  const tsr_case_every *every = x->opts.write_output ? &x->c->output.checkpoint_every : NULL;
  return tsr_fault_check(f, x->size, x->total, every, 1.0);
}

/* A checkpoint's L-BFGS state (st: rank 0's read) to each rank: x->lb_count its pairs (-1: not
 * in that phase) and x->lb_state theta (mine's, L-BFGS's double), s, y, rho, for lbfgs() to put
 * back. Collective. */
static tsr_err restart_lbfgs(tsr_pinn_ctx *x, const tsr_pinn_state *st, const double *mine) {
  size_t np = x->nparam, nr = (size_t)x->size, hm = (size_t)x->c->pinn.lbfgs_history;
  size_t nb = 1 + 2 * hm * np + hm;
  double *packed = x->rank == 0 ? malloc(nb * nr * sizeof *packed) : NULL;
  double *q = malloc(nb * sizeof *q);
  x->lb_state = malloc((np + nb) * sizeof *x->lb_state);
  int ok = q && x->lb_state && (x->rank || packed);
  tsr_err err = tsr_run_agree(x->comm, ok ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__,
                                                                  __LINE__, "out of memory"));
  if (!err) {
    for (size_t r = 0; x->rank == 0 && r < nr; ++r) {
      double *b = packed + r * nb;
      b[0] = (double)st->lbfgs_count[r];
      memcpy(b + 1, st->lbfgs_s + r * hm * np, hm * np * sizeof *b);
      memcpy(b + 1 + hm * np, st->lbfgs_y + r * hm * np, hm * np * sizeof *b);
      memcpy(b + 1 + 2 * hm * np, st->lbfgs_rho + r * hm, hm * sizeof *b);
    }
    MPI_Scatter(packed, (int)nb, MPI_DOUBLE, q, (int)nb, MPI_DOUBLE, 0, x->comm);
    x->lb_count = (int)q[0];
    memcpy(x->lb_state, mine, np * sizeof *q);
    memcpy(x->lb_state + np, q + 1, (nb - 1) * sizeof *q);
  }
  free(packed);
  free(q);
  return err;
}

/* Rank 0 reads the checkpoint (the decomposition must be this run's), every rank gets its own
 * network's parameters and moments and the history, and during L-BFGS its state. Collective. */
static tsr_err restart(tsr_pinn_ctx *x) {
  size_t np = x->nparam, nr = (size_t)x->size;
  tsr_pinn_state st = state_of(x);
  int64_t *boxes = boxes_of(x);
  st.boxes = boxes;
  st.attempt = tsr_supervise_attempt() >= 2 ? tsr_supervise_attempt() : 0;
  st.lbfgs_m = x->c->pinn.lbfgs_history;
  tsr_err err = nr == 1 || boxes ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                                        "out of memory");
  if (!err && x->rank == 0)
    err = tsr_pinn_state_read(x->c, x->opts.restart, x->out_dir, &st, x->ckpt_path,
                              sizeof x->ckpt_path);
  if (!err && x->rank == 0 && st.hist_rows > 0 && st.hist_cols != H_NCOL &&
      st.hist_cols != H_NCOL_V1)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s': its history has %d columns, "
                      "this tessera writes %d; restart with the tessera that wrote it",
                      x->ckpt_path, st.hist_cols, H_NCOL);
  err = tsr_run_agree(x->comm, err);
  if (err) {
    if (x->rank == 0) tsr_pinn_state_free(&st);
    free(boxes);
    return err;
  }
  int64_t head[4] = {st.iteration, st.hist_rows, st.hist_cols, st.lbfgs_start};
  MPI_Bcast(head, 4, MPI_INT64_T, 0, x->comm);
  x->lb_start = head[3];
  MPI_Bcast(x->ckpt_path, (int)sizeof x->ckpt_path, MPI_CHAR, 0, x->comm);
  size_t nh = (size_t)head[1] * (size_t)head[2];
  double *hist = x->rank == 0 ? st.hist : malloc((nh ? nh : 1) * sizeof *hist);
  double *mine = malloc(3 * np * sizeof *mine);
  double *packed = x->rank == 0 ? malloc(3 * np * nr * sizeof *packed) : NULL;
  int ok = hist && mine && (x->rank || packed);
  err = tsr_run_agree(x->comm, ok ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                                         "out of memory for a restart"));
  if (!err) {
    MPI_Bcast(hist, (int)nh, MPI_DOUBLE, 0, x->comm);
    if (x->rank == 0)
      for (size_t r = 0; r < nr; ++r) {
        memcpy(packed + 3 * r * np, st.theta + r * np, np * sizeof *packed);
        memcpy(packed + (3 * r + 1) * np, st.m + r * np, np * sizeof *packed);
        memcpy(packed + (3 * r + 2) * np, st.v + r * np, np * sizeof *packed);
      }
    MPI_Scatter(packed, (int)(3 * np), MPI_DOUBLE, mine, (int)(3 * np), MPI_DOUBLE, 0, x->comm);
    double row[H_NCOL];
    for (int i = 0; i < (int)head[1] && !err; ++i) {
      for (int k = 0; k < H_NCOL; ++k) row[k] = k < head[2] ? hist[(size_t)i * head[2] + k] : NAN;
      err = add_row(x, row);
    }
    if (!err)
      err = tsr_pinn_engine_set_state(x->eng, mine, mine + np, mine + 2 * np,
                                      local_it(x, head[0]));
    err = tsr_run_agree(x->comm, err);
    if (!err && x->lb_start >= 0) err = restart_lbfgs(x, &st, mine);
  }
  x->it0 = head[0];
  if (x->nrow) x->prior_s = x->hist[(size_t)(x->nrow - 1) * H_NCOL + H_SECONDS];
  if (x->rank == 0) tsr_pinn_state_free(&st);
  else free(hist);
  free(mine);
  free(packed);
  free(boxes);
  if (!err && !x->opts.quiet && x->rank == 0)
    printf("restart: iteration %lld from %s\n", (long long)x->it0, x->ckpt_path);
  return err;
}

/* The batch of draw k (resampled interior points) into the engine. */
static tsr_err set_draw(tsr_pinn_ctx *x, uint64_t k) {
  if (k == x->draw && x->batch.X) return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
  tsr_pinn_batch_free(&x->batch);
  TSR_CALL(tsr_pinn_batch_build(x->c, x->psub, k, &x->batch));
  x->draw = k;
  return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
}

/* The boxes of the ranks (several ranks): the classical method's partitioners. */
static tsr_err decompose(tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  x->nslab = c->decomp.time_slices > 1 ? c->decomp.time_slices : 1;
  x->causal = x->nslab > 1 && c->pinn.causal;
  x->nspace = x->size / x->nslab;
  x->slab_len = c->pinn.iterations + c->pinn.lbfgs;
  x->total = x->slab_len * (x->causal ? x->nslab : 1);
  if (x->nslab > 1 && x->size % x->nslab) {
    char ok[160];
    int n = 0;
    for (int m = 1; m <= 4 && n < (int)sizeof ok; ++m)
      n += snprintf(ok + n, sizeof ok - n, "%s%d", m > 1 ? ", " : "", m * x->nslab);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s: decomposition.time_slices: %d "
                       "time slabs need a rank count that is a multiple of %d (ranks form space "
                       "x time subdomains, slab-major), and this run has %d ranks; run on %s, ... "
                       "ranks, or change time_slices", c->path, x->nslab, x->nslab, x->size, ok);
  }
  if (x->size == 1) return TSR_OK;
  TSR_CALL(tsr_pinn_partition(c, x->nspace, &x->layout));
  int srank = x->rank % x->nspace, slab = x->rank / x->nspace;
  x->sub = (tsr_pinn_sub){.layout = &x->layout, .box = tsr_layout_box_of(&x->layout, srank)};
  if (x->nslab > 1) {
    x->sub.slab = slab;
    x->sub.nslab = x->nslab;
    x->sub.rank0 = slab * x->nspace;
    x->sub.causal = x->causal;
  }
  TSR_CHECK(x->sub.box >= 0, TSR_ERR_INTERNAL, "rank %d owns no box", x->rank);
  x->psub = &x->sub;
  return TSR_OK;
}

/* The interface exchange with the neighbours (several ranks): MPI on CPU ranks, NCCL on GPUs
 * (MPI where ranks share GPUs: choose_device). Collective. */
static tsr_err exchange(tsr_pinn_ctx *x) {
  if (x->size == 1) return TSR_OK;
  int nv = TSR_PINN_IFACE_NV * x->c->ncomp;
  tsr_err err = TSR_OK;
  /* causal slabs exchange in space only; the earlier slab's values come once (handoff) */
  tsr_pinn_peers pe = x->batch.peers;
  if (x->causal) pe.npeer = pe.nspace_peer;
  if (x->device && !x->shared) {
#ifdef TSR_HAVE_CUDA
    ncclComm_t nccl = NULL;
    err = tsr_nccl_create(x->comm, &nccl);
    x->nccl = nccl;
    if (!err) err = tsr_pinn_iface_create_nccl(nccl, &pe, nv, &x->xch);
#endif
  } else {
    err = tsr_pinn_iface_create_mpi(x->comm, &pe, nv, &x->xch);
  }
  if (!err) err = tsr_pinn_engine_set_interface(x->eng, x->batch.F, x->xch);
  return tsr_run_agree(x->comm, err);
}

/* A causal run's handoff to slab k (> 0): each rank of slab k - 1 evaluates its network at
 * its box's cell centres at the slab face t_k and sends them to the rank of the same box in
 * slab k, which holds them as the targets of its term `slab initial` (the neighbours' values
 * of its slab face points); with transfer (slab k starts here) also its parameters, from
 * which slab k starts (Adam's moments zero, its iteration 0). Collective. */
static tsr_err handoff(tsr_pinn_ctx *x, int k, int transfer) {
  const tsr_case *c = x->c;
  int slab = x->sub.slab, nc = c->ncomp, nv = TSR_PINN_IFACE_NV * nc;
  size_t np = x->nparam;
  tsr_err err = TSR_OK;
  if (slab == k - 1) {
    double *X = NULL, *u = NULL, *th = NULL, t0, t1;
    int64_t n = 0;
    tsr_pinn_slab_span(c, x->psub, &t0, &t1);
    err = tsr_pinn_grid_points(c, x->psub, t1, &X, &n);
    u = malloc((size_t)(n ? n : 1) * nc * sizeof *u);
    th = malloc(3 * np * sizeof *th);
    if (!err && (!u || !th))
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for a slab handoff");
    for (int64_t p0 = 0; p0 < n && !err; p0 += x->eo.eval_cap) {
      int m = (int)(n - p0 < x->eo.eval_cap ? n - p0 : x->eo.eval_cap);
      err = tsr_pinn_engine_eval(x->eng, X + (size_t)x->batch.nin * p0, m, u + p0 * nc);
    }
    if (!err && transfer) err = tsr_pinn_engine_get_state(x->eng, th, th + np, th + 2 * np);
    /* sent also after a failure (the receiver waits for it); the error is agreed below */
    MPI_Send(u ? u : th, u ? (int)(n * nc) : 0, MPI_DOUBLE, x->rank + x->nspace, 0x534c,
             x->comm);
    if (transfer) MPI_Send(th, th ? (int)np : 0, MPI_DOUBLE, x->rank + x->nspace, 0x534d, x->comm);
    free(X);
    free(u);
    free(th);
  } else if (slab == k) {
    int nif = x->batch.if_count, lo = x->batch.if_space, n = nif - lo;
    double *N = calloc((size_t)(nif ? nif : 1) * nv, sizeof *N);
    double *u = malloc((size_t)(n ? n : 1) * nc * sizeof *u);
    double *th = malloc(np * sizeof *th);
    MPI_Status st;
    MPI_Recv(u, u ? n * nc : 0, MPI_DOUBLE, x->rank - x->nspace, 0x534c, x->comm, &st);
    if (transfer)
      MPI_Recv(th, th ? (int)np : 0, MPI_DOUBLE, x->rank - x->nspace, 0x534d, x->comm, &st);
    if (!N || !u || !th)
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for a slab handoff");
    for (int q = 0; q < n && !err; ++q)
      for (int cc = 0; cc < nc; ++cc) N[(size_t)(lo + q) * nv + cc] = u[(size_t)q * nc + cc];
    if (!err) err = tsr_pinn_engine_set_neighbours(x->eng, N);
    if (!err && transfer) err = tsr_pinn_engine_set_state(x->eng, th, NULL, NULL, 0);
    free(N);
    free(u);
    free(th);
  }
  return tsr_run_agree(x->comm, err);
}

static tsr_err setup(tsr_pinn_ctx *x, MPI_Comm comm) {
  const tsr_case *c = x->c;
  TSR_CALL(choose_device(x, comm));
  tsr_err err = decompose(x);
  if (!err) err = tsr_pinn_batch_build(c, x->psub, 0, &x->batch);
  TSR_CALL(tsr_run_agree(comm, err));
  tsr_pinn_engine_opts_of(c, x->psub, &x->batch, x->device, &x->eo);
  /* the ranks that train together, over which a GPU run agrees on capturing its iteration
   * with the exchange in it: every rank, or in a causal run the slab's */
  if (x->size > 1 && x->causal)
    TSR_CALL(tsr_run_agree(comm, MPI_Comm_split(comm, x->sub.slab, x->rank, &x->group) ==
                                         MPI_SUCCESS
                                     ? TSR_OK
                                     : tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                                                   "MPI_Comm_split(slabs) failed")));
  if (x->size > 1) x->eo.comm = x->causal ? x->group : comm;
  x->shape = x->eo.shape;
  x->nparam = tsr_net_nparam(&x->shape);
  err = error_points(x);
  double lo[3], hi[3];
  tsr_box b = tsr_pinn_sub_box(c, x->psub, lo, hi);
  int64_t ng = 1;
  for (int a = 0; a < c->dim; ++a) ng *= tsr_box_len(&b, a);
  int64_t cap = x->ne > ng ? x->ne : ng;
  x->eo.eval_cap = (int)(cap < 65536 ? cap : 65536);
  if (!err) err = tsr_pinn_engine_create(&x->eo, &x->eng);
  double *theta = err ? NULL : malloc(x->nparam * sizeof *theta);
  if (!err && !theta)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for %zu parameters",
                      x->nparam);
  /* every rank's network starts from the case's seed (each normalises over its own box) */
  if (!err) tsr_net_init(&x->shape, c->pinn.seed, theta);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, theta, NULL, NULL, 0);
  free(theta);
  TSR_CALL(tsr_run_agree(comm, err));
  x->watched = x->size > 1 && !x->device && !x->causal;
  TSR_CALL(tsr_run_agree(comm, check_fault(x)));
  if (x->opts.write_output && tsr_run_relaunch_fresh(comm, x->opts.restart, x->out_dir))
    x->opts.restart = NULL;
  if (x->opts.restart) TSR_CALL(restart(x));
  TSR_CALL(exchange(x));
  /* NCCL connects a pair of ranks at their first send and receive (1.1-1.3 s on 2 H200s,
   * bench/README.md, pinn_scaling): one exchange here keeps that out of the training clock.
   * It only receives into the neighbours' own segments, which every iteration's exchange
   * fills again before its loss reads them, so training keeps its bits */
  if (x->device && x->size > 1)
    TSR_CALL(tsr_run_agree(comm, tsr_pinn_engine_exchange(x->eng, NULL, NULL)));
  TSR_CALL(tsr_run_agree(comm, start_watchdog(x)));
  TSR_CALL(tsr_run_agree(comm, set_draw(x, draw_at(x, x->it0))));
  /* a causal run restarted inside slab k > 0: its slab face values again, from the finished
   * slab's restored network (the same bits as the handoff at its start); at the start of slab
   * k the loop hands off */
  int a = active_slab(x, x->it0);
  if (a > 0 && x->it0 < x->total && x->it0 % x->slab_len) TSR_CALL(handoff(x, a, 0));
  return TSR_OK;
}

static void summary(const tsr_pinn_ctx *x, tsr_progress *pg) {
  char line[640];
  int n = snprintf(line, sizeof line, "pinn: %s on %s, %s precision: network %d x %d %s, %zu "
                   "parameters; points", tsr_models[x->c->model].name,
                   x->device ? "the GPU" : "the host",
                   x->eo.single ? "single" : "double", x->shape.depth, x->shape.width,
                   x->shape.act == TSR_NET_SIN ? "sin" : "tanh", x->nparam);
  for (int k = 0; k < x->batch.nterm && n < (int)sizeof line; ++k)
    n += snprintf(line + n, sizeof line - n, "%s %s %d", k ? "," : "", x->batch.name[k],
                  x->batch.term[k].count);
  if (x->size > 1 && n < (int)sizeof line)
    n += snprintf(line + n, sizeof line - n, " (rank 0's); %d ranks, one network per rank's "
                  "box%s%s, %d neighbour%s of rank 0", x->size,
                  x->nslab > 1 ? " and time slab, slabs " : "",
                  x->nslab > 1 ? (x->causal ? "causal" : "all at once") : "",
                  x->batch.peers.npeer, x->batch.peers.npeer == 1 ? "" : "s");
  if (x->shared && n < (int)sizeof line)
    snprintf(line + n, sizeof line - n, "; up to %d ranks share a GPU (the interface values "
             "over MPI through host memory)", x->per_gpu);
  tsr_progress_line(pg, line);
}

static void log_line(const tsr_pinn_ctx *x, const double *row, int64_t total, tsr_progress *pg,
                     double rate) {
  char line[640];
  int n = snprintf(line, sizeof line, "iteration %lld/%lld loss %.4e (", (long long)row[H_ITER],
                   (long long)total, row[H_LOSS]);
  const char *sep = "";
  for (int g = 0; g < TSR_PINN_NGROUP; ++g) {
    if (isnan(row[group_col[g]])) continue;
    n += snprintf(line + n, sizeof line - n, "%s%s %.3e", sep, tsr_pinn_group_names[g],
                  row[group_col[g]]);
    sep = ", ";
  }
  n += snprintf(line + n, sizeof line - n, ")");
  if (x->size > 1)
    n += snprintf(line + n, sizeof line - n, " subdomains: worst %.3e (rank %d), mean %.3e, "
                  "mismatch %.2e", x->worst, x->worst_rank, x->mean, row[H_MISMATCH]);
  if (!isnan(row[H_ERROR])) n += snprintf(line + n, sizeof line - n, " error %.3e", row[H_ERROR]);
  snprintf(line + n, sizeof line - n, " lr %.3e, %.4g it/s", row[H_LR], rate);
  tsr_progress_line(pg, line);
}

/* How many iterations from it before the next log point, checkpoint, redraw or the end. */
static int chunk(const tsr_pinn_ctx *x, int64_t it, int64_t total) {
  const tsr_case *c = x->c;
  int64_t n = c->pinn.log_every - it % c->pinn.log_every;
  if (total - it < n) n = total - it;
  if (x->eo.hist_cap < n) n = x->eo.hist_cap;
  if (c->pinn.resample_every && c->pinn.resample_every - it % c->pinn.resample_every < n)
    n = c->pinn.resample_every - it % c->pinn.resample_every;
  int64_t ce = c->output.checkpoint_every.steps;
  if (ce && ce - it % ce < n) n = ce - it % ce;
  const tsr_fault *f = x->opts.fault;
  if (f && f->kind != TSR_FAULT_NONE && f->step > it && f->step - it < n) n = f->step - it;
  /* no chunk crosses the end of Adam's phase (a causal run: of the slab's) */
  int64_t end = phase_at(x, it).end;
  if (end - it < n) n = end - it;
  return (int)n;
}

/* --inject-fault kind=nan[,rank=R]: after iteration f->step a parameter of rank R's network
 * becomes NaN. */
static tsr_err inject_nan(tsr_pinn_ctx *x, int64_t it) {
  const tsr_fault *f = x->opts.fault;
  if (!f || f->kind != TSR_FAULT_NAN || f->step != it || f->rank != x->rank ||
      !tsr_fault_armed())
    return TSR_OK;
  double *st = malloc(3 * x->nparam * sizeof *st);
  TSR_CHECK(st, TSR_ERR_MEMORY, "out of memory");
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st, st + x->nparam, st + 2 * x->nparam);
  st[x->nparam / 2] = NAN;
  if (!err)
    err = tsr_pinn_engine_set_state(x->eng, st, st + x->nparam, st + 2 * x->nparam, it);
  free(st);
  return err;
}

/* A signal or the wall time (solver/stop.h): *why set when training stops here, after the
 * checkpoint of iteration it is written (with L-BFGS's state during L-BFGS) and the command
 * that continues is printed. chunk_s: the last chunk's seconds. Collective: every rank gets the
 * same answer. */
static tsr_err stop_here(tsr_pinn_ctx *x, tsr_stop *st, int64_t it, double chunk_s, int *why) {
  tsr_stop_margin(st, x->ckpt_s / (x->ckpt_count ? x->ckpt_count : 1), 0.5, chunk_s);
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err err = tsr_stop_poll(st, 1, why);
  tsr_watchdog_waiting(0);
  TSR_CALL(err);
  if (!*why) return TSR_OK;
  const tsr_case *c = x->c;
  if (x->opts.write_output) TSR_CALL(checkpoint(x, it));
  if (x->rank != 0) return TSR_OK;
  fprintf(stderr, "tessera: stopped by %s after iteration %lld of %lld: %s\n",
          tsr_stop_reason(*why), (long long)it, (long long)x->total,
          !x->opts.write_output ? "no output is written in this run"
                                : "the checkpoint 'latest' names holds it");
  fprintf(stderr, "tessera: continue with the same launch and: tessera run %s", c->path);
  for (int i = 0; i < c->noverride; ++i) fprintf(stderr, " --set '%s'", c->overrides[i]);
  if (x->opts.out_dir) fprintf(stderr, " --out '%s'", x->opts.out_dir);
  fprintf(stderr, " --restart latest\n");
  return TSR_OK;
}

/* Whether iteration it is a log point (or the last, or forced). */
static int is_log(const tsr_pinn_ctx *x, int64_t it, int64_t total, int force) {
  return it % x->c->pinn.log_every == 0 || it == total || force;
}

/* The history row (and its log line) at a log point: row from gather_row. */
static tsr_err log_point(tsr_pinn_ctx *x, double *row, int64_t it, int64_t total,
                         tsr_progress *pg, int *warned, int force) {
  if (!is_log(x, it, total, force)) return TSR_OK;
  row[H_ITER] = (double)it;
  TSR_CALL(add_row(x, row));
  log_line(x, row, total, pg, (double)(it - x->it0) / (x->run_s + 1e-300));
  stall_warning(x, pg, warned);
  return TSR_OK;
}

/* A new L-BFGS for this rank's network (NULL where it does not train at it), with a restart's
 * state put back where it belongs to this phase (start). The restart's state is used once.
 * Collective (the error agreed). */
static tsr_err lbfgs_begin(tsr_pinn_ctx *x, int64_t it, int64_t start, tsr_pinn_lbfgs **out) {
  const tsr_case *c = x->c;
  *out = NULL;
  tsr_err err = TSR_OK;
  /* the points of the phase's first iteration's draw, as a restart has them */
  if (c->pinn.resample_every) err = set_draw(x, draw_at(x, it));
  /* the exchange when the neighbours train beside it (not a causal run's slab faces: their
   * values came once) */
  int xch = x->xch && (x->causal ? x->batch.peers.nspace_peer : x->batch.peers.npeer) > 0;
  if (!err && trains(x, it))
    err = tsr_pinn_lbfgs_create(x->eng, x->nparam, c->pinn.lbfgs_history, x->batch.nterm, xch,
                                out);
  if (!err && *out && x->lb_state && x->lb_start == start && x->lb_count >= 0) {
    size_t np = x->nparam, hm = (size_t)c->pinn.lbfgs_history;
    const double *q = x->lb_state;
    err = tsr_pinn_lbfgs_set(*out, q, q + np, q + np + hm * np, q + np + 2 * hm * np,
                             x->lb_count);
  }
  free(x->lb_state);
  x->lb_state = NULL;
  x->lb_start = -1;
  err = tsr_run_agree(x->comm, err);
  if (err) tsr_pinn_lbfgs_destroy(out);
  return err;
}

/* The L-BFGS phase [start, end) from iteration *pit in it: the ranks that train step their own
 * L-BFGS (with an exchange in lockstep, one exchange an iteration: solver/pinn/lbfgs.c), the
 * others (a causal run's other slabs) wait at each iteration's agreement. The phase ends early
 * when in one iteration no training rank's step lowers its loss. *pit: where it ended.
 * Checkpoints (with L-BFGS's state), signals and --walltime as in Adam's phase. Collective. */
static tsr_err lbfgs(tsr_pinn_ctx *x, int64_t *pit, int64_t start, int64_t end, tsr_progress *pg,
                     int *warned, tsr_stop *st, tsr_run_result *res) {
  const tsr_case *c = x->c;
  int64_t it = *pit;
  tsr_pinn_lbfgs *l = NULL;
  TSR_CALL(lbfgs_begin(x, it, start, &l));
  x->lb = l;
  x->lb_phase = start;
  double terms[TSR_PINN_MAX_TERMS], row[H_NCOL], step = 0.0;
  memcpy(terms, x->last_terms, sizeof terms);
  tsr_err err = TSR_OK;
  int64_t ce = c->output.checkpoint_every.steps;
  while (it < end && !err) {
    int done = 1;
    double t0 = MPI_Wtime();
    tsr_err local = l ? tsr_pinn_lbfgs_step(l, terms, &step, &done) : TSR_OK;
    if (l) x->train_s += MPI_Wtime() - t0;
    if (!local && l) local = check_finite(x, terms, 1, it);
    x->lb_done = done;
    x->lb_step = l ? step : NAN;
    /* every rank, also after a failure here: the error and the end are agreed */
    err = gather_row(x, terms, it + 1, is_log(x, it + 1, x->total, it + 1 == end), local, row);
    if (err) break;
    if (x->all_done) {
      char line[200];
      snprintf(line, sizeof line, "L-BFGS: no step lowers the loss%s at iteration %lld; %s",
               x->size > 1 ? " on any rank" : "", (long long)it,
               x->causal && active_slab(x, it) < x->nslab - 1 ? "the next slab starts"
                                                              : "training ends there");
      tsr_progress_line(pg, line);
      break;
    }
    ++it;
    tsr_watchdog_beat(it);
    res->loss = row[H_LOSS];
    tsr_progress_step(pg, it, row[H_LOSS], (double)(it - x->it0) / (x->run_s + 1e-300));
    err = log_point(x, row, it, x->total, pg, warned, it == end);
    if (!err && ce && (it % ce == 0 || it == end) && x->opts.write_output)
      err = checkpoint(x, it);
    if (!err) tsr_fault_after_step(x->opts.fault, x->rank, it, x->out_dir);
    if (!err) err = stop_here(x, st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  if (!err && !res->stopped && it < end) {
    /* ended early: the row of where it stopped, and its checkpoint (the phase's end) */
    if (!x->nrow || x->hist[(size_t)(x->nrow - 1) * H_NCOL] != (double)it) {
      x->lb_done = 1;
      err = gather_row(x, terms, it, 1, TSR_OK, row);
      if (!err) err = log_point(x, row, it, x->total, pg, warned, 1);
    }
    if (!err && ce && x->opts.write_output) err = checkpoint(x, it);
  }
  x->lb = NULL;
  x->lb_phase = -1;
  x->lb_done = 0;
  tsr_pinn_lbfgs_destroy(&l);
  *pit = it;
  return err;
}

/* A restart's iteration against this run's phases: where the checkpoint holds L-BFGS's state,
 * it must be of the L-BFGS phase the run is in there; without it, the run must be in Adam's
 * phase or at L-BFGS's start. */
static tsr_err check_restart_phase(const tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  TSR_CHECK(x->it0 <= x->total, TSR_ERR_INPUT, "the checkpoint is at iteration %lld, past this "
            "run's %lld iterations (pinn.adam.iterations%s + pinn.lbfgs.iterations); raise them "
            "to continue it", (long long)x->it0, (long long)x->total,
            x->causal ? " x the slabs" : "");
  if (x->it0 == x->total) return TSR_OK;
  tsr_pinn_phase p = phase_at(x, x->it0);
  TSR_CHECK(x->lb_start < 0 || (p.lbfgs && p.start == x->lb_start), TSR_ERR_INPUT,
            "the checkpoint is at iteration %lld, in the L-BFGS phase that began at iteration "
            "%lld, and this run %s; restart with the pinn.adam.iterations%s it was written with",
            (long long)x->it0, (long long)x->lb_start,
            p.lbfgs ? "began that phase elsewhere" : "is in Adam's phase there",
            x->causal ? " and pinn.lbfgs.iterations" : "");
  TSR_CHECK(x->lb_start >= 0 || !p.lbfgs || x->it0 == p.start, TSR_ERR_INPUT,
            "the checkpoint is at iteration %lld, past the %lld Adam iterations of its phase "
            "(pinn.adam.iterations), and holds no L-BFGS state; raise pinn.adam.iterations to "
            "continue it", (long long)x->it0, (long long)c->pinn.iterations);
  return TSR_OK;
}

static tsr_err loop(tsr_pinn_ctx *x, tsr_run_result *res) {
  const tsr_case *c = x->c;
  const int64_t total = x->total;
  TSR_CALL(check_restart_phase(x));
  tsr_stop st;
  TSR_CALL(tsr_stop_begin(&st, x->comm));
  tsr_progress pg;
  tsr_progress_init(&pg, x->opts.quiet || x->rank != 0 ? 3 : (int)c->output.progress, stdout,
                    total);
  pg.unit = "iteration";
  pg.per_s = "it/s";
  summary(x, &pg);
  int nt = x->batch.nterm, warned[TSR_PINN_NGROUP] = {0};
  double *rows = malloc((size_t)x->eo.hist_cap * nt * sizeof *rows);
  TSR_CHECK(rows, TSR_ERR_MEMORY, "out of memory for the loss history");
  tsr_err err = TSR_OK;
  double row[H_NCOL];
  int64_t it = x->it0, re = c->pinn.resample_every;
  res->loss = NAN;
  while (it < total && !err) {
    tsr_pinn_phase p = phase_at(x, it);
    if (p.lbfgs) {
      err = lbfgs(x, &it, p.start, p.end, &pg, warned, &st, res);
      if (err || res->stopped) break;
      if (it < p.end) { /* ended early: the next slab of a causal run starts, or the run ends */
        if (!x->causal || active_slab(x, it) == x->nslab - 1) break;
        it = p.end;
      }
      continue;
    }
    /* new points every resample_every iterations, and where Adam's phase follows L-BFGS's */
    if (re && it > x->it0 && (it % re == 0 || it == p.start))
      err = set_draw(x, draw_at(x, it));
    /* a causal run: slab k starts from slab k - 1's values at its face and its weights */
    if (!err && x->causal && it > 0 && it % x->slab_len == 0)
      err = handoff(x, (int)(it / x->slab_len), 1);
    int n = chunk(x, it, total);
    /* in a causal run only the active slab's ranks train; the others give their last terms */
    int runs = trains(x, it);
    double t0 = MPI_Wtime();
    if (!err && runs) err = tsr_pinn_engine_run(x->eng, n, rows);
    x->train_s += MPI_Wtime() - t0;
    if (err) break;
    it += n;
    tsr_watchdog_beat(it);
    err = gather_row(x, runs ? rows + (size_t)(n - 1) * nt : x->last_terms, it,
                     is_log(x, it, total, it == p.end),
                     runs ? check_finite(x, rows, n, it - n) : TSR_OK, row);
    if (err) break;
    res->loss = row[H_LOSS];
    tsr_progress_step(&pg, it, row[H_LOSS], (double)(it - x->it0) / (x->run_s + 1e-300));
    err = log_point(x, row, it, total, &pg, warned, it == p.end);
    int64_t ce = c->output.checkpoint_every.steps;
    /* at Adam's end too: from there L-BFGS runs the same again; without L-BFGS it is the end
     * of the run, whose weights final.h5 does not hold */
    if (!err && ce && (it % ce == 0 || it == p.end) && x->opts.write_output)
      err = checkpoint(x, it);
    if (!err) err = inject_nan(x, it);
    /* exit, corrupt (the checkpoint of it is on the disk: checkpoint() returns after rank 0's
     * write), signal, signal2: a rank lost as under the explicit method (tests/scripts/
     * pinn_ranks.sh, supervise) */
    if (!err) tsr_fault_after_step(x->opts.fault, x->rank, it, x->out_dir);
    if (!err) err = stop_here(x, &st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  tsr_stop_end(&st);
  tsr_progress_finish(&pg);
  free(rows);
  res->steps = it;
  return err;
}

static tsr_err profile(tsr_pinn_ctx *x) {
  const char *env = getenv("TSR_PINN_PROFILE");
  x->prof_n = env ? atoi(env) : 0;
  if (x->prof_n <= 0) return TSR_OK;
  double *st = malloc(3 * x->nparam * sizeof *st);
  TSR_CHECK(st, TSR_ERR_MEMORY, "out of memory");
  int64_t it = local_it(x, x->total);
  /* the phases of each rank's own iteration; with an exchange, the exchange alone before each
   * (every rank profiles as many iterations: the neighbours' calls match) */
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st, st + x->nparam, st + 2 * x->nparam);
  if (!err) err = tsr_pinn_engine_profile(x->eng, x->prof_n, x->prof);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, st, st + x->nparam, st + 2 * x->nparam, it);
  free(st);
  return tsr_run_agree(x->comm, err);
}

/* This rank's figures for report.json's subdomains, gathered on rank 0 (*all: size of them,
 * new, on rank 0). Collective. */
static tsr_err gather_subdomains(tsr_pinn_ctx *x, tsr_pinn_subdomain **all) {
  tsr_pinn_subdomain me;
  memset(&me, 0, sizeof me);
  me.nterm = x->batch.nterm;
  me.npts = x->batch.npts;
  for (int a = 0; a < 3; ++a) {
    me.box[a] = x->batch.box.lo[a];
    me.box[3 + a] = x->batch.box.hi[a];
  }
  for (int k = 0; k < me.nterm; ++k) {
    me.loss[k] = x->last_terms[k];
    me.count[k] = x->batch.term[k].count;
    memcpy(me.name[k], x->batch.name[k], sizeof me.name[k]);
  }
  me.slab = x->nslab > 1 ? x->sub.slab : 0;
  me.t0 = x->batch.t0;
  me.t1 = x->batch.t1;
  tsr_err err = tsr_pinn_engine_mismatch(x->eng, &me.mismatch);
  *all = x->rank == 0 ? calloc((size_t)x->size, sizeof **all) : NULL;
  if (!err && x->rank == 0 && !*all)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  TSR_CALL(tsr_run_agree(x->comm, err));
  MPI_Gather(&me, (int)sizeof me, MPI_BYTE, *all, (int)sizeof me, MPI_BYTE, 0, x->comm);
  return TSR_OK;
}

static tsr_err run(tsr_pinn_ctx *x, MPI_Comm comm, tsr_run_result *res) {
  double t0 = MPI_Wtime();
  int created = 0;
  tsr_err err = TSR_OK;
  if (x->opts.write_output) err = tsr_run_prepare_outdir(comm, x->out_dir, &created);
  if (!err) err = setup(x, comm);
  x->setup_s = MPI_Wtime() - t0;
  if (!err) err = loop(x, res);
  tsr_watchdog_stop(); /* it watches the training loop, where the ranks exchange */
  res->wall = x->run_s;
  res->first_step = x->it0;
  if (!err && !res->stopped) err = profile(x);
  if (!err) err = tsr_pinn_error(x, &res->rel_l2);
  if (!err && x->opts.write_output && x->nrow && !res->stopped) {
    err = gather_subdomains(x, &x->subs);
    if (!err) err = tsr_pinn_write_outputs(x, res);
  } else if (x->opts.write_output && x->nrow && x->eng) {
    /* what was trained stays on disk, also when the loss blew up or a signal came */
    tsr_err e2 = x->rank == 0 ? tsr_pinn_write_history(x) : TSR_OK;
    if (!err) err = tsr_run_agree(comm, e2);
  }
  return err;
}

tsr_err tsr_pinn_run(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts,
                     tsr_run_result *res) {
  memset(res, 0, sizeof *res);
  res->pinn = 1;
  res->rel_l2 = NAN;
  tsr_pinn_ctx x = {.c = c, .opts = opts ? *opts : tsr_run_opts_default(), .comm = comm,
                    .group = MPI_COMM_NULL, .lb_phase = -1, .lb_start = -1};
  MPI_Comm_rank(comm, &x.rank);
  MPI_Comm_size(comm, &x.size);
  x.out_dir = x.opts.out_dir ? x.opts.out_dir : c->output.dir;
  tsr_err err = run(&x, comm, res);
  tsr_pinn_iface_destroy(&x.xch);
  tsr_pinn_engine_destroy(&x.eng);
#ifdef TSR_HAVE_CUDA
  if (x.nccl) {
    ncclComm_t n = x.nccl;
    tsr_nccl_destroy(&n);
  }
#endif
  if (x.group != MPI_COMM_NULL) MPI_Comm_free(&x.group);
  tsr_pinn_batch_free(&x.batch);
  tsr_layout_free(&x.layout);
  free(x.subs);
  free(x.Xe);
  free(x.ue);
  free(x.lb_state);
  free(x.hist);
  return err;
}
