/* The training loop: Adam's iterations in chunks between log points, checkpoints, redraws and
 * faults (the engine runs a chunk; the ranks agree at its end), the L-BFGS phases handed to
 * train_lbfgs.c, causal slabs started by their handoff, and the stops (signals, --walltime, a
 * non-finite loss). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "solver/fault.h"
#include "solver/run.h"
#include "solver/watchdog.h"
#include "solver/pinn/train_impl.h"

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
  int64_t end = tsr_pinn_phase_at(x, it).end;
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
tsr_err tsr_pinn_stop_here(tsr_pinn_ctx *x, tsr_stop *st, int64_t it, double chunk_s, int *why) {
  tsr_stop_margin(st, x->ckpt_s / (x->ckpt_count ? x->ckpt_count : 1), 0.5, chunk_s);
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err err = tsr_stop_poll(st, 1, why);
  tsr_watchdog_waiting(0);
  TSR_CALL(err);
  if (!*why) return TSR_OK;
  const tsr_case *c = x->c;
  if (x->opts.write_output) TSR_CALL(tsr_pinn_checkpoint(x, it));
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

tsr_err tsr_pinn_loop(tsr_pinn_ctx *x, tsr_run_result *res) {
  const tsr_case *c = x->c;
  const int64_t total = x->total;
  tsr_stop st;
  TSR_CALL(tsr_stop_begin(&st, x->comm));
  tsr_progress pg;
  tsr_progress_init(&pg, x->opts.quiet || x->rank != 0 ? 3 : (int)c->output.progress, stdout,
                    total);
  pg.unit = "iteration";
  pg.per_s = "it/s";
  tsr_pinn_summary(x, &pg);
  int nt = x->batch.nterm, warned[TSR_PINN_NGROUP] = {0};
  double *rows = malloc((size_t)x->eo.hist_cap * nt * sizeof *rows);
  TSR_CHECK(rows, TSR_ERR_MEMORY, "out of memory for the loss history");
  tsr_err err = TSR_OK;
  double row[H_NCOL];
  int64_t it = x->it0, re = c->pinn.resample_every;
  res->loss = NAN;
  while (it < total && !err) {
    tsr_pinn_phase p = tsr_pinn_phase_at(x, it);
    if (p.lbfgs) {
      err = tsr_pinn_lbfgs_phase(x, &it, p.start, p.end, &pg, warned, &st, res);
      if (err || res->stopped) break;
      if (it < p.end) { /* ended early: the next slab of a causal run starts, or the run ends */
        if (!x->causal || tsr_pinn_active_slab(x, it) == x->nslab - 1) break;
        it = p.end;
      }
      continue;
    }
    /* new points every resample_every iterations, and where Adam's phase follows L-BFGS's */
    /* agreed: a draw can fail on one rank (a target not finite at one of its new points), and
     * the others would wait in the next iteration's exchange until the watchdog fired */
    if (re && it > x->it0 && (it % re == 0 || it == p.start))
      err = tsr_run_agree(x->comm, tsr_pinn_set_draw(x, tsr_pinn_draw_at(x, it)));
    /* a causal run: slab k starts from slab k - 1's values at its face and its weights */
    if (!err && x->causal && it > 0 && it % x->slab_len == 0)
      err = tsr_pinn_handoff(x, (int)(it / x->slab_len), 1);
    int n = chunk(x, it, total);
    /* in a causal run only the active slab's ranks train; the others give their last terms */
    int runs = tsr_pinn_trains(x, it);
    double t0 = MPI_Wtime();
    if (!err && runs) err = tsr_pinn_engine_run(x->eng, n, rows);
    x->train_s += MPI_Wtime() - t0;
    if (err) break;
    it += n;
    tsr_watchdog_beat(it);
    err = tsr_pinn_gather_row(x, runs ? rows + (size_t)(n - 1) * nt : x->last_terms, it,
                              tsr_pinn_is_log(x, it, total, it == p.end),
                              runs ? tsr_pinn_check_finite(x, rows, n, it - n) : TSR_OK, row);
    if (err) break;
    res->loss = row[H_LOSS];
    tsr_progress_step(&pg, it, row[H_LOSS], (double)(it - x->it0) / (x->run_s + 1e-300));
    err = tsr_pinn_log_point(x, row, it, total, &pg, warned, it == p.end);
    int64_t ce = c->output.checkpoint_every.steps;
    /* at Adam's end too: from there L-BFGS runs the same again; without L-BFGS it is the end
     * of the run, whose weights final.h5 does not hold */
    if (!err && ce && (it % ce == 0 || it == p.end) && x->opts.write_output)
      err = tsr_pinn_checkpoint(x, it);
    if (!err) err = inject_nan(x, it);
    /* exit, corrupt (the checkpoint of it is on the disk: tsr_pinn_checkpoint returns after
     * rank 0's write), signal, signal2: a rank lost as under the explicit method (tests/scripts/
     * pinn_ranks.sh, supervise) */
    if (!err) tsr_fault_after_step(x->opts.fault, x->rank, it, x->out_dir);
    if (!err) err = tsr_pinn_stop_here(x, &st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  tsr_stop_end(&st);
  tsr_progress_finish(&pg);
  free(rows);
  res->steps = it;
  return err;
}
