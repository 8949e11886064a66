/* Parareal over time slices (parareal.h). */
#define _POSIX_C_SOURCE 200809L
#include "solver/parareal/parareal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/parareal/batch.h"
#include "solver/parareal/coarse.h"
#include "solver/parareal/graphs.h"
#include "solver/parareal/ops.h"
#include "solver/parareal/parareal_impl.h"
#include "solver/explicit.h"
#include "solver/method.h"
#include "solver/run_internal.h"
#include "solver/schedule.h"
#include "solver/stop.h"
#include "solver/watchdog.h"

/* ---- the propagators ------------------------------------------------------------------------- */

/* fine_solves with the slices in batches (batch.h): every slice due at once. */
static tsr_err fine_batched(pr *p) {
  const int m = p->m;
  int *act = malloc(sizeof *act * (size_t)m);
  int64_t *steps = malloc(sizeof *steps * (size_t)m);
  tsr_field **in = malloc(sizeof *in * (size_t)m), **out = malloc(sizeof *out * (size_t)m);
  tsr_err err = act && steps && in && out ? TSR_OK
                : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  int na = 0;
  for (int j = 0; j < m && !err; ++j) {
    if (p->fresh[j]) continue;
    act[na] = j;
    steps[na] = p->step_of[p->s0 + j + 1] - p->step_of[p->s0 + j];
    in[na] = p->in[j];
    out[na++] = p->fv[j];
  }
  if (!err) err = tsr_pr_batch_solve(p->batch, na, act, steps, in, out);
  free(act), free(steps), free(in), free(out);
  return err;
}

/* fv[j] = F(in[j]) for the slices whose inputs changed since their last fine solve: the
 * case's own steps of slice s0 + j at the serial run's times. With a context per slice the
 * slices' steps are issued in turn, a graph launch (or a step) of each at a time, so that the
 * GPU runs the slices together; in batches where they apply (batch.h).
 *
 * A stop (halt.c) is polled before the first step and every h.every steps (at most 16, or a
 * graph launch of each slice, apart); once the group stops, no step more is issued, those
 * issued run to their end (the streams are left idle, the slots as any step leaves them: the
 * next use of a context starts with tsr_pr_graph_begin, and a capture is always whole, begun
 * and ended within one issue), fv[] is not written and no slice is marked fresh. On the GPU the
 * poll is on the host, which issues launches ahead of the device: what was queued still runs.
 * The batched solve (tsr_pr_batch_solve) issues every slice's steps at once and waits for
 * them, so it is not interrupted: a stop during it is acted on after it. */
static tsr_err fine_solves(pr *p) {
  double t0 = MPI_Wtime();
  const int m = p->m;
  /* a stop that came since the last iteration's fine solves: none of this one's steps run */
  tsr_err err = tsr_pr_halt_poll(p, 1);
  if (!err && p->batch) {
    err = p->fx[0].be->sync(&p->fx[0]);
    if (!err && !p->h.why) err = fine_batched(p);
    for (int j = 0; j < m && !err && !p->h.why; ++j) p->fresh[j] = 1;
    p->t_iter[T_FINE] += MPI_Wtime() - t0;
    tsr_pr_halt_settle(p);
    return err;
  }
  if (!err) err = p->fx[0].be->sync(&p->fx[0]); /* the inputs were written on its stream */
  int64_t *done = calloc((size_t)m, sizeof *done), since = 0;
  if (!err && !done) err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  for (int j = 0; j < m && !err && !p->h.why; ++j) {
    if (p->fresh[j]) continue;
    const int i = p->nctx > 1 ? j : 0, s = p->s0 + j;
    tsr_run_ctx *x = &p->fx[i];
    err = tsr_pr_graph_begin(p->g[i], x, p->step_of[s]);
    if (!err) err = tsr_parareal_copy(x, x->slot[TSR_SLOT_U], p->in[j]);
    const int64_t n = p->step_of[s + 1] - p->step_of[s];
    while (p->nctx == 1 && !err && !p->h.why && done[j] < n) {
      int64_t k;
      err = tsr_pr_graph_issue(p->g[0], x, p->step_of[s] + done[j], n - done[j], &k);
      done[j] += k;
      if (!err) err = tsr_pr_halt_steps(p, k, &since);
    }
    if (p->nctx == 1 && !err && !p->h.why)
      err = tsr_parareal_copy(x, p->fv[j], x->slot[TSR_SLOT_U]);
    if (p->nctx == 1 && !err) err = x->be->sync(x);
  }
  for (int busy = p->nctx > 1; busy && !err && !p->h.why;) {
    busy = 0;
    int64_t most = 0; /* a round: one launch of each slice */
    for (int j = 0; j < m && !err; ++j) {
      const int s = p->s0 + j;
      const int64_t n = p->step_of[s + 1] - p->step_of[s];
      if (p->fresh[j] || done[j] >= n) continue;
      int64_t k;
      err = tsr_pr_graph_issue(p->g[j], &p->fx[j], p->step_of[s] + done[j], n - done[j], &k);
      done[j] += k;
      most = k > most ? k : most;
      busy = 1;
    }
    if (!err) err = tsr_pr_halt_steps(p, most, &since);
  }
  for (int j = 0; p->nctx > 1 && j < m && !err && !p->h.why; ++j)
    if (!p->fresh[j]) err = tsr_parareal_copy(&p->fx[j], p->fv[j], p->fx[j].slot[TSR_SLOT_U]);
  for (int j = 0; p->nctx > 1 && j < m && !err; ++j)
    if (!p->fresh[j]) err = p->fx[j].be->sync(&p->fx[j]);
  free(done);
  tsr_pr_halt_settle(p);
  TSR_CALL(err);
  for (int j = 0; j < m && !p->h.why; ++j) p->fresh[j] = 1;
  p->t_iter[T_FINE] += MPI_Wtime() - t0;
  return TSR_OK;
}

/* gnew = G(in[j]): restricted, stepped on the coarse grid over slice s0 + j, prolonged. */
tsr_err tsr_pr_coarse_solve(pr *p, int j) {
  tsr_run_ctx *x = &p->fx[0], *y = &p->coarse;
  const int s = p->s0 + j;
  double t0 = MPI_Wtime();
  TSR_CALL(x->be->sync(x)); /* in[j] is written on the fine run's stream */
  const double ts = (double)p->step_of[s] * x->dt, te = (double)p->step_of[s + 1] * x->dt;
  if (p->cblock) {
    TSR_CALL(tsr_parareal_restrict(y, p->r, p->in[j], y->slot[TSR_SLOT_U]));
    y->dt = y->desc.dt = p->cdt[s];
    TSR_CALL(tsr_pr_coarse_block_advance(y, p->cn[s]));
  } else if (p->gc) { /* equal slices: coarse step k of slice s is step s cn + k of one dt */
    const int64_t first = s * p->cn[0];
    TSR_CALL(tsr_pr_graph_begin(p->gc, y, first));
    TSR_CALL(tsr_parareal_restrict(y, p->r, p->in[j], y->slot[TSR_SLOT_U]));
    for (int64_t done = 0, k; done < p->cn[0]; done += k)
      TSR_CALL(tsr_pr_graph_issue(p->gc, y, first + done, p->cn[0] - done, &k));
  } else {
    TSR_CALL(tsr_parareal_restrict(y, p->r, p->in[j], y->slot[TSR_SLOT_U]));
    y->dt = y->desc.dt = p->cdt[s];
    TSR_CALL(tsr_explicit_advance(y, 0, p->cn[s], ts));
  }
  /* the coarse ghosts the prolongation reads: the boundary at the slice's end, the peers' */
  tsr_field *u = y->slot[TSR_SLOT_U];
  TSR_CALL(y->be->boundary(y, u, te, TSR_BC_WHOLE));
  TSR_CALL(y->be->halo_begin(y, u));
  TSR_CALL(y->be->halo_end(y, u));
  TSR_CALL(y->be->sync(y));
  TSR_CALL(tsr_parareal_prolong(x, p->r, u, p->gnew));
  p->t_iter[T_COARSE] += MPI_Wtime() - t0;
  return TSR_OK;
}

/* ---- between groups ------------------------------------------------------------------------ */

/* The group's end state (and its change this iteration) to the same space rank of the next
 * group; the send completes in the background (link.h). */
static tsr_err send_end(pr *p, double change) {
  if (last_group(p)) return TSR_OK;
  double t0 = MPI_Wtime();
  TSR_CALL(tsr_pr_link_send(p->link, p->in[p->m], change));
  p->t_iter[T_COMM] += MPI_Wtime() - t0;
  return TSR_OK;
}

/* in[0] from the previous group; *change: how much it changed (its sender's figure). */
static tsr_err recv_start(pr *p, double *change) {
  double t0 = MPI_Wtime();
  TSR_CALL(tsr_pr_link_recv(p->link, p->in[0], change));
  p->t_iter[T_COMM] += MPI_Wtime() - t0;
  return TSR_OK;
}

/* ---- the iterations ------------------------------------------------------------------------ */

/* Iteration 0: the coarse sweep from the initial state alone. */
static tsr_err sweep0(pr *p) {
  double ch = 0.0;
  if (p->group == 0) {
    TSR_CALL(tsr_run_initial(&p->fx[0]));
    TSR_CALL(tsr_parareal_copy(&p->fx[0], p->in[0], p->fx[0].slot[TSR_SLOT_U]));
  } else {
    TSR_CALL(recv_start(p, &ch));
  }
  for (int j = 0; j < p->m; ++j) {
    TSR_CALL(tsr_pr_coarse_solve(p, j));
    tsr_field *t = p->gold[j];
    p->gold[j] = p->gnew;
    p->gnew = t;
    TSR_CALL(tsr_parareal_copy(&p->fx[0], p->in[j + 1], p->gold[j]));
    p->fresh[j] = 0;
  }
  TSR_CALL(p->fx[0].be->sync(&p->fx[0]));
  return send_end(p, 1.0);
}

/* The change a group sends on in an iteration that is dropped (no change is negative). */
#define DROPPED (-1.0)

/* Iteration k >= 1: the fine solves whose inputs changed, then the sweep with the correction.
 * Every decision below is taken from figures reduced over the group, so its ranks agree. A
 * group whose fine solves stopped (halt.c), or whose predecessor's did, computes no more: it
 * still receives and sends on (so that no group waits for it), and the gather drops the
 * iteration, in[] back as keep[] holds it. */
static tsr_err sweep(pr *p) {
  TSR_CALL(tsr_pr_keep(p));
  TSR_CALL(fine_solves(p));
  double ch = 0.0;
  if (p->group > 0) TSR_CALL(recv_start(p, &ch));
  if (p->h.why || ch < 0.0) return send_end(p, DROPPED);
  int changed = ch != 0.0;
  if (changed) p->fresh[0] = 0;
  for (int j = 0; j < p->m; ++j) {
    if (changed) {
      TSR_CALL(tsr_pr_coarse_solve(p, j));
    } else { /* G of an unchanged input is gold, bit for bit: the correction adds nothing */
      TSR_CALL(tsr_parareal_copy(&p->fx[0], p->gnew, p->gold[j]));
    }
    double t0 = MPI_Wtime(), mine[2];
    TSR_CALL(tsr_parareal_correct(&p->fx[0], p->fv[j], p->gnew, p->gold[j], p->in[j + 1],
                                  p->scratch, mine));
    tsr_field *t = p->gold[j];
    p->gold[j] = p->gnew;
    p->gnew = t;
    MPI_Allreduce(mine, p->chg + 2 * j, 2, MPI_DOUBLE, MPI_MAX, p->slice);
    p->t_iter[T_COARSE] += MPI_Wtime() - t0;
    changed = p->chg[2 * j] != 0.0;
    if (changed && j + 1 < p->m) p->fresh[j + 1] = 0;
  }
  return send_end(p, p->chg[2 * (p->m - 1)]);
}

/* Shares every slice's change and the iteration's times; decides whether to go on. *stop_why:
 * a signal's number or TSR_STOP_WALLTIME (solver/stop.h), else 0; *dropped: some group's fine
 * solves stopped, so iteration k did not end: it is not counted, its figures mean nothing. */
static tsr_err gather(pr *p, int k, int *stop_why, int *dropped) {
  const int m = p->m, P = p->P, w = 2 * m + 2; /* a rank's row: changes, stop, fine solves cut */
  double *mine = malloc(sizeof(double) * (size_t)w);
  double *all = malloc(sizeof(double) * (size_t)w * (size_t)p->size);
  double *h = realloc(p->hist, sizeof(double) * ((size_t)P + T_COUNT) * (size_t)(k + 1));
  if (!mine || !all || !h) {
    free(mine), free(all);
    if (h) p->hist = h;
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for parareal's history");
  }
  p->hist = h;
  memcpy(mine, p->chg, sizeof(double) * 2 * (size_t)m);
  mine[2 * m] = (double)(p->h.why ? p->h.why : tsr_stop_signal());
  mine[2 * m + 1] = p->h.why != 0;
  /* the wall time: stop when another iteration (as long as the longest so far) and its
   * checkpoint might not fit */
  const double wt = tsr_stop_walltime(), last = MPI_Wtime() - p->iter_start;
  if (last > p->iter_longest && !p->h.why) p->iter_longest = last;
  p->iter_start = MPI_Wtime();
  if (!mine[2 * m] && wt > 0.0 && tsr_stop_elapsed() + 2.0 * p->iter_longest + 1.0 > wt)
    mine[2 * m] = (double)TSR_STOP_WALLTIME;
  double t0 = MPI_Wtime();
  MPI_Allgather(mine, w, MPI_DOUBLE, all, w, MPI_DOUBLE, p->world);
  p->t_iter[T_COMM] += MPI_Wtime() - t0;
  double tmax[T_COUNT];
  MPI_Allreduce(p->t_iter, tmax, T_COUNT, MPI_DOUBLE, MPI_MAX, p->world);
  int sig = 0;
  *dropped = 0;
  for (int r = 0; r < p->size; ++r) { /* a signal's number over the wall time's -1 */
    const double *a = all + (size_t)r * (size_t)w;
    if (a[2 * m] != 0.0 && sig <= 0) sig = (int)a[2 * m];
    if (a[2 * m + 1] != 0.0) *dropped = 1;
  }
  *stop_why = sig;
  for (int q = 0; q < T_COUNT; ++q) p->t_iter[q] = 0.0;
  if (*dropped) {
    tsr_err err = tsr_pr_halt_drain(p, all, w, 2 * m + 1);
    free(mine), free(all);
    return err;
  }
  double *row = p->hist + (size_t)(k - 1) * (size_t)(P + T_COUNT);
  double worst = 0.0;
  for (int g = 0; g < p->ngroup; ++g) { /* the group's space rank 0 holds its reduced figures */
    const double *a = all + (size_t)g * (size_t)p->nspace * (size_t)w;
    for (int j = 0; j < m; ++j) {
      const double d = a[2 * j], u = a[2 * j + 1];
      const double rel = u > 0.0 ? d / u : d;
      row[g * m + j] = rel;
      worst = rel <= worst ? worst : (isnan(rel) ? INFINITY : rel);
    }
  }
  for (int q = 0; q < T_COUNT; ++q) {
    row[P + q] = tmax[q];
    p->t[q] += tmax[q];
  }
  free(mine), free(all);
  p->nhist = k;
  p->iterations = k;
  if (!isfinite(worst)) { /* a boundary value or source that is not finite at the start or end
                            of a slice that went wrong is the case's, not the step's; every
                            group's rank covers the same box, so each looks at every such
                            slice */
    tsr_err bad = TSR_OK;
    for (int n = 0; n < P && !bad; ++n)
      if (!isfinite(row[n]))
        for (int e = 0; e < 2 && !bad; ++e)
          bad = tsr_run_expressions_finite(&p->fx[0], 0, (double)p->step_of[n + e] * p->fx[0].dt);
    TSR_CALL(tsr_run_agree(p->world, bad));
  }
  TSR_CHECK(isfinite(worst), TSR_ERR_INPUT,
            "%s: parareal: a slice's state became non-finite at iteration %d (fine dt %g, "
            "stable limit %g; coarse dt up to %g, limit %g): lower time.cfl, "
            "parareal.coarse_cfl or parareal.coarse_dt", p->c->path, k, p->fx[0].dt,
            p->fx[0].dt_stable, p->dtc_max, p->limit);
  p->converged = worst < p->c->parareal.tol;
  return TSR_OK;
}

/* The parareal model's speedup over the serial run from the measured costs: P fine slices in
 * a row against K iterations of a group's m fine solves plus K + 1 coarse sweeps through all
 * P slices. f and g are a slice's fine and coarse cost, from the slowest rank's times (the
 * first sweep's coarse time is counted in iteration 1's). Where the slices of a rank share its
 * GPU, f is the concurrent time over m, far below what one slice stepping alone costs: the
 * serial run's cost is then the fine steps times the measured serial step (serial_probe). */
static double predicted(const pr *p) {
  const double K = p->iterations;
  if (K < 1) return 0.0;
  const double f = p->t[T_FINE] / (K * p->m), g = p->t[T_COARSE] / ((K + 1.0) * p->m);
  const double cost = K * p->m * f + (K + 1.0) * p->P * g;
  const double serial =
      p->t_step > 0.0 ? (double)(p->step_of[p->P] - p->step_of[0]) * p->t_step : p->P * f;
  return cost > 0.0 ? serial / cost : 0.0;
}

/* p->t_step where the slices of a rank share its GPU (a context each): one context steps
 * alone from the initial state, as the serial run does (its CUDA graphs, its kernels); the
 * slowest rank's time. Not timed: the first plain step (16 ms on an H100: what steps keep is
 * allocated), the graph's capture and first launch, then launches for 10 ms, in which the
 * GPU's clocks rise from idle; then about 10 ms of steps are. Steps past the slice's end are
 * only timed, never kept: the first sweep starts the context over. */
static tsr_err serial_probe(pr *p) {
  double t = 0.0;
  tsr_run_ctx *x = &p->fx[0];
  const int64_t first = p->step_of[p->s0], far = INT64_C(1) << 40, most = 4096;
  tsr_err err = TSR_OK;
  if (p->nctx > 1) {
    err = tsr_pr_graph_begin(p->g[0], x, first);
    if (!err) err = tsr_run_initial(x);
    int64_t done = 0, k = 0;
    while (!err && done < 1 + GRAPH_CHUNK) {
      err = tsr_pr_graph_issue(p->g[0], x, first + done, far - done, &k);
      done += k;
    }
    if (!err) err = x->be->sync(x);
    double t0 = MPI_Wtime(), warm = 0.0;
    int64_t from = done;
    while (!err && warm < 0.01 && done - from < most) {
      err = tsr_pr_graph_issue(p->g[0], x, first + done, far - done, &k);
      done += k;
      if (!err) err = x->be->sync(x);
      warm = MPI_Wtime() - t0;
    }
    const double per = done > from ? warm / (double)(done - from) : 0.0;
    int64_t want = per > 0.0 ? (int64_t)(0.01 / per) : most;
    want = want < 2 * GRAPH_CHUNK ? 2 * GRAPH_CHUNK : (want > most ? most : want);
    t0 = MPI_Wtime();
    from = done;
    while (!err && done - from < want) {
      err = tsr_pr_graph_issue(p->g[0], x, first + done, far - done, &k);
      done += k;
    }
    if (!err) err = x->be->sync(x);
    if (!err) t = (MPI_Wtime() - t0) / (double)(done - from);
  }
  TSR_CALL(tsr_run_agree(p->world, err));
  MPI_Allreduce(&t, &p->t_step, 1, MPI_DOUBLE, MPI_MAX, p->world);
  return TSR_OK;
}

static void say_iteration(pr *p, int k, double wall) {
  if (p->rank != 0 || p->fx[0].opts.quiet) return;
  const double *row = p->hist + (size_t)(k - 1) * (size_t)(p->P + T_COUNT);
  int at = 0;
  for (int n = 0; n < p->P; ++n)
    if (row[n] > row[at]) at = n;
  /* after k iterations the first k slices are the serial run's (finite termination) */
  printf("parareal iteration %d: largest change %.3e (slice %d), slices 1-%d exact, "
         "fine %.3f s, coarse %.3f s, comm %.3f s, %.2f s in all, predicted speedup %.2fx\n",
         k, row[at], at + 1, k < p->P ? k : p->P, row[p->P + T_FINE], row[p->P + T_COARSE],
         row[p->P + T_COMM], wall, predicted(p));
  fflush(stdout);
}

/* ---- output ----------------------------------------------------------------------------- */

/* The slice ends due by output.snapshot_every go to the last group, which writes them with
 * the initial state as one series. Over MPI through host memory on GPUs too: this runs once,
 * at the end of the run, and the file is written from the host anyway (the sweeps' transfers
 * are the link's, link.h). */
static tsr_err snapshots(pr *p) {
  const tsr_case *c = p->c;
  if (!tsr_schedule_any(&c->output.snapshot_every)) return TSR_OK;
  tsr_run_ctx *x = &p->fx[0];
  const int64_t n = tsr_box_cells(&x->box);
  tsr_err err = TSR_OK;
  if (last_group(p)) {
    err = tsr_run_initial(x);
    if (!err) err = tsr_run_start_snapshots(x);
  }
  for (int s = 0; s < p->P && !err; ++s) {
    const int64_t step = p->step_of[s + 1];
    if (!tsr_schedule_due(&c->output.snapshot_every, step, x->dt)) continue;
    const int g = s / p->m, j = s % p->m;
    if (g == p->group && last_group(p)) {
      err = tsr_parareal_copy(x, x->slot[TSR_SLOT_U], p->in[j + 1]);
    } else if (g == p->group) {
      for (int q = 0; q < c->ncomp && !err; ++q)
        err = x->be->download(x, p->in[j + 1], q, p->sbuf + q * n);
      if (!err && MPI_Send(p->sbuf, (int)(c->ncomp * n), MPI_DOUBLE,
                           (p->ngroup - 1) * p->nspace + p->srank, 8, p->world) != MPI_SUCCESS)
        err = tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Send of a slice's end state");
    } else if (last_group(p)) {
      if (MPI_Recv(p->rbuf, (int)(c->ncomp * n), MPI_DOUBLE, g * p->nspace + p->srank, 8,
                   p->world, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        err = tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Recv of a slice's end state");
      for (int q = 0; q < c->ncomp && !err; ++q)
        err = x->be->upload(x, x->slot[TSR_SLOT_U], q, p->rbuf + q * n);
    }
    if (!err && last_group(p)) err = tsr_run_write_snapshot(x, step, (double)step * x->dt);
  }
  return err;
}

static void report_more(const tsr_run_ctx *x, tsr_json *j) {
  const pr *p = (const pr *)x->method;
  const tsr_case *c = p->c;
  static const char *const names[] = {"euler", "ssp_rk2", "ssp_rk3", "rk4"};
  tsr_json_object_begin(j, "parareal");
  tsr_json_int(j, "time_slices", p->P);
  tsr_json_int(j, "slices_per_rank", p->m);
  tsr_json_int(j, "rank_groups", p->ngroup);
  tsr_json_int(j, "space_ranks", p->nspace);
  tsr_json_int(j, "coarsen", p->r);
  tsr_json_bool(j, "fine_batched", p->batch != NULL);
  tsr_json_int(j, "batch_group", tsr_pr_batch_group_of(p->batch));
  tsr_json_bool(j, "fine_block", tsr_pr_batch_block(p->batch));
  const tsr_block_shape bs = tsr_pr_batch_block_shape(p->batch);
  tsr_json_int(j, "fine_block_cluster", bs.blocks);      /* blocks a slice; 0: in place */
  tsr_json_int(j, "fine_block_resident", bs.resident);   /* slices the GPU runs at once */
#ifdef TSR_HAVE_CUDA
  /* without clusters (code for GPUs before sm_90) far fewer grids fit one launch */
  if (p->fx[0].be == &tsr_backend_cuda) tsr_json_bool(j, "block_clusters", tsr_block_clusters());
#endif
  tsr_json_string(j, "link", tsr_pr_link_name(p->link));
  tsr_json_string(j, "coarse_scheme", names[c->parareal.coarse_scheme]);
  tsr_json_number(j, "coarse_dt_max", p->dtc_max);
  tsr_json_number(j, "coarse_dt_limit", p->limit);
  tsr_json_int(j, "coarse_steps_first_slice", p->cn[0]);
  tsr_json_bool(j, "coarse_block", p->cblock);
  /* the coarse steps' time tiles: steps a pass (1: none), passes taken on this rank */
  tsr_json_int(j, "coarse_pass_steps", p->coarse.fuse);
  tsr_json_int(j, "coarse_passes", p->coarse.tile_passes);
  tsr_json_int(j, "fine_steps_first_slice", p->step_of[1]);
  tsr_json_number(j, "tol", c->parareal.tol);
  tsr_json_int(j, "max_iterations", c->parareal.max_iterations);
  tsr_json_int(j, "iterations", p->iterations);
  tsr_json_bool(j, "converged", p->converged);
  tsr_json_string(j, "change_norm", "max|U_k - U_k-1| / max|U_k| over cells and components");
  tsr_json_number(j, "serial_step_seconds", p->t_step);
  tsr_json_string(j, "predicted_serial_cost",
                  p->t_step > 0.0 ? "fine steps x serial_step_seconds (slices share a GPU)"
                                  : "time_slices x a slice's fine seconds an iteration");
  tsr_json_number(j, "fine_seconds", p->t[T_FINE]);
  tsr_json_number(j, "coarse_seconds", p->t[T_COARSE]);
  tsr_json_number(j, "comm_seconds", p->t[T_COMM]);
  tsr_json_number(j, "predicted_speedup", p->pred);
  tsr_json_array_begin(j, "history");
  for (int k = 1; k <= p->nhist; ++k) {
    const double *row = p->hist + (size_t)(k - 1) * (size_t)(p->P + T_COUNT);
    tsr_json_object_begin(j, NULL);
    tsr_json_int(j, "iteration", k);
    tsr_json_array_begin(j, "change");
    for (int n = 0; n < p->P; ++n) tsr_json_number(j, NULL, row[n]);
    tsr_json_array_end(j);
    tsr_json_number(j, "fine_seconds", row[p->P + T_FINE]);
    tsr_json_number(j, "coarse_seconds", row[p->P + T_COARSE]);
    tsr_json_number(j, "comm_seconds", row[p->P + T_COMM]);
    tsr_json_object_end(j);
  }
  tsr_json_array_end(j);
  tsr_json_object_end(j);
}

/* The result from the last group (its norms) to every rank. */
static tsr_err result(pr *p, tsr_run_result *res, double wall) {
  tsr_run_ctx *x = &p->fx[0];
  const double t = (double)x->nsteps * x->dt;
  res->steps = x->nsteps;
  res->t_final = t;
  res->dt = x->dt;
  res->wall = wall;
  res->cells_per_s = wall > 0 ? (double)tsr_box_cells(&x->layout.global) * x->nsteps / wall : 0;
  p->pred = predicted(p);
  tsr_err err = TSR_OK;
  if (last_group(p)) {
    tsr_run_norms nm;
    err = tsr_parareal_copy(x, x->slot[TSR_SLOT_U], p->in[p->m]);
    if (!err) err = tsr_run_monitor(x, t, &nm);
    if (!err) tsr_run_result_norms(x, &nm, res);
  }
  TSR_CALL(tsr_run_agree(p->world, err));
  MPI_Bcast(res, (int)sizeof *res, MPI_BYTE, (p->ngroup - 1) * p->nspace, p->world);
  return TSR_OK;
}

/* ---- the method (solver/method.h): x is the driver's context on all the run's ranks; the
 * groups' own are p->fx and p->coarse ------------------------------------------------------- */

static tsr_err pr_setup(tsr_run_ctx *x) {
  pr *p = calloc(1, sizeof *p);
  TSR_CHECK(p, TSR_ERR_MEMORY, "out of memory");
  x->method = p;
  p->c = x->c;
  p->world = x->comm;
  p->slice = MPI_COMM_NULL;
  p->rank = x->rank;
  p->size = x->size;
  p->nctx = 1;
  p->h.comm = MPI_COMM_NULL;
  p->h.in = MPI_REQUEST_NULL;
  TSR_ALLOC(p->fx, 1, "parareal's fine context");
  tsr_run_ctx_init(&p->fx[0], p->c, p->world, &x->opts); /* safe to free until set-up */
  tsr_run_ctx_init(&p->coarse, p->c, p->world, &x->opts);
  TSR_CALL(tsr_run_agree(p->world, tsr_pr_setup(p, &x->opts)));
  /* collective, agreed (and so after the set-up's agreement): NCCL's or MPI's */
  TSR_CALL(tsr_pr_link_create(&p->fx[0], p->world, p->group > 0 ? p->rank - p->nspace : -1,
                              last_group(p) ? -1 : p->rank + p->nspace, &p->link));
  TSR_CALL(tsr_run_agree(p->world, tsr_pr_halt_begin(p)));
  return serial_probe(p);
}

static int pr_peers(const tsr_run_ctx *x, int *peers, int max) {
  const pr *p = x->method;
  return tsr_run_halo_peers(&p->fx[0], peers, max);
}

/* The plan on stdout, then every slice's start state from the checkpoint (the iteration it was
 * written after) or from the initial conditions and the first coarse sweep. */
static tsr_err pr_start(tsr_run_ctx *x) {
  pr *p = x->method;
  /* the driver's choice (a relaunch that failed before its first checkpoint starts over) */
  for (int i = 0; i < p->nctx; ++i) p->fx[i].opts.restart = x->opts.restart;
  if (p->rank == 0 && !x->opts.quiet) {
    char bat[96] = "";
    if (tsr_pr_batch_block(p->batch))
      snprintf(bat, sizeof bat, ", each slice's steps in one GPU launch, side by side");
    else if (p->batch)
      snprintf(bat, sizeof bat, ", the slices of a GPU in batched launches of %d at a time",
               tsr_pr_batch_group_of(p->batch));
    const char *blk = p->cblock ? " (a slice's steps in one GPU launch)" : "";
    printf("parareal: %d time slices on %d rank group%s of %d rank%s (%d slice%s each%s%s), "
           "%" PRId64 " fine steps of dt %.6g in all%s; coarse grid /%d, %s, %" PRId64
           " steps of dt %.6g per slice%s (stable limit %.6g); tol %g, at most %d iterations\n",
           p->P, p->ngroup, p->ngroup == 1 ? "" : "s", p->nspace, p->nspace == 1 ? "" : "s",
           p->m, p->m == 1 ? "" : "s", p->ngroup > 1 ? ", end states by " : "",
           p->ngroup > 1 ? tsr_pr_link_name(p->link) : "", p->fx[0].nsteps, p->fx[0].dt,
           bat, p->r,
           tsr_integrate_plan(p->c->parareal.coarse_scheme).name, p->cn[0], p->cdt[0], blk,
           p->limit, p->c->parareal.tol, p->c->parareal.max_iterations);
    fflush(stdout);
  }
  p->start = p->iter_start = MPI_Wtime();
  const tsr_run_opts *o = &x->opts;
  const tsr_case_every *every = o->write_output ? &p->c->output.checkpoint_every : NULL;
  TSR_CALL(tsr_run_agree(p->world, tsr_fault_check(o->fault, p->size,
                                                   p->c->parareal.max_iterations, every, 1.0)));
  if (o->restart) return tsr_pr_restart(p, &p->k0);
  return tsr_run_agree(p->world, sweep0(p));
}

/* After iteration k was dropped (gather): in[] back to the states iteration k - 1 ended with,
 * their checkpoint where output.checkpoint_every skipped it (so that the stop costs only the
 * iteration it cut), and the message. Collective over the world. */
static tsr_err stop_dropped(pr *p, tsr_run_ctx *x, int k, int why) {
  const tsr_run_opts *o = &x->opts;
  const char *by = why > 0 ? "a signal" : "the wall-time limit";
  TSR_CALL(tsr_run_agree(p->world, tsr_pr_restore(p)));
  const int have = k - 1; /* 0: the run's first iteration, or a restart's from nothing */
  if (o->write_output && have >= 1 && p->ckpt_iteration != have) {
    TSR_CALL(tsr_pr_checkpoint(p, have));
    p->ckpt_iteration = have;
  }
  if (p->rank != 0) return TSR_OK;
  if (have < 1)
    printf("parareal: stopped by %s before its first iteration ended; nothing to continue "
           "from\n", by);
  else if (!o->write_output)
    printf("parareal: stopped by %s during iteration %d, which is dropped; the run writes no "
           "output: nothing to continue from\n", by, k);
  else
    printf("parareal: stopped by %s during iteration %d, which is dropped; continue from the "
           "checkpoint of iteration %d, %s/parareal_%04d.h5, with: tessera run %s --restart "
           "latest\n", by, k, have, x->out_dir, have, p->c->path);
  fflush(stdout);
  return TSR_OK;
}

/* The iterations until the changes fall below tol, the last one, or a stop; the slices' ends
 * due as snapshots; the result. A stop is acted on inside an iteration (halt.c): that
 * iteration is dropped, and the run stops with the states of the one before. */
static tsr_err pr_advance(tsr_run_ctx *x, tsr_run_result *res) {
  pr *p = x->method;
  const tsr_run_opts *o = &x->opts;
  const tsr_case_every *every = o->write_output ? &p->c->output.checkpoint_every : NULL;
  int why = 0, dropped = 0, k;
  /* --inject-fault step=0 (kind signal): before the first iteration, which is then dropped */
  if (p->k0 == 0) tsr_fault_after_step(o->fault, p->rank, 0, x->out_dir);
  for (k = p->k0 + 1; k <= p->c->parareal.max_iterations; ++k) {
    TSR_CALL(tsr_run_agree(p->world, sweep(p)));
    TSR_CALL(gather(p, k, &why, &dropped));
    if (dropped) break;
    say_iteration(p, k, MPI_Wtime() - p->start);
    if (p->converged) break;
    /* an iteration's checkpoint, and one where a signal stops the run: it goes on from there */
    const int last = k == p->c->parareal.max_iterations; /* final.h5 holds that one */
    if (o->write_output && (why || (every && !last && tsr_schedule_due(every, k, 1.0)))) {
      TSR_CALL(tsr_pr_checkpoint(p, k));
      p->ckpt_iteration = k;
    }
    tsr_fault_after_step(o->fault, p->rank, k, x->out_dir);
    if (why) break;
  }
  TSR_CALL(tsr_run_agree(p->world, tsr_pr_link_wait(p->link)));
  if (dropped) {
    TSR_CALL(stop_dropped(p, x, k, why));
    res->stopped = why;
    return TSR_OK;
  }
  if (!why && !p->converged && p->rank == 0 && !o->quiet) {
    printf("parareal: the changes did not fall below tol %g in %d iterations%s\n",
           p->c->parareal.tol, p->iterations,
           p->iterations >= p->P ? " (after time_slices iterations the result is the serial "
                                   "run's all the same)" : "; raise parareal.max_iterations");
    fflush(stdout);
  }
  if (!why && o->write_output) TSR_CALL(tsr_run_agree(p->world, snapshots(p)));
  if (why) {
    if (p->rank == 0) {
      if (p->ckpt_iteration == p->iterations && o->write_output)
        printf("parareal: stopped by %s after iteration %d, with its checkpoint "
               "%s/parareal_%04d.h5; continue with: tessera run %s --restart latest\n",
               why > 0 ? "a signal" : "the wall-time limit", p->iterations, x->out_dir,
               p->iterations, p->c->path);
      else
        printf("parareal: stopped by %s before its first iteration ended; nothing to continue "
               "from\n", why > 0 ? "a signal" : "the wall-time limit");
      fflush(stdout);
    }
    res->stopped = why;
    return TSR_OK;
  }
  return result(p, res, MPI_Wtime() - p->start);
}

/* final.h5 and report.json, written by the last group. */
static tsr_err pr_finish(tsr_run_ctx *x, tsr_run_result *res) {
  pr *p = x->method;
  tsr_err err = TSR_OK;
  if (last_group(p)) {
    tsr_run_ctx *f = &p->fx[0];
    f->m = x->m;
    f->method = p;
    f->phase[PH_SETUP] = x->phase[PH_SETUP];
    f->phase[PH_COMPUTE] = p->t[T_FINE] + p->t[T_COARSE];
    err = tsr_run_finish(f, res);
  }
  return tsr_run_agree(p->world, err);
}

static void pr_teardown(tsr_run_ctx *x) {
  pr *p = x->method;
  if (!p) return;
  tsr_pr_halt_end(p);
  tsr_pr_teardown(p);
  if (p->fx) tsr_run_ctx_free(&p->fx[0]);
  free(p->fx);
  if (p->slice != MPI_COMM_NULL) MPI_Comm_free(&p->slice);
  free(p);
  x->method = NULL;
}

const tsr_method_ops tsr_method_parareal = {
    .setup = pr_setup,
    .peers = pr_peers,
    .start = pr_start,
    .advance = pr_advance,
    .finish = pr_finish,
    .report = report_more,
    .teardown = pr_teardown,
};
