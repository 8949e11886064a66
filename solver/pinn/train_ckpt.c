/* PINN checkpoints and restarts: every rank's parameters, Adam's moments and (during L-BFGS)
 * L-BFGS's state, gathered on rank 0, which writes the file (io/pinn_state.h); a restart reads
 * it on rank 0 and scatters each rank its own, and checks the iteration against this run's
 * phases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/pinn_state.h"
#include "solver/pinn/lbfgs.h"
#include "solver/supervise.h"
#include "solver/watchdog.h"
#include "solver/pinn/train_impl.h"

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

/* The checkpoint of iteration it: every rank's parameters and moments (and during L-BFGS its
 * state) gathered on rank 0, which writes the file. Collective. */
tsr_err tsr_pinn_checkpoint(tsr_pinn_ctx *x, int64_t it) {
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

/* A checkpoint's L-BFGS state (st: rank 0's read) to each rank: x->lb_count its pairs (-1: not
 * in that phase) and x->lb_state theta (mine's, L-BFGS's double), s, y, rho, for the L-BFGS phase
 * (train_lbfgs.c) to put back. Collective. */
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
tsr_err tsr_pinn_restart(tsr_pinn_ctx *x) {
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
      err = tsr_pinn_add_row(x, row);
    }
    if (!err)
      err = tsr_pinn_engine_set_state(x->eng, mine, mine + np, mine + 2 * np,
                                      tsr_pinn_local_it(x, head[0]));
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

/* A restart's iteration against this run's phases: where the checkpoint holds L-BFGS's state,
 * it must be of the L-BFGS phase the run is in there; without it, the run must be in Adam's
 * phase or at L-BFGS's start. */
tsr_err tsr_pinn_check_restart_phase(const tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  TSR_CHECK(x->it0 <= x->total, TSR_ERR_INPUT, "the checkpoint is at iteration %lld, past this "
            "run's %lld iterations (pinn.adam.iterations%s + pinn.lbfgs.iterations); raise them "
            "to continue it", (long long)x->it0, (long long)x->total,
            x->causal ? " x the slabs" : "");
  if (x->it0 == x->total) return TSR_OK;
  tsr_pinn_phase p = tsr_pinn_phase_at(x, x->it0);
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
