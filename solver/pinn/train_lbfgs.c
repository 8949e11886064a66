/* An L-BFGS phase of the trainer (after Adam's, or a causal slab's): every rank that trains runs
 * its own L-BFGS (solver/pinn/lbfgs.h) on its own network, one exchange an iteration, and the
 * ranks agree after each iteration on its row, on the end (no step lowers any loss), on
 * checkpoints and stops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/fault.h"
#include "solver/pinn/lbfgs.h"
#include "solver/watchdog.h"
#include "solver/pinn/train_impl.h"

/* FNV-1a over the bytes of n doubles. */
static uint64_t digest(const double *v, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const unsigned char *b = (const unsigned char *)v;
  for (size_t i = 0; i < n * sizeof *v; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

/* TSR_PINN_TRACE=1: one line on stderr per rank and L-BFGS iteration (and one where a restart's
 * state is put back, "begin"): the loss terms and the step in full, and digests of L-BFGS's
 * parameters, of its pairs, and of the interface values last sent and received, so two runs
 * that should agree (a restart against the straight run) show where they part first: a
 * different received value with the same parameters is the exchange, different terms with the
 * same inputs the engine (tests/gpu/pinn_lbfgs_gpu.sh prints the first such line). buf: room for
 * L-BFGS's state. */
static void trace(tsr_pinn_ctx *x, tsr_pinn_lbfgs *l, int64_t it, const char *what,
                  const double *terms, double step, int done, double *buf) {
  if (!l || !buf) return;
  size_t np = x->nparam, hm = (size_t)x->c->pinn.lbfgs_history, nx = 0;
  int cnt = 0;
  tsr_pinn_lbfgs_get(l, buf, buf + np, buf + np + hm * np, buf + np + 2 * hm * np, &cnt);
  const double *S = NULL, *N = NULL;
  if (tsr_pinn_engine_iface_host(x->eng, &S, &N, &nx)) S = N = NULL;
  char line[1024];
  int n = snprintf(line, sizeof line, "pinn-trace lbfgs %s it=%lld rank=%d terms=", what,
                   (long long)it, x->rank);
  for (int k = 0; k < x->batch.nterm && n < (int)sizeof line; ++k)
    n += snprintf(line + n, sizeof line - n, "%s%.17g", k ? "," : "", terms ? terms[k] : NAN);
  if (n < (int)sizeof line)
    snprintf(line + n, sizeof line - n, " step=%.17g done=%d pairs=%d theta=%016llx "
             "state=%016llx sent=%016llx recv=%016llx\n", step, done, cnt,
             (unsigned long long)digest(buf, np),
             (unsigned long long)digest(buf + np, 2 * hm * np + hm),
             (unsigned long long)(S ? digest(S, nx) : 0),
             (unsigned long long)(N ? digest(N, nx) : 0));
  fputs(line, stderr);
  fflush(stderr);
}

/* A new L-BFGS for this rank's network (NULL where it does not train at it), with a restart's
 * state put back where it belongs to this phase (start). The restart's state is used once.
 * Collective (the error agreed). */
static tsr_err lbfgs_begin(tsr_pinn_ctx *x, int64_t it, int64_t start, tsr_pinn_lbfgs **out) {
  const tsr_case *c = x->c;
  *out = NULL;
  tsr_err err = TSR_OK;
  /* the points of the phase's first iteration's draw, as a restart has them */
  if (c->pinn.resample_every) err = tsr_pinn_set_draw(x, tsr_pinn_draw_at(x, it));
  /* the exchange when the neighbours train beside it (not a causal run's slab faces: their
   * values came once) */
  int xch = x->xch && (x->causal ? x->batch.peers.nspace_peer : x->batch.peers.npeer) > 0;
  if (!err && tsr_pinn_trains(x, it))
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
tsr_err tsr_pinn_lbfgs_phase(tsr_pinn_ctx *x, int64_t *pit, int64_t start, int64_t end,
                             tsr_progress *pg, int *warned, tsr_stop *st, tsr_run_result *res) {
  const tsr_case *c = x->c;
  int64_t it = *pit;
  tsr_pinn_lbfgs *l = NULL;
  TSR_CALL(lbfgs_begin(x, it, start, &l));
  x->lb = l;
  x->lb_phase = start;
  double terms[TSR_PINN_MAX_TERMS], row[H_NCOL], step = 0.0;
  memcpy(terms, x->last_terms, sizeof terms);
  const char *tr = getenv("TSR_PINN_TRACE");
  double *tbuf = tr && tr[0] == '1' && l
                     ? malloc((x->nparam * (1 + 2 * (size_t)c->pinn.lbfgs_history) +
                               (size_t)c->pinn.lbfgs_history) * sizeof *tbuf)
                     : NULL;
  if (it > start) trace(x, l, it, "begin", NULL, NAN, 0, tbuf);
  tsr_err err = TSR_OK;
  int64_t ce = c->output.checkpoint_every.steps;
  while (it < end && !err) {
    int done = 1;
    double t0 = MPI_Wtime();
    tsr_err local = l ? tsr_pinn_lbfgs_step(l, terms, &step, &done) : TSR_OK;
    if (l) x->train_s += MPI_Wtime() - t0;
    if (!local && l) local = tsr_pinn_check_finite(x, terms, 1, it);
    x->lb_done = done;
    x->lb_step = l ? step : NAN;
    if (!local) trace(x, l, it + 1, "step", terms, step, done, tbuf);
    /* every rank, also after a failure here: the error and the end are agreed */
    err = tsr_pinn_gather_row(x, terms, it + 1,
                              tsr_pinn_is_log(x, it + 1, x->total, it + 1 == end), local, row);
    if (err) break;
    if (x->all_done) {
      char line[200];
      snprintf(line, sizeof line, "L-BFGS: no step lowers the loss%s at iteration %lld; %s",
               x->size > 1 ? " on any rank" : "", (long long)it,
               x->causal && tsr_pinn_active_slab(x, it) < x->nslab - 1 ? "the next slab starts"
                                                              : "training ends there");
      tsr_progress_line(pg, line);
      break;
    }
    ++it;
    tsr_watchdog_beat(it);
    res->loss = row[H_LOSS];
    tsr_progress_step(pg, it, row[H_LOSS], (double)(it - x->it0) / (x->run_s + 1e-300));
    err = tsr_pinn_log_point(x, row, it, x->total, pg, warned, it == end);
    if (!err && ce && (it % ce == 0 || it == end) && x->opts.write_output)
      err = tsr_pinn_checkpoint(x, it);
    if (!err) tsr_fault_after_step(x->opts.fault, x->rank, it, x->out_dir);
    if (!err) err = tsr_pinn_stop_here(x, st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  if (!err && !res->stopped && it < end) {
    /* ended early: the row of where it stopped, and its checkpoint (the phase's end) */
    if (!x->nrow || x->hist[(size_t)(x->nrow - 1) * H_NCOL] != (double)it) {
      x->lb_done = 1;
      err = tsr_pinn_gather_row(x, terms, it, 1, TSR_OK, row);
      if (!err) err = tsr_pinn_log_point(x, row, it, x->total, pg, warned, 1);
    }
    if (!err && ce && x->opts.write_output) err = tsr_pinn_checkpoint(x, it);
  }
  free(tbuf);
  x->lb = NULL;
  x->lb_phase = -1;
  x->lb_done = 0;
  tsr_pinn_lbfgs_destroy(&l);
  *pit = it;
  return err;
}
