/* The rebalancer in the step loop (DESIGN.md, Decomposition and rebalancing; its policy is
 * decomp/rebalance.h, the moving of cells decomp/migrate.h).
 *
 * Every rebalance.every steps the ranks decide. Over the last rebalance.window steps before a
 * decision each rank times its compute: the stage calls, without the exchange's waits (device
 * events on GPUs, around the kernels on their streams; on CPU ranks the wall clock or, with
 * rebalance.clock: cpu, the thread's CPU time, which leaves out the time the OS gave other
 * processes when ranks share cores; debug.slowdown repeats the compute, so both see it). Those
 * steps are issued plainly, not as CUDA graph replays, so that the events are theirs. At the
 * decision each rank counts the work of its cells in the state reached (kernels/work.h; 1 per
 * cell for models whose cost never varies) onto the shared cost map, the figures are shared
 * (tsr_rebalance_gather) and every rank takes the same decision. Where the work varies, the
 * map is also counted at the window's start (the last decision's map when the window is all
 * of `every`), so that the decision follows the costly cells' motion, and the work model
 * (beta) is fitted over the run's windows (decomp/rebalance.h). A migration moves U to the
 * new boxes and rebuilds everything that depends on the box: the other fields (their values
 * are a step's scratch), the boundary's faces, the halo plan and exchange, the interior/shell
 * split, the checkpoint staging and the CUDA graphs. The per-cell arithmetic never depends on
 * the box, so the results are the same bits with or without rebalancing. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/checkpoint.h"
#include "solver/ckpt_writer.h"
#include "solver/graph.h"
#include "solver/run_internal.h"

/* A migration's parts, timed so that its cost can be taken apart (bench/README.md, rebalance),
 * in the order they run: the box's other fields re-shaped onto the new box (an allocation only
 * where a field has no room; their zeroing is queued beside the move), the owned cells moved
 * into U's new field, U's old field re-shaped into a scratch slot and the halo and migration
 * plans built, the wait for the device's queued zeroing, the backend's rebuild (the exchange's
 * buffers refitted, boundary faces) and the checkpoint writer's, and the CUDA graphs'. */
#define MIGRATION_PHASES 6
static const char *const phase_names[MIGRATION_PHASES] = {
    "fields", "move_cells", "plan", "device_wait", "backend", "graphs"};

/* The columns of report.json's rebalance.history (tsr_run_rebalance_report). */
#define HIST 9

/* One decision that migrated, for report.json. */
typedef struct {
  int64_t step;
  tsr_rebalance_decision d;
  double seconds;          /* the migration's wall time (slowest rank) */
  double phase[MIGRATION_PHASES]; /* its parts, each the slowest rank's (phase_names) */
  double *before, *after;  /* per rank: compute seconds per step measured before the migration
                              and over the window before the next decision (NaN until then) */
  tsr_box *boxes;          /* the new boxes, rank order */
} record;

struct tsr_run_rebal {
  int enabled;             /* decisions are taken (else only debug.slowdown runs) */
  int every, window;
  tsr_rebalance_opts opts;
  tsr_rebalance_state state;
  tsr_rebalance_costmap map;
  tsr_rebalance_costmap start; /* the map at the window's start (varying models) */
  int64_t start_step;      /* the step it was counted at; -1: none */
  tsr_rebalance_model model;
  uint32_t *work;          /* host: the work count of each cell of the box (varying models) */
  int varies;
  int cpu_clock;           /* CPU ranks: 1 times by the thread's CPU time (rebalance.clock) */
  double host_t0;          /* that clock at the open mark (CPU ranks) */
  double time;             /* this rank's compute seconds over the timed steps (CPU ranks) */
  double window_t0;        /* MPI_Wtime at the window's first timed stage; < 0: none yet */
  int timed;               /* timed steps since the last decision */
  double *gtime;           /* per rank: the last decision's compute seconds per step */
  int64_t *gwork;
  int decisions;
  double (*hist)[HIST];    /* per decision: the columns tsr_run_rebalance_report names */
  int caphist;
  record *rec;
  int nrec, caprec;
  tsr_field *slow_out, *slow_acc; /* debug.slowdown: where the repeated stages write */
  size_t reserved;         /* bytes this rank's fields hold beyond their boxes, for a larger
                              box after a migration (rebalance.reserve) */
};

/* rebalance.reserve: room in every field of the run for a box that fraction larger than this
 * rank's first (at most the whole grid), so that a migration growing the box allocates
 * nothing: a cudaMalloc and cudaFree of a field of 1 GiB took milliseconds of a 2-GPU
 * migration (bench/README.md, rebalance). Only where it fits: twice the room of a field is
 * left free for the migration's buffers and the exchange, plus 256 MiB. CPU ranks allocate as
 * their boxes grow (no free_bytes). */
static tsr_err reserve_fields(tsr_run_ctx *x) {
  struct tsr_run_rebal *rb = x->rb;
  const double r = x->c->rebalance.reserve;
  if (!x->be->free_bytes || r <= 0.0) return TSR_OK;
  tsr_field *f[TSR_NSLOT + 3];
  int n = 0;
  for (int s = 0; s < TSR_NSLOT; ++s) f[n++] = x->slot[s];
  if (x->acc) f[n++] = x->acc;
  if (x->exact) f[n++] = x->exact;
  if (x->src) f[n++] = x->src;
  const tsr_field *u = x->slot[TSR_SLOT_U];
  const size_t own = tsr_field_bytes(u);
  tsr_box g = tsr_box_grow(&x->layout.global, u->dim, u->ghost);
  double most = (double)tsr_box_cells(&g) * (double)u->ncomp * (double)tsr_prec_size(u->prec);
  double want = fmin((1.0 + r) * (double)own, most);
  size_t avail = 0;
  TSR_CALL(x->be->free_bytes(x, &avail));
  double usable = (double)avail - 2.0 * want - 256.0 * 1048576.0;
  if (usable < (double)n * (want - (double)own))
    want = (double)own + (usable > 0.0 ? usable / n : 0.0);
  if (want <= (double)own) return TSR_OK;
  for (int i = 0; i < n; ++i) {
    size_t before = f[i]->cap;
    TSR_CALL(tsr_field_reserve(f[i], (size_t)want));
    rb->reserved += f[i]->cap - before;
  }
  return TSR_OK;
}

tsr_err tsr_run_rebalance_create(tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  int on = tsr_rebalance_enabled(c->rebalance.enabled, x->size);
  x->rb = NULL;
  if (!on && !c->debug.slowdown) return TSR_OK;
  struct tsr_run_rebal *rb;
  TSR_ALLOC(rb, 1, "the rebalancer");
  x->rb = rb;
  rb->enabled = on;
  rb->every = c->rebalance.every;
  rb->window = c->rebalance.window > 0 && c->rebalance.window < rb->every ? c->rebalance.window
                                                                          : rb->every;
  rb->varies = tsr_models[c->model].varies;
  rb->cpu_clock = c->rebalance.clock == TSR_CLOCK_CPU;
  rb->window_t0 = -1.0;
  if (!on) return TSR_OK;
  rb->opts.threshold = c->rebalance.threshold;
  /* the new boxes are kept until the next decision: that is what a migration must repay */
  rb->opts.window = rb->every;
  rb->opts.min_width = x->ghost;
  rb->opts.bandwidth =
      strcmp(x->be->name, "cuda") == 0 ? TSR_REBALANCE_BANDWIDTH_GPU : TSR_REBALANCE_BANDWIDTH;
  rb->opts.bytes_per_cell =
      (int64_t)c->ncomp * (c->precision == TSR_PRECISION_SINGLE ? 4 : 8);
  TSR_CALL(tsr_rebalance_costmap_init(c->dim, c->cells, 0, &rb->map));
  rb->start_step = -1;
  if (rb->varies) TSR_CALL(tsr_rebalance_costmap_init(c->dim, c->cells, 0, &rb->start));
  TSR_CALL(tsr_rebalance_model_init(x->size, &rb->model));
  TSR_ALLOC(rb->gtime, x->size, "the rebalancer's figures");
  TSR_ALLOC(rb->gwork, x->size, "the rebalancer's figures");
  return reserve_fields(x);
}

static void free_records(struct tsr_run_rebal *rb) {
  for (int i = 0; i < rb->nrec; ++i) {
    free(rb->rec[i].before);
    free(rb->rec[i].after);
    free(rb->rec[i].boxes);
  }
  free(rb->rec);
}

void tsr_run_rebalance_free(tsr_run_ctx *x) {
  struct tsr_run_rebal *rb = x->rb;
  if (!rb) return;
  tsr_rebalance_costmap_free(&rb->map);
  tsr_rebalance_costmap_free(&rb->start);
  tsr_rebalance_model_free(&rb->model);
  free(rb->work);
  free(rb->gtime);
  free(rb->gwork);
  free(rb->hist);
  free_records(rb);
  tsr_field_destroy(&rb->slow_out);
  tsr_field_destroy(&rb->slow_acc);
  free(rb);
  x->rb = NULL;
}

/* Step `step` (from 0) brings the state to step + 1; it is timed when that lies in the window
 * before a decision the run reaches. */
static int timed_step(const tsr_run_ctx *x, int64_t step) {
  const struct tsr_run_rebal *rb = x->rb;
  if (!rb || !rb->enabled) return 0;
  int64_t n = step + 1, d = ((n - 1) / rb->every + 1) * rb->every;
  return d < x->nsteps && (n - 1) % rb->every >= rb->every - rb->window;
}

static int slowed_step(const tsr_run_ctx *x, int64_t step) {
  const tsr_case *c = x->c;
  return c->debug.slowdown && step + 1 >= c->debug.slowdown_steps[0] &&
         step + 1 <= c->debug.slowdown_steps[1];
}

int tsr_run_rebalance_plain(const tsr_run_ctx *x, int64_t step) {
  return x->rb && (timed_step(x, step) || slowed_step(x, step));
}

/* debug.slowdown: the stage again over region, factor - 1 times (the fraction over a slab of
 * it), into scratch fields, so that this rank's compute takes factor times as long. */
static tsr_err slow_down(tsr_run_ctx *x, int shell, const tsr_stage_desc *d,
                         const tsr_box *region, const tsr_field *in, const tsr_field *base,
                         const tsr_field *src) {
  struct tsr_run_rebal *rb = x->rb;
  const tsr_case *c = x->c;
  if (x->rank != c->debug.slowdown_rank || tsr_box_empty(region)) return TSR_OK;
  const tsr_field *u = x->slot[TSR_SLOT_U];
  if (!rb->slow_out)
    TSR_CALL(tsr_field_create_as(c->dim, &x->box, x->ghost, c->ncomp, u->mem, u->prec,
                                 &rb->slow_out));
  if (x->acc && !rb->slow_acc)
    TSR_CALL(tsr_field_create_as(c->dim, &x->box, x->ghost, c->ncomp, u->mem, u->prec,
                                 &rb->slow_acc));
  const tsr_backend_ops *be = x->be;
  tsr_err (*stage)(tsr_run_ctx *, const tsr_stage_desc *, const tsr_box *, const tsr_field *,
                   const tsr_field *, tsr_field *, const tsr_field *, tsr_field *) =
      shell && be->stage_shell ? be->stage_shell : be->stage;
  double extra = c->debug.slowdown_factor - 1.0;
  int full = (int)floor(extra);
  for (int i = 0; i < full; ++i)
    TSR_CALL(stage(x, d, region, in, base, rb->slow_acc, src, rb->slow_out));
  int axis = c->dim - 1, len = tsr_box_len(region, axis);
  int part = (int)lround((extra - full) * len);
  if (part > 0) {
    tsr_box slab = *region;
    slab.hi[axis] = slab.lo[axis] + part;
    TSR_CALL(stage(x, d, &slab, in, base, rb->slow_acc, src, rb->slow_out));
  }
  return TSR_OK;
}

/* The stage calls run on the thread that marks them (with OpenMP, its team's master thread):
 * its CPU time is the rank's compute with one thread per rank, the setting of more ranks than
 * cores; the OpenMP workers' time is not in it. */
static double host_clock(int cpu) {
  if (!cpu) return MPI_Wtime();
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

tsr_err tsr_run_rebalance_mark(tsr_run_ctx *x, int shell, int end, const tsr_stage_desc *d,
                               const tsr_box *region, const tsr_field *in, const tsr_field *base,
                               const tsr_field *src) {
  struct tsr_run_rebal *rb = x->rb;
  int timed = timed_step(x, x->step);
  if (end && slowed_step(x, x->step)) TSR_CALL(slow_down(x, shell, d, region, in, base, src));
  if (!timed) return TSR_OK;
  if (x->be->time_mark) return x->be->time_mark(x, shell, end);
  double now = host_clock(rb->cpu_clock);
  if (!end) rb->host_t0 = now;
  else rb->time += now - rb->host_t0;
  if (rb->window_t0 < 0.0) rb->window_t0 = MPI_Wtime();
  return TSR_OK;
}

/* This rank's work per step in the state U, onto map (cleared first). */
static tsr_err count_work(tsr_run_ctx *x, double t, tsr_rebalance_costmap *map,
                          int64_t *total) {
  struct tsr_run_rebal *rb = x->rb;
  tsr_rebalance_costmap_clear(map);
  int64_t n = tsr_box_cells(&x->box);
  if (!rb->varies) {
    tsr_rebalance_costmap_add_uniform(map, &x->box, 1);
    *total = n;
    return TSR_OK;
  }
  /* the counts read the neighbours (the stage's stencil): U's ghosts first */
  tsr_field *u = x->slot[TSR_SLOT_U];
  TSR_CALL(x->be->boundary(x, u, t, TSR_BC_WHOLE));
  TSR_CALL(x->be->halo_begin(x, u));
  TSR_CALL(x->be->halo_end(x, u));
  TSR_CALL(x->be->sync(x));
  if (!rb->work) TSR_ALLOC(rb->work, n, "the work counts of the cells");
  TSR_CALL(x->be->work(x, u, rb->work));
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += rb->work[i];
  tsr_rebalance_costmap_add_cells(map, &x->box, rb->work);
  *total = sum;
  return TSR_OK;
}

/* Moves U to the boxes of next (which the run then owns) and rebuilds what depends on the
 * box. Nothing is freed and, where the fields have room (rebalance.reserve), nothing is
 * allocated: U's new field is the scratch slot T1's storage re-shaped (a step's scratch, like
 * every field but U), U's old field becomes that slot; the other fields are re-shaped and
 * zeroed on the device beside the move. Collective. */
static tsr_err relayout(tsr_run_ctx *x, tsr_layout *next, double phase[MIGRATION_PHASES]) {
  struct tsr_run_rebal *rb = x->rb;
  TSR_CALL(tsr_run_agree(x->comm, x->be->sync(x)));
  double t[MIGRATION_PHASES + 1];
  t[0] = MPI_Wtime();
  /* the write in flight reads its staged copy of the old box */
  TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  tsr_migrate_plan mp;
  tsr_err err = tsr_migrate_plan_build(&x->layout, next, x->rank, &mp);
  tsr_field *nu = x->slot[TSR_SLOT_T1];
  if (!err) {
    x->box = mp.new_box;
    err = tsr_field_reshape(nu, &x->box);
  }
  if (!err) err = tsr_run_box_fields(x, 1u << TSR_SLOT_U | 1u << TSR_SLOT_T1);
  if (!err && rb->slow_out) err = tsr_run_refit_field(x, rb->slow_out);
  if (!err && rb->slow_acc) err = tsr_run_refit_field(x, rb->slow_acc);
  err = tsr_run_agree(x->comm, err);
  t[1] = MPI_Wtime();
  if (!err) err = tsr_run_agree(x->comm, x->be->migrate(x, &mp, x->slot[TSR_SLOT_U], nu));
  tsr_migrate_plan_free(&mp);
  if (err) {
    tsr_layout_free(next);
    return err;
  }
  t[2] = MPI_Wtime();
  x->slot[TSR_SLOT_T1] = x->slot[TSR_SLOT_U];
  x->slot[TSR_SLOT_U] = nu;
  err = tsr_run_refit_field(x, x->slot[TSR_SLOT_T1]);
  tsr_stage_coef_init(&x->desc.coef, x->c->model, x->c->param_value, x->h, nu);
  tsr_layout_free(&x->layout);
  x->layout = *next;
  memset(next, 0, sizeof *next);
  tsr_halo_plan_free(&x->plan);
  if (!err) err = tsr_halo_plan_build(&x->layout, x->rank, x->xghost, &x->plan);
  if (!err) tsr_run_split_shell(x, 0);
  free(rb->work);
  rb->work = NULL;
  t[3] = MPI_Wtime();
  if (!err) err = x->be->sync(x);
  t[4] = MPI_Wtime();
  if (!err) err = x->be->relayout(x);
  TSR_CALL(tsr_run_agree(x->comm, err));
  TSR_CALL(tsr_ckpt_writer_relayout(x->ckpt));
  t[5] = MPI_Wtime();
  /* the graphs hold the old fields' addresses */
  tsr_graph_destroy(&x->graph);
  TSR_CALL(tsr_run_agree(x->comm, tsr_graph_create(x, &x->graph)));
  t[6] = MPI_Wtime();
  for (int k = 0; k < MIGRATION_PHASES; ++k) phase[k] = t[k + 1] - t[k];
  MPI_Allreduce(MPI_IN_PLACE, phase, MIGRATION_PHASES, MPI_DOUBLE, MPI_MAX, x->comm);
  return TSR_OK;
}

static tsr_err add_record(struct tsr_run_rebal *rb, const tsr_run_ctx *x, int64_t step,
                          const tsr_rebalance_decision *d, double seconds,
                          const double phase[MIGRATION_PHASES]) {
  if (rb->nrec == rb->caprec) {
    int cap = rb->caprec ? 2 * rb->caprec : 8;
    record *r = realloc(rb->rec, (size_t)cap * sizeof *r);
    TSR_CHECK(r, TSR_ERR_MEMORY, "out of memory for the rebalancer's records");
    rb->rec = r;
    rb->caprec = cap;
  }
  record *r = &rb->rec[rb->nrec];
  memset(r, 0, sizeof *r);
  r->step = step;
  r->d = *d;
  r->seconds = seconds;
  memcpy(r->phase, phase, sizeof r->phase);
  r->before = malloc((size_t)x->size * sizeof *r->before);
  r->after = malloc((size_t)x->size * sizeof *r->after);
  r->boxes = malloc((size_t)x->size * sizeof *r->boxes);
  if (!r->before || !r->after || !r->boxes) {
    free(r->before);
    free(r->after);
    free(r->boxes);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory for the rebalancer's records");
  }
  for (int k = 0; k < x->size; ++k) {
    r->before[k] = rb->gtime[k];
    r->after[k] = NAN;
    r->boxes[k] = x->layout.boxes[tsr_layout_box_of(&x->layout, k)];
  }
  rb->nrec++;
  return TSR_OK;
}

tsr_err tsr_run_rebalance_after_step(tsr_run_ctx *x, int64_t step, char *line, size_t size) {
  struct tsr_run_rebal *rb = x->rb;
  line[0] = '\0';
  if (!rb->enabled) return TSR_OK;
  if (timed_step(x, step)) rb->timed++;
  int64_t n = step + 1;
  /* the decision this step's window leads to, and where that window began */
  int64_t dec = ((n - 1) / rb->every + 1) * rb->every, begins = dec - rb->window;
  if (rb->varies && rb->start_step < begins &&
      ((n == begins && timed_step(x, step + 1)) || (timed_step(x, step) && n < dec))) {
    /* the window starts, or started without a map (the run's first, a restart): where the
     * costly cells are now */
    int64_t w;
    TSR_CALL(tsr_run_agree(x->comm, count_work(x, (double)n * x->dt, &rb->start, &w)));
    TSR_CALL(tsr_rebalance_costmap_sum(x->comm, &rb->start));
    rb->start_step = n;
  }
  if (n % rb->every != 0 || n >= x->nsteps) return TSR_OK;
  double seconds = rb->time;
  if (x->be->time_read) TSR_CALL(tsr_run_agree(x->comm, x->be->time_read(x, &seconds)));
  int timed = rb->timed;
  /* with the CPU clock, the window's wall time over the slowest rank's CPU time: what a CPU
   * second of compute cost in wall seconds where ranks share cores (2 for 4 ranks on 2 idle
   * cores, 4-8 on loaded ones), so that a saving is weighed in the units of a migration,
   * which the wall clock times */
  double ratio[2] = {rb->window_t0 >= 0.0 ? MPI_Wtime() - rb->window_t0 : 0.0, rb->time};
  if (rb->cpu_clock && !x->be->time_read)
    MPI_Allreduce(MPI_IN_PLACE, ratio, 2, MPI_DOUBLE, MPI_MAX, x->comm);
  rb->time = 0.0;
  rb->window_t0 = -1.0;
  rb->timed = 0;
  int64_t work = 0;
  TSR_CALL(tsr_run_agree(x->comm, count_work(x, (double)n * x->dt, &rb->map, &work)));
  TSR_CALL(tsr_rebalance_gather(x->comm, timed ? seconds / timed : 0.0, work, &rb->map,
                                rb->gtime, rb->gwork));
  rb->decisions++;
  if (rb->nrec && isnan(rb->rec[rb->nrec - 1].after[0]))
    for (int k = 0; k < x->size; ++k) rb->rec[rb->nrec - 1].after[k] = rb->gtime[k];
  /* the map at the window's start (or a few steps into it), when it is this window's */
  int64_t span = n - rb->start_step;
  tsr_rebalance_measure m = {
      .nranks = x->size, .nsteps = 1, .time = rb->gtime, .work = rb->gwork, .map = &rb->map,
      .start = span >= 1 && span <= rb->window ? &rb->start : NULL, .span = (int)span,
      .model = &rb->model,
      .wall_ratio = rb->cpu_clock && ratio[1] > 0.0 ? ratio[0] / ratio[1] : 1.0};
  tsr_layout next;
  tsr_rebalance_decision d;
  TSR_CALL(tsr_rebalance_decide(&x->layout, &m, &rb->opts, &rb->state, &next, &d));
  if (rb->varies && rb->window == rb->every) {
    /* the next window starts from this state */
    memcpy(rb->start.cost, rb->map.cost, (size_t)rb->map.nblock * sizeof *rb->map.cost);
    rb->start_step = n;
  }
  if (rb->decisions > rb->caphist) {
    int cap = rb->caphist ? 2 * rb->caphist : 64;
    double(*h)[HIST] = realloc(rb->hist, (size_t)cap * sizeof *h);
    TSR_CHECK(h, TSR_ERR_MEMORY, "out of memory for the rebalancer's history");
    rb->hist = h;
    rb->caphist = cap;
  }
  double *h = rb->hist[rb->decisions - 1];
  h[0] = (double)n, h[1] = d.imbalance, h[2] = d.predicted, h[3] = d.rebalance;
  h[4] = d.saving, h[5] = d.migration_cost, h[6] = d.expected, h[7] = d.margin, h[8] = d.beta;
  char what[1024];
  tsr_rebalance_describe(&d, what, sizeof what);
  if (!d.rebalance) {
    snprintf(line, size, "step %" PRId64 ": %s", n, what);
    return TSR_OK;
  }
  double t0 = MPI_Wtime(), phase[MIGRATION_PHASES];
  TSR_CALL(relayout(x, &next, phase));
  double mine = MPI_Wtime() - t0, most = mine;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, x->comm);
  tsr_rebalance_note_migration(&rb->state, most, d.bytes_moved,
                               d.migration_measured ? d.migration_cost : 0.0);
  snprintf(line, size, "step %" PRId64 ": %s; migrated in %.3g ms", n, what, 1e3 * most);
  return add_record(rb, x, n, &d, most, phase);
}

/* Whether boxes (one per rank) tile the run's grid with the ghost width every box needs. */
static int boxes_fit(const tsr_run_ctx *x, const tsr_box *boxes) {
  int64_t sum = 0;
  for (int r = 0; r < x->size; ++r) {
    const tsr_box *b = &boxes[r];
    if (!tsr_box_contains(&x->layout.global, b)) return 0;
    for (int d = 0; d < x->c->dim; ++d)
      if (tsr_box_len(b, d) < x->ghost) return 0;
    for (int s = 0; s < r; ++s) {
      tsr_box i = tsr_box_intersect(b, &boxes[s]);
      if (!tsr_box_empty(&i)) return 0;
    }
    sum += tsr_box_cells(b);
  }
  return sum == tsr_box_cells(&x->layout.global);
}

tsr_err tsr_run_rebalance_restart(tsr_run_ctx *x, const char *path) {
  struct tsr_run_rebal *rb = x->rb;
  if (!rb->enabled) return TSR_OK;
  tsr_box *boxes = malloc((size_t)x->size * sizeof *boxes);
  tsr_err err = boxes ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                             "out of memory reading a checkpoint's boxes");
  TSR_CALL(tsr_run_agree(x->comm, err));
  int found = 0, has_state = 0;
  tsr_rebalance_state st;
  err = tsr_checkpoint_read_layout(x->comm, path, x->size, boxes, &found, &st, &has_state);
  if (err && x->rank == 0) /* they only place the cells: any boxes give bitwise the same run */
    fprintf(stderr, "tessera: restart: the boxes stored in %s do not read (%s); continuing on a "
            "fresh partition\n", path, tsr_err_message());
  if (err || !found || !boxes_fit(x, boxes)) {
    free(boxes);
    return TSR_OK;
  }
  if (has_state) rb->state = st;
  tsr_layout next;
  err = tsr_run_agree(x->comm, tsr_layout_copy(&x->layout, &next));
  if (err) {
    free(boxes);
    return err;
  }
  for (int r = 0; r < x->size; ++r) {
    next.boxes[r] = boxes[r];
    next.owner[r] = r;
  }
  free(boxes);
  int64_t moved = tsr_rebalance_cells_moved(&x->layout, &next);
  if (moved == 0) {
    tsr_layout_free(&next);
    return TSR_OK;
  }
  if (x->rank == 0 && !x->opts.quiet) {
    printf("restart: continuing on the boxes %s was written on (%" PRId64 " cells moved from "
           "a fresh partition)\n", path, moved);
    fflush(stdout);
  }
  double phase[MIGRATION_PHASES];
  return relayout(x, &next, phase);
}

const tsr_rebalance_state *tsr_run_rebalance_state(const tsr_run_ctx *x) {
  return x->rb && x->rb->enabled ? &x->rb->state : NULL;
}

static void json_times(tsr_json *j, const char *key, const double *t, int n) {
  tsr_json_array_begin(j, key);
  for (int k = 0; k < n; ++k) {
    if (isnan(t[k])) tsr_json_string(j, NULL, "not measured");
    else tsr_json_number(j, NULL, t[k]);
  }
  tsr_json_array_end(j);
}

void tsr_run_rebalance_report(const tsr_run_ctx *x, tsr_json *j) {
  const struct tsr_run_rebal *rb = x->rb;
  if (!rb || !rb->enabled) return;
  tsr_json_object_begin(j, "rebalance");
  tsr_json_int(j, "every", rb->every);
  tsr_json_int(j, "window", rb->window);
  tsr_json_number(j, "threshold", rb->opts.threshold);
  /* CPU ranks' clock (GPUs time with CUDA events whatever it says) */
  tsr_json_string(j, "clock", rb->cpu_clock ? "cpu" : "wall");
  tsr_json_int(j, "decisions", rb->decisions);
  tsr_json_int(j, "migrations", rb->state.migrations);
  /* rank 0's: the ranks start on boxes of about one size */
  tsr_json_int(j, "field_reserve_bytes", (int64_t)rb->reserved);
  if (rb->decisions) json_times(j, "last_compute_per_step", rb->gtime, x->size);
  /* the work model at the last decision (decomp/rebalance.h) */
  tsr_json_object_begin(j, "work_model");
  tsr_json_number(j, "beta", rb->model.beta);
  tsr_json_int(j, "windows", rb->model.windows);
  tsr_json_object_end(j);
  /* every decision: [step, imbalance measured over the window before it, predicted for the
   * boxes it chose, 1 when it migrated, the predicted saving over the next window and the
   * migration's cost it was weighed against (seconds), the imbalance expected on the current
   * boxes over the next window, the margin added to it, the work model's beta]: what a user
   * needs to see why a measured imbalance did or did not move cells */
  tsr_json_array_begin(j, "history_columns");
  static const char *const cols[HIST] = {"step",     "imbalance", "predicted",
                                         "migrated", "saving_s",  "migration_cost_s",
                                         "expected", "margin",    "beta"};
  for (int k = 0; k < HIST; ++k) tsr_json_string(j, NULL, cols[k]);
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "history");
  for (int i = 0; i < rb->decisions; ++i) {
    tsr_json_array_begin(j, NULL);
    tsr_json_int(j, NULL, (int64_t)rb->hist[i][0]);
    tsr_json_number(j, NULL, rb->hist[i][1]);
    tsr_json_number(j, NULL, rb->hist[i][2]);
    tsr_json_int(j, NULL, (int64_t)rb->hist[i][3]);
    for (int k = 4; k < HIST; ++k) tsr_json_number(j, NULL, rb->hist[i][k]);
    tsr_json_array_end(j);
  }
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "events");
  for (int i = 0; i < rb->nrec; ++i) {
    const record *r = &rb->rec[i];
    tsr_json_object_begin(j, NULL);
    tsr_json_int(j, "step", r->step);
    tsr_json_number(j, "imbalance_before", r->d.imbalance);
    tsr_json_number(j, "imbalance_predicted", r->d.predicted);
    tsr_json_int(j, "cells_moved", r->d.cells_moved);
    tsr_json_int(j, "bytes_moved_busiest_rank", r->d.bytes_moved);
    tsr_json_number(j, "migration_seconds", r->seconds);
    tsr_json_object_begin(j, "migration_phases_seconds");
    for (int k = 0; k < MIGRATION_PHASES; ++k) tsr_json_number(j, phase_names[k], r->phase[k]);
    tsr_json_object_end(j);
    tsr_json_number(j, "migration_cost_predicted", r->d.migration_cost);
    json_times(j, "compute_per_step_before", r->before, x->size);
    json_times(j, "compute_per_step_after", r->after, x->size);
    tsr_json_array_begin(j, "boxes");
    for (int k = 0; k < x->size; ++k) {
      tsr_json_array_begin(j, NULL);
      for (int d = 0; d < 3; ++d) tsr_json_int(j, NULL, r->boxes[k].lo[d]);
      for (int d = 0; d < 3; ++d) tsr_json_int(j, NULL, r->boxes[k].hi[d]);
      tsr_json_array_end(j);
    }
    tsr_json_array_end(j);
    tsr_json_object_end(j);
  }
  tsr_json_array_end(j);
  tsr_json_object_end(j);
}
