/* The trainer's figures: the history rows (every rank's loss terms, error sums and mismatch
 * gathered once per chunk and summed in rank order, so every rank holds the same bits), the
 * relative error against exact, the progress lines and the stall warning. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/case_expr.h"
#include "solver/watchdog.h"
#include "solver/pinn/train_impl.h"

const char *const tsr_pinn_hist_names[H_NCOL] = {
    "iteration", "loss", "pde", "boundary", "initial", "error_l2", "lr", "seconds",
    "interface", "mismatch"};

/* The history column of each loss group. */
static const int group_col[TSR_PINN_NGROUP] = {H_PDE, H_BOUNDARY, H_INITIAL, H_INTERFACE};

/* The error's points: the grid's cell centres at `times` levels (cell centres of [0, end]), or
 * at once for a steady model; the exact solution there. */
tsr_err tsr_pinn_error_points(tsr_pinn_ctx *x) {
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
    tsr_err err = TSR_OK;
    for (int64_t p = 0; p < x->ne && !err; ++p) {
      const double *X = x->Xe + (size_t)nin * p;
      double t = x->batch.timed ? X[c->dim] : 0.0;
      const double at[3] = {X[0], c->dim > 1 ? X[1] : 0.0, c->dim > 2 ? X[2] : 0.0};
      double v = e ? tsr_expr_eval(e, at[0], at[1], at[2], t) : NAN;
      x->ue[k + c->ncomp * p] = v;
      /* NaN stands for a component without exact below: one of exact's would be skipped, and
       * the error computed over the other points (0 where none is left) */
      if (e && !isfinite(v)) err = tsr_case_nonfinite(c, &c->exact[k], v, at, x->batch.timed, t);
    }
    tsr_expr_destroy(&e);
    TSR_CALL(err);
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

tsr_err tsr_pinn_add_row(tsr_pinn_ctx *x, const double *row) {
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

/* What each rank contributes at the end of a chunk (tsr_pinn_gather_row). */
enum { A_GROUP = 0, A_TOTAL = A_GROUP + TSR_PINN_NGROUP, A_BAD, A_SE, A_SX, A_MISMATCH,
       A_SECONDS, A_DONE, A_STEP, A_N };

/* A term whose loss is not finite in any of the n rows: the stop's message. */
tsr_err tsr_pinn_check_finite(const tsr_pinn_ctx *x, const double *rows, int n, int64_t it) {
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
tsr_err tsr_pinn_gather_row(tsr_pinn_ctx *x, const double *terms, int64_t it, int is_log,
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
  tsr_err ge = allgather(mine, v, A_N, x->comm, x->causal && !tsr_pinn_trains(x, it - 1));
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
  int a = tsr_pinn_active_slab(x, it - 1);
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

void tsr_pinn_summary(const tsr_pinn_ctx *x, tsr_progress *pg) {
  char line[640];
  /* the GPU's path: a run slower than expected may have fallen back from the layers kernels */
  const char *path = tsr_pinn_engine_net_path(x->eng);
  const char *by = !strcmp(path, "host") ? "BLAS" : !strcmp(path, "cublas") ? "cuBLAS"
                   : !strcmp(path, "layers") ? "the layers kernels" : "the fused kernels";
  int n = snprintf(line, sizeof line, "pinn: %s on %s, %s precision: network %d x %d %s, %zu "
                   "parameters, passes by %s; points", tsr_models[x->c->model].name,
                   x->device ? "the GPU" : "the host",
                   x->eo.single ? "single" : "double", x->shape.depth, x->shape.width,
                   x->shape.act == TSR_NET_SIN ? "sin" : "tanh", x->nparam,
                   by);
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

/* Whether iteration it is a log point (or the last, or forced). */
int tsr_pinn_is_log(const tsr_pinn_ctx *x, int64_t it, int64_t total, int force) {
  return it % x->c->pinn.log_every == 0 || it == total || force;
}

/* The history row (and its log line) at a log point: row from tsr_pinn_gather_row. */
tsr_err tsr_pinn_log_point(tsr_pinn_ctx *x, double *row, int64_t it, int64_t total,
                           tsr_progress *pg, int *warned, int force) {
  if (!tsr_pinn_is_log(x, it, total, force)) return TSR_OK;
  row[H_ITER] = (double)it;
  TSR_CALL(tsr_pinn_add_row(x, row));
  log_line(x, row, total, pg, (double)(it - x->it0) / (x->run_s + 1e-300));
  stall_warning(x, pg, warned);
  return TSR_OK;
}
