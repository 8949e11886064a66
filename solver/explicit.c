/* The explicit method (solver/explicit.h): a step's stages with the exchange overlapped with
 * the interior, time.fuse's blocks and time tiles, and the step loop with its monitors,
 * snapshots, checkpoints, stops and restart, on the driver's shared pieces (solver/run.c). */
#include "solver/explicit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/progress.h"
#include "solver/ckpt_writer.h"
#include "solver/fault.h"
#include "solver/graph.h"
#include "solver/method.h"
#include "solver/schedule.h"
#include "solver/stop.h"
#include "solver/watchdog.h"

/* A stage of a fused block (time.fuse > 1) after its first: no exchange; it updates the cells
 * whose inputs are still valid, the box grown by the radius once per stage left in the block.
 * Every cell is computed by the same per-cell code from the same inputs as its owner computes
 * it, so the owned cells get the bits of an exchange every stage. */
static tsr_err fused_stage(tsr_run_ctx *x, const tsr_stage_desc *d, int k, tsr_field *in,
                           tsr_field *out) {
  const int K = x->fuse_len * x->scheme.nstage;
  const tsr_box r = tsr_run_grown(x, (K - 1 - k) * x->radius);
  tsr_field *base = x->slot[TSR_SLOT_U];
  double t0 = MPI_Wtime();
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 0, d, &r, in, base, x->src));
  TSR_CALL(x->be->stage(x, d, &r, in, base, x->acc, x->src, out));
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 1, d, &r, in, base, x->src));
  x->phase[PH_COMPUTE] += MPI_Wtime() - t0;
  return TSR_OK;
}

static tsr_err run_stage(tsr_run_ctx *x, int s, double t) {
  const tsr_backend_ops *be = x->be;
  const tsr_scheme_plan *sp = &x->scheme;
  tsr_field *in = x->slot[sp->stage[s].in], *out = x->slot[sp->stage[s].out];
  double ts = t + sp->stage[s].c * x->dt;
  x->stage = s;
  const int k = x->fuse_pos * sp->nstage + s; /* the stage's place in a fused block */
  const int fused_first = x->fuse > 1 && k == 0;
  const int m = tsr_run_tiles_pass(x, x->fuse_pos); /* time tiles: steps this pass takes */
  if (m == 0 || (m > 0 && s > 0)) return TSR_OK; /* a pass issued before took this stage */
  double t0 = MPI_Wtime();
  /* a block's first stage fills the faces' cells beyond the box once the exchange has brought
   * the cells they mirror */
  TSR_CALL(be->boundary(x, in, ts, fused_first ? TSR_BC_OWNED : TSR_BC_WHOLE));
  double t1 = MPI_Wtime();
  /* before the exchange begins: a backend may run the shell beside the interior, and the
   * shell reads the source too */
  TSR_CALL(tsr_run_source_eval(x, ts));
  x->phase[PH_BOUNDARY] += t1 - t0;
  tsr_stage_desc d = x->desc;
  d.kind = sp->stage[s].kind;
  if (m > 0) {
    d.kind = sp->stage[sp->nstage - 1].kind; /* names the scheme: kernels/steps.h */
    return tsr_run_tiles_issue(x, &d, x->fuse_pos, m, in, x->slot[sp->result]);
  }
  if (x->fuse > 1 && k > 0) return fused_stage(x, &d, k, in, out);
  if (fused_first) tsr_run_split_shell(x, (x->fuse_len * sp->nstage - 1) * x->radius);
  TSR_CALL(be->halo_begin(x, in));
  double t2 = MPI_Wtime();
  tsr_field *base = x->slot[TSR_SLOT_U];
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 0, &d, &x->interior, in, base, x->src));
  TSR_CALL(be->stage(x, &d, &x->interior, in, base, x->acc, x->src, out));
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 1, &d, &x->interior, in, base, x->src));
  double t3 = MPI_Wtime();
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err err = be->halo_end(x, in);
  tsr_watchdog_waiting(0);
  TSR_CALL(err);
  if (fused_first) TSR_CALL(be->boundary(x, in, ts, TSR_BC_BEYOND));
  double t4 = MPI_Wtime();
  for (int i = 0; i < x->nshell; ++i) {
    if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 1, 0, &d, &x->shell[i], in, base, x->src));
    TSR_CALL((be->stage_shell ? be->stage_shell : be->stage)(x, &d, &x->shell[i], in, base,
                                                             x->acc, x->src, out));
    if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 1, 1, &d, &x->shell[i], in, base, x->src));
  }
  if (be->join) TSR_CALL(be->join(x));
  double t5 = MPI_Wtime();
  /* on an asynchronous backend these are the host's issue times, and the step loop's total
   * (synchronised at every monitor) is the figure to read */
  x->phase[PH_COMPUTE] += (t3 - t2) + (t5 - t4);
  x->phase[PH_HALO_WAIT] += t4 - t3;
  return TSR_OK;
}

static tsr_err run_step(tsr_run_ctx *x, double t) {
  for (int s = 0; s < x->scheme.nstage; ++s) TSR_CALL(run_stage(x, s, t));
  return TSR_OK;
}

static void swap_result(tsr_run_ctx *x) {
  tsr_field *tmp = x->slot[TSR_SLOT_U];
  x->slot[TSR_SLOT_U] = x->slot[x->scheme.result];
  x->slot[x->scheme.result] = tmp;
  x->flip ^= 1;
}

/* Time tiles' count of the step at fuse_pos: 0 where a pass issued before took it (a step
 * that issues nothing), 1 where it is to be issued; a pass it begins is counted here, not in
 * run_step, which a CUDA graph's replay does not call. */
static int tile_step(tsr_run_ctx *x) {
  if (x->tile_left > 0) {
    x->tile_left--;
    return 0;
  }
  const int pass = tsr_run_tiles_pass(x, x->fuse_pos);
  if (pass > 0) {
    x->tile_left = pass - 1;
    x->tile_passes++;
    x->tile_steps += pass;
  }
  return 1;
}

tsr_err tsr_explicit_advance(tsr_run_ctx *x, int64_t first, int64_t n, double t0) {
  /* blocks of time.fuse steps from first, the last one cut at the range's end (its state is
   * the caller's) */
  x->fuse_pos = x->fuse_len = 0;
  x->tile_left = 0;
  for (int64_t s = first; s < first + n; ++s) {
    x->step = s;
    if (x->fuse > 1 && x->fuse_pos == x->fuse_len) {
      x->fuse_pos = 0;
      x->fuse_len = first + n - s < x->fuse ? (int)(first + n - s) : x->fuse;
    }
    if (tile_step(x)) TSR_CALL(run_step(x, t0 + (double)s * x->dt));
    swap_result(x);
    if (x->fuse > 1) x->fuse_pos++;
    tsr_watchdog_beat(s + 1);
  }
  return TSR_OK;
}

void tsr_explicit_swap_slots(tsr_run_ctx *x) { swap_result(x); }

/* The explicit method's set-up: the backend, the shared set-up, then its rebalancer, time
 * tiles, time.fuse: auto and CUDA graphs; then what --inject-fault asks of this run. */
static tsr_err setup(tsr_run_ctx *x) {
  TSR_CALL(tsr_run_agree(x->comm, tsr_run_choose_backend(x)));
  TSR_CALL(tsr_run_agree(x->comm, tsr_run_setup(x)));
  /* a fixed dt is the user's to give (the limit is an estimate), but past it a run that blows
   * up may still end with finite garbage: said before the first step */
  if (x->rank == 0 && x->dt > x->dt_stable * (1.0 + 1e-9))
    fprintf(stderr, "tessera: warning: %s: time.dt %g is %.3g times the explicit stable limit "
            "%g on this grid; the run will likely blow up: lower time.dt or use dt: auto\n",
            x->c->path, x->dt, x->dt / x->dt_stable, x->dt_stable);
  TSR_CALL(tsr_run_agree(x->comm, tsr_run_rebalance_create(x)));
  tsr_run_tiles_setup(x); /* auto's candidates depend on the passes */
  TSR_CALL(tsr_run_agree(x->comm, tsr_run_fuse_auto_create(x)));
  TSR_CALL(tsr_run_agree(x->comm, tsr_graph_create(x, &x->graph)));
  const tsr_case_every *ckpt = x->opts.write_output ? &x->c->output.checkpoint_every : NULL;
  return tsr_fault_check(x->opts.fault, x->size, x->nsteps, ckpt, x->dt);
}

/* A run continued to another end (time.end, time.steps) keeps the dt it started with, so
 * that its steps are the ones a run to the new end with that dt makes: with time.end the
 * count is the first that reaches the end (its last step may end up to a dt past it). */
static tsr_err continue_with_dt(tsr_run_ctx *x, double dt) {
  const tsr_case *c = x->c;
  int64_t n = c->time.steps;
  if (!c->time.has_steps) {
    double v = ceil(c->time.end / dt * (1.0 - 1e-12));
    TSR_CHECK(v >= 1.0 && v <= (double)TSR_CASE_MAX_STEPS, TSR_ERR_INPUT,
              "%s: time.end = %g with the checkpoint's dt = %g needs %.3g steps, more than "
              "%.3g; shorten time.end", c->path, c->time.end, dt, v, (double)TSR_CASE_MAX_STEPS);
    n = (int64_t)v;
  }
  x->dt = dt;
  x->desc.dt = dt;
  x->nsteps = n;
  /* a CUDA graph keeps the dt it was made with */
  tsr_graph_destroy(&x->graph);
  return tsr_graph_create(x, &x->graph);
}

/* U from a checkpoint (any decomposition) instead of the initial conditions; the loop then
 * starts at its step. */
static tsr_err restart(tsr_run_ctx *x) {
  double t0 = MPI_Wtime();
  const tsr_case *c = x->c;
  int64_t n = tsr_box_cells(&x->box);
  double *buf = malloc(sizeof(double) * (size_t)(n * c->ncomp) + 1);
  TSR_CHECK(buf, TSR_ERR_MEMORY, "out of memory reading a checkpoint");
  double *data[TSR_MAX_COMP];
  for (int q = 0; q < c->ncomp; ++q) data[q] = buf + q * n;
  tsr_checkpoint_info info;
  tsr_err err = tsr_checkpoint_load(x->comm, x->opts.restart, x->out_dir, c->ncomp,
                                    tsr_models[c->model].comp, &x->box, data, &info,
                                    tsr_run_restart_accept, x);
  if (!err && info.dt != x->dt && x->restart_same) err = continue_with_dt(x, info.dt);
  if (!err) err = tsr_run_restart_within(x, &info);
  /* the loop's time is step x dt exactly (a restart then matches bitwise): a file whose
   * attributes disagree was damaged or altered */
  if (!err && info.time != (double)info.step * info.dt)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "'%s' is not a valid checkpoint: its time %.17g is not its step x dt "
                      "(%lld x %.17g); it was damaged or altered", info.path, info.time,
                      (long long)info.step, info.dt);
  if (!err && info.dt != x->dt)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "checkpoint %s has dt = %.17g where this run has %.17g; a run goes on "
                      "with the dt it started with: add --set time.dt=%.17g",
                      info.path, info.dt, x->dt, info.dt);
  for (int q = 0; q < c->ncomp && !err; ++q)
    err = x->be->upload(x, x->slot[TSR_SLOT_U], q, data[q]);
  if (!err) err = x->be->sync(x);
  free(buf);
  x->start_step = err ? 0 : info.step;
  /* the rebalanced boxes it was written on, where they fit this run */
  err = tsr_run_agree(x->comm, err);
  if (!err && x->rb) err = tsr_run_rebalance_restart(x, info.path);
  x->phase[PH_INIT] += MPI_Wtime() - t0;
  return err;
}

/* A block of time.fuse steps between two exchanges starts at step: fuse steps, fewer where the
 * run ends or the rebalancer decides (a migration changes the boxes, so a block ends there). */
static void start_block(tsr_run_ctx *x, int64_t step) {
  int64_t len = x->fuse, left = x->nsteps - step, every = x->c->rebalance.every;
  if (left < len) len = left;
  if (x->rb && every > 0 && every - step % every < len) len = every - step % every;
  x->fuse_pos = 0;
  x->fuse_len = tsr_run_tiles_block_len(x, step, (int)len);
}

static tsr_err loop(tsr_run_ctx *x, tsr_run_result *res) {
  const tsr_case *c = x->c;
  tsr_progress pg;
  tsr_progress_init(&pg, x->opts.quiet || x->rank != 0 ? 3 : (int)c->output.progress, stdout,
                    x->nsteps);
  const int64_t every = tsr_run_monitor_every(x);
  double cells = (double)tsr_box_cells(&x->layout.global);
  char line[2048];
  tsr_run_norms nm;
  /* t = step * dt as an uninterrupted run has it at that step, so a restart matches bitwise */
  int64_t first = x->start_step;
  /* staging memory (pinned on GPUs) is allocated before the clock starts */
  if (x->opts.write_output && tsr_schedule_any(&c->output.checkpoint_every))
    TSR_CALL(tsr_ckpt_writer_create(x, &x->ckpt));
  double t = (double)first * x->dt, start = MPI_Wtime();
  TSR_CALL(tsr_run_monitor(x, t, &nm));
  tsr_run_monitor_line(x, first, t, &nm, 0.0, line, sizeof line);
  tsr_progress_line(&pg, line);
  /* no step has run: not the time step's fault. An initial value that is not finite is named
   * with a point; stored values past single precision's range are not finite either */
  if (first == 0 && !tsr_run_norms_finite(x, &nm))
    TSR_CALL(tsr_run_blame_expressions(x, 1, 0.0, 0.0));
  for (int q = 0; q < c->ncomp && first == 0; ++q)
    TSR_CHECK(isfinite(nm.min[q]) && isfinite(nm.max[q]), TSR_ERR_INPUT,
              "%s: the initial values of %s are not finite (min %g, max %g): check initial.%s "
              "and the params and grid it uses", c->path, tsr_models[c->model].comp[q],
              nm.min[q], nm.max[q], tsr_models[c->model].comp[q]);
  double t_ok = t; /* the last time the state was seen finite */
  /* a signal (or a wall time spent) stops the run after step `done`, with a checkpoint there;
   * one that came during set-up stops it before its first step */
  int why = 0;
  int64_t done = x->nsteps;
  if (first == 0) tsr_fault_after_step(x->opts.fault, x->rank, 0, x->out_dir);
  if (x->opts.write_output) TSR_CALL(tsr_run_stop_poll(x, 1, &why));
  if (why) done = first;
  x->fuse_pos = x->fuse_len = 0;
  for (int64_t step = first; step < x->nsteps && !why; ++step) {
    x->step = step;
    if (x->fuse > 1 && x->fuse_pos == x->fuse_len) start_block(x, step);
    /* the states inside a pass are never in memory, so nothing below reads them (blocks end
     * where the run reads a state) */
    if (tile_step(x)) {
      if (tsr_run_rebalance_plain(x, step) || tsr_run_fuse_auto_busy(x)) TSR_CALL(run_step(x, t));
      else TSR_CALL(tsr_graph_step(x->graph, x, step, t, run_step));
    }
    const int mid_pass = x->tile_left > 0;
    swap_result(x);
    if (x->fuse > 1) x->fuse_pos++;
    if (x->fa) {
      TSR_CALL(tsr_run_fuse_auto_after_step(x, step, line, sizeof line));
      if (line[0]) tsr_progress_line(&pg, line);
    }
    if (x->rb) {
      TSR_CALL(tsr_run_rebalance_after_step(x, step, line, sizeof line));
      if (line[0]) tsr_progress_line(&pg, line);
    }
    t = (double)(step + 1) * x->dt;
    tsr_watchdog_beat(step + 1);
    double cps = cells * (double)(step + 1 - first) / (MPI_Wtime() - start);
    tsr_progress_step(&pg, step + 1, t, cps);
    const int show = (step + 1) % every == 0 || step + 1 == x->nsteps;
    /* none at the last step: final.h5 holds that state */
    const int ckpt_due = x->opts.write_output && step + 1 < x->nsteps &&
                         tsr_schedule_due(&c->output.checkpoint_every, step + 1, x->dt);
    /* a state is checked before it is checkpointed: a run that blew up between monitor lines
     * wrote checkpoints of infinities, `latest` named one, and keep had removed the good ones */
    if (show || ckpt_due) {
      TSR_CALL(tsr_run_monitor(x, t, &nm));
      if (show) {
        tsr_run_monitor_line(x, step + 1, t, &nm, cps, line, sizeof line);
        tsr_progress_line(&pg, line);
      }
      /* a boundary value or source that is not finite is the case's, not the step's */
      if (!tsr_run_norms_finite(x, &nm)) {
        TSR_CALL(tsr_run_blame_expressions(x, 0, t_ok, t));
        return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                           "%s: the solution became non-finite by step %lld (t = %g, dt = %g, "
                           "stable limit %g): lower time.cfl or time.dt",
                           c->path, (long long)(step + 1), t, x->dt, x->dt_stable);
      }
      t_ok = t;
    }
    if (x->snap && tsr_schedule_due(&c->output.snapshot_every, step + 1, x->dt))
      TSR_CALL(tsr_run_write_snapshot(x, step + 1, t));
    /* an injected fault strikes with the checkpoints before it on the disk, and a full disk is
     * reported at its own checkpoint, so what it tests does not depend on the writer's timing;
     * every rank has the same fault, so every rank makes these collective waits or none does */
    const tsr_fault *f = x->opts.fault;
    const int fault_now = f && f->kind != TSR_FAULT_NONE && f->step == step + 1;
    if (fault_now) TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
    if (ckpt_due) {
      tsr_fault_before_checkpoint(x->opts.fault, step + 1);
      TSR_CALL(tsr_ckpt_writer_save(x->ckpt, x, step + 1, t));
      x->ckpt_step = step + 1;
      tsr_watchdog_beat(step + 1);
    }
    if (fault_now) TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
    tsr_fault_after_step(x->opts.fault, x->rank, step + 1, x->out_dir);
    if (x->opts.write_output && step + 1 < x->nsteps && !mid_pass) {
      TSR_CALL(tsr_run_stop_poll(x, 0, &why));
      if (why) done = step + 1;
    }
  }
  TSR_CALL(x->be->sync(x));
  TSR_CALL(tsr_graph_finish(x->graph, res));
  /* the last checkpoint's write is the run's cost too, and final.h5 must not overlap it */
  if (x->ckpt) TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  if (why) TSR_CALL(tsr_run_stop_checkpoint(x, done, t, why));
  tsr_progress_finish(&pg);
  res->stopped = why;
  res->wall = MPI_Wtime() - start;
  res->steps = done;
  res->t_final = t;
  res->dt = x->dt;
  res->cells_per_s = res->wall > 0 ? cells * (double)(done - first) / res->wall : 0.0;
  if (x->ckpt) tsr_ckpt_writer_report(x->ckpt, res);
  tsr_run_result_norms(x, &nm, res);
  return TSR_OK;
}

/* U from the checkpoint or the initial conditions, the snapshots' series, and one exchange
 * before the clock starts: NCCL connects to each peer at the first send to it (about a second
 * over NVLink), which is set-up, not stepping; the ghosts it fills are filled again by the
 * first stage. */
static tsr_err start(tsr_run_ctx *x) {
  if (x->opts.restart) TSR_CALL(tsr_run_agree(x->comm, restart(x)));
  else TSR_CALL(tsr_run_agree(x->comm, tsr_run_initial(x)));
  if (x->opts.write_output && (tsr_schedule_any(&x->c->output.snapshot_every) || x->opts.restart))
    TSR_CALL(tsr_run_start_snapshots(x));
  TSR_CALL(x->be->halo_begin(x, x->slot[TSR_SLOT_U]));
  TSR_CALL(x->be->halo_end(x, x->slot[TSR_SLOT_U]));
  return x->be->sync(x);
}

const tsr_method_ops tsr_method_explicit = {
    .setup = setup,
    .peers = tsr_run_halo_peers,
    .start = start,
    .advance = loop,
    .finish = tsr_run_finish,
};
