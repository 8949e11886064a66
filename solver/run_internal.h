/* State of a run shared by the driver's files (solver/run.c, solver/report.c). Private. */
#ifndef TSR_RUN_INTERNAL_H
#define TSR_RUN_INTERNAL_H

#include <stdio.h>

#include "decomp/halo.h"
#include "decomp/rebalance.h"
#include "io/checkpoint.h"
#include "io/expr.h"
#include "io/json.h"
#include "io/snapshot.h"
#include "kernels/stage.h"
#include "solver/backend.h"
#include "solver/boundary.h"
#include "solver/integrate.h"
#include "solver/run.h"
#include "solver/stop.h"

enum { PH_SETUP, PH_INIT, PH_COMPUTE, PH_HALO_WAIT, PH_BOUNDARY, PH_SOURCE, PH_MONITOR,
       PH_OUTPUT, PH_COUNT };
extern const char *const tsr_run_phase_names[PH_COUNT];

typedef struct tsr_run_ctx {
  const tsr_case *c;
  const tsr_backend_ops *be;
  void *be_state;       /* the backend's own (streams, communicators, device buffers) */
  int be_ready;         /* setup succeeded: teardown is due */
  tsr_run_opts opts;
  const char *out_dir;
  MPI_Comm comm;
  int rank, size;
  MPI_Comm device_comm; /* the ranks that pick their GPUs together (all those of the node's
                           job, even when comm is a part of them); MPI_COMM_NULL: comm */
  tsr_layout layout;    /* filled before tsr_run_setup (parareal): used as given */
  tsr_box box;
  int radius;           /* the model's stencil radius */
  int fuse;             /* time.fuse: steps per exchange (explicit method; else 1) */
  int ghost;            /* the fields' ghost width: radius, or fuse x stages x radius (auto:
                           that of the largest fuse it tries) */
  int xghost;           /* the width the exchange fills: ghost, or the radius while fuse is 1 */
  int exchanged[6];     /* faces of the box whose ghosts peers (or periodic images) fill */
  tsr_box reach;        /* the box grown by ghost - radius on those faces: every cell a fused
                           stage may update (the box itself when fuse is 1) */
  int fuse_pos, fuse_len; /* the step being issued is step fuse_pos of a block of fuse_len
                             steps between two exchanges (fuse > 1) */
  struct tsr_fuse_auto *fa; /* time.fuse: auto while it measures (solver/run_fuse.c), else NULL */
  int tile_max;         /* time tiles (solver/run_tiles.c): most steps a pass takes, 0: none */
  const char *tile_why; /* why there are none (NULL: there are) */
  int tile_left;        /* steps of the pass issued that are still to be counted off */
  int64_t tile_passes, tile_steps; /* passes issued and the steps they took */
  tsr_halo_plan plan;
  tsr_box interior;     /* cells updated while the exchange runs */
  tsr_box shell[6];     /* cells updated after it: slabs along the exchanged faces */
  int nshell;
  tsr_halo *halo;
  tsr_field *slot[TSR_NSLOT];
  int flip;             /* the state and result slots were swapped an odd number of times */
  tsr_field *acc, *src;
  tsr_field *exact;     /* exact solution at the monitor's time, when the case gives one */
  double *scratch;      /* host backend: owned cells of one component, expression values */
  double *coords;       /* host backend: cell centres along x, then y, then z, of the box */
  tsr_bc *bc;
  tsr_expr *init_expr[TSR_MAX_COMP];  /* initial conditions */
  tsr_expr *src_expr[TSR_MAX_COMP];   /* sources (NULL: none) */
  tsr_expr *exact_expr[TSR_MAX_COMP]; /* exact solution (NULL: none) */
  int src_timed, src_valid;
  double src_at;
  tsr_scheme_plan scheme;
  tsr_stage_desc desc;
  double h[3], cellvol;
  double dt, dt_stable;
  int64_t nsteps;
  int steps_by_time;    /* 1: the step count is not known in advance (method implicit's
                           adaptive steps): nsteps is time.end / time.dt, a guess, and monitor
                           lines and progress go by t against time.end */
  int64_t start_step;   /* 0, or the checkpoint's step on a restart */
  double phase[PH_COUNT];
  tsr_run_outdir outdir; /* the directories made for out_dir (rank 0), removed on failure */
  tsr_snapshot_series *snap; /* output.snapshot_every: the series being written, else NULL */
  struct tsr_ckpt_writer *ckpt; /* checkpoints (solver/ckpt_writer.h), NULL when none */
  struct tsr_graph *graph; /* CUDA graphs of whole steps (solver/graph.h), NULL when none */
  tsr_stop stop;         /* signals and the wall time (solver/stop.h); comm NULL until polled */
  int restart_same;      /* the checkpoint read has this case's solution (its own, or a run of it
                            that ended earlier): its dt goes on (tsr_run_restart_accept) */
  int64_t ckpt_step;     /* the step of the last checkpoint this run saved (0: none yet) */
  double stop_last;      /* MPI_Wtime of the last stop poll, and the longest gap between two */
  double stop_gap;
  const double *tdev;   /* while a step is captured: device array of its stage times */
  int stage;            /* the stage being issued (its index in tdev) */
  int64_t step;         /* the step being issued (the loop's; from 0) */
  struct tsr_run_rebal *rb; /* the rebalancer (solver/run_rebalance.c), NULL when off */
  /* the method (solver/method.h) and its own state; the scheme's name for the report where
   * it is not scheme.name (method implicit: PETSc's) */
  const struct tsr_method_ops *m;
  void *method;
  const char *scheme_name;
} tsr_run_ctx;

/* Whether a step of x depends on its time: a source or a boundary value that varies with t.
 * Where it does not, values evaluated once serve every step (CUDA graphs without a time
 * kernel, parareal's batches and one-launch coarse steps, time tiles of the coarse grid). */
static inline int tsr_run_timed(const tsr_run_ctx *x) {
  int t = x->src_timed;
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i) t |= tsr_bc_face_timed(x->bc, i);
  return t;
}

/* ---- the driver's pieces that every method on the grid shares (solver/run.c) ------------ */

/* Zeroes *x and fills the case, options, output directory, communicator and its rank/size. */
void tsr_run_ctx_init(tsr_run_ctx *x, const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts);

/* Ends a run: stops the watchdog, removes the directories it made for the output directory
 * when err (those still empty), and frees everything x holds (tsr_run_ctx_free). */
void tsr_run_ctx_end(tsr_run_ctx *x, tsr_err err);
void tsr_run_ctx_free(tsr_run_ctx *x);

/* The backend: host or cuda from the case's backend, --backend and the GPUs seen. Collective. */
tsr_err tsr_run_choose_backend(tsr_run_ctx *x);

/* Set-up shared by the methods that step fields: the partition (x->layout, x->box), the halo
 * plan and shell split, the backend, the expressions, the fields on the box (slots U, T1, T2,
 * source, exact), the boundary faces and the time plan (x->dt, x->nsteps, x->dt_stable from
 * time.dt/end/steps). Not collective by itself (the caller agrees on errors). */
tsr_err tsr_run_setup(tsr_run_ctx *x);

/* The halo peers this rank waits for (at most max, into peers), other than itself: their
 * count. A method's peers (solver/method.h) for the watchdog. */
int tsr_run_halo_peers(const tsr_run_ctx *x, int *peers, int max);

/* Creates the output directory (rank 0) and checks that it takes files. Collective. */
tsr_err tsr_run_prepare_outdir_ctx(tsr_run_ctx *x);

/* U from the initial conditions. */
tsr_err tsr_run_initial(tsr_run_ctx *x);

/* The source field at time t (only when it depends on t and t changed). */
tsr_err tsr_run_source_eval(tsr_run_ctx *x, double t);

/* The monitor's norms of U (and its error against exact: at t), reduced over all ranks. */
typedef struct {
  double min[TSR_MAX_COMP], max[TSR_MAX_COMP], sum[TSR_MAX_COMP], sq[TSR_MAX_COMP];
  double esq[TSR_MAX_COMP], emax[TSR_MAX_COMP];
  int has_exact;
} tsr_run_norms;
/* Errors: as the backend's; TSR_ERR_INPUT when an exact solution is not finite at some cell
 * (its key, the point, t). Collective. */
tsr_err tsr_run_monitor(tsr_run_ctx *x, double t, tsr_run_norms *nm);
/* Looks for a point of this rank's box where e (the case's ce) is not finite at t: the error
 * naming ce's key, the point and t when there is one. Host evaluation, for diagnoses only.
 * solver/run_finite.c, as the two below. */
tsr_err tsr_run_find_nonfinite(const tsr_run_ctx *x, const tsr_expr *e, const tsr_case_expr *ce,
                               double t);
/* 1 when every component's min and max are finite. */
int tsr_run_norms_finite(const tsr_run_ctx *x, const tsr_run_norms *nm);
/* The case's expressions, when a state became non-finite: a run's state at step 0 (initial 1)
 * comes from the initial values (at t1 = 0); a later one from the boundary values and sources,
 * looked at at t1 (the state's time) and t0 (the last time it was finite). One that is not
 * finite on some rank's part of the grid is TSR_ERR_INPUT naming its key, a point and the
 * time; TSR_OK when none is: the step is the suspect, which the caller says. Collective. */
tsr_err tsr_run_blame_expressions(tsr_run_ctx *x, int initial, double t0, double t1);
/* The expressions that feed a state at t on this rank's box (initial: the initial values;
 * else the boundary values and sources), as tsr_run_blame_expressions but not collective. */
tsr_err tsr_run_expressions_finite(const tsr_run_ctx *x, int initial, double t);
/* The monitor line of step (of x->nsteps) at t, into buf. */
void tsr_run_monitor_line(const tsr_run_ctx *x, int64_t step, double t, const tsr_run_norms *nm,
                          double cps, char *buf, size_t n);
/* The norms into the result. */
void tsr_run_result_norms(const tsr_run_ctx *x, const tsr_run_norms *nm, tsr_run_result *res);

/* The grid's description in the files (final.h5, checkpoints, snapshots) at t and step: the
 * fields in the run's precision, so that a single-precision restart reads back the exact
 * values it wrote. */
tsr_grid_meta tsr_run_grid_meta(const tsr_case *c, double t, int64_t step);

/* Snapshots (output.snapshot_every): the series, with the initial state; one of U at step. */
tsr_err tsr_run_start_snapshots(tsr_run_ctx *x);
tsr_err tsr_run_write_snapshot(tsr_run_ctx *x, int64_t step, double t);

/* The end of a run that completed: final.h5 (U at res->t_final, step x->nsteps, dt x->dt) and
 * final.xmf, then report.json with the phases' times. Collective. */
tsr_err tsr_run_finish(tsr_run_ctx *x, tsr_run_result *res);

/* The partitioner options the case asks for. */
tsr_part_opts tsr_run_part_opts(const tsr_case *c);

/* Whether a checkpoint may continue this run's case (a tsr_checkpoint_accept; arg is the
 * tsr_run_ctx): the checkpoint's grid must be this case's; a checkpoint of another case (its
 * case hash differs) is refused with the list of keys that differ, or with opts.restart_force
 * taken after rank 0 warns with that list; a different model never. Collective.
 * solver/run_restart.c. */
tsr_err tsr_run_restart_accept(const tsr_checkpoint_info *info, void *arg);

/* Refuses a checkpoint whose step is past this run's last (x->nsteps), saying what to do. Not
 * collective: every rank read the same step. solver/run_restart.c. */
tsr_err tsr_run_restart_within(const tsr_run_ctx *x, const tsr_checkpoint_info *info);

/* report.json with the phases' times (their slowest rank's and their mean), written by rank 0.
 * Collective. solver/run.c. */
tsr_err tsr_run_report(tsr_run_ctx *x, const tsr_run_result *res);

/* Writes report.json into the output directory (rank 0 only). */
tsr_err tsr_report_write(const tsr_run_ctx *x, const tsr_run_result *res, const double *phase_max,
                         const double *phase_mean);

/* Whether the run stops now (solver/stop.h; solver/run_stop.c): now = 1 decides on the spot
 * (before the first step), else from the poll posted a step ago. Collective. */
tsr_err tsr_run_stop_poll(tsr_run_ctx *x, int now, int *why);

/* The stop at step `step` (time t): waits for the checkpoint in flight, writes one of this
 * step unless that was it, and rank 0 says why the run stopped and how to continue.
 * Collective. Errors: those of the checkpoint writer. */
tsr_err tsr_run_stop_checkpoint(tsr_run_ctx *x, int64_t step, double t, int why);

/* Rank 0's message after a stop's checkpoint at `step` (of: " of N" or ""): why, the file, and
 * the command that continues the run. Shared by the methods that stop on signals. */
void tsr_run_stop_say(const tsr_run_ctx *x, int64_t step, const char *of, double t, int why,
                      double seconds);

/* The fields of the run on x->box (slots, accumulator, exact solution, source) and the
 * boundary conditions that depend on the box: set-up, and again after a migration (U then
 * arrives on its own). A field that exists is re-shaped in place (its allocation kept when it
 * holds the new box) and zeroed, as a new one would be (tsr_run_refit_field). Skips the slots
 * whose bit (1u << slot) is in skip. The caller sets the stage coefficients (their strides)
 * once U is on the box. solver/run.c. */
tsr_err tsr_run_box_fields(tsr_run_ctx *x, unsigned skip);

/* f re-shaped onto x->box and zeroed (the backend's zero: on GPUs ordered before the next
 * step, beside a migration). */
tsr_err tsr_run_refit_field(tsr_run_ctx *x, tsr_field *f);

/* The faces of x->box that are exchanged and x->reach; then the cells a stage that begins an
 * exchange updates, x->box grown by grow on those faces, split into the interior (no ghost
 * read) and the shell slabs. solver/run.c. */
void tsr_run_split_shell(tsr_run_ctx *x, int grow);

/* The ghost width of the case's fields: the stencil radius, times the stages of time.fuse
 * steps when it is above 1. */
int tsr_run_ghost_width(const tsr_case *c);

/* time.fuse: every box of L must be at least as wide as the ghosts along the axes it exchanges
 * (else a ghost region would need cells of a neighbour's neighbour). TSR_ERR_INPUT naming the
 * thinnest box and the largest fuse that fits; the same on every rank. */
tsr_err tsr_run_check_fuse(const tsr_case *c, const tsr_layout *L);

/* time.fuse: auto: the largest fuse it tries on L (a power of two up to TSR_FUSE_AUTO_MAX
 * whose ghosts fit every box), 1 when none above 1 fits, 0 when L exchanges no face. */
int tsr_run_fuse_auto_max(const tsr_case *c, const tsr_layout *L);

/* The box grown by g on its exchanged faces. solver/run.c. */
tsr_box tsr_run_grown(const tsr_run_ctx *x, int g);

/* Steps between two monitor lines (output.monitor_every, or a twentieth of the run). */
int64_t tsr_run_monitor_every(const tsr_run_ctx *x);

/* ---- time tiles: several steps per pass over memory (solver/run_tiles.c) ---------------- */

/* Why time tiles cannot take x's steps on any backend, with a scheme that passes take (forward
 * Euler, SSP-RK2, SSP-RK3: taken) or not; NULL where they can. Reads the case, x->radius and whether the
 * source and boundary values depend on t, so it may be asked before x's set-up of the fields
 * (parareal asks it of the coarse grid before choosing its ghost width). */
const char *tsr_run_tiles_refused(const tsr_run_ctx *x, int taken);

/* After set-up: x->tile_max (0 with the reason in x->tile_why where they do not apply). */
void tsr_run_tiles_setup(tsr_run_ctx *x);

/* At place pos of the current fused block: the steps of the pass that starts there (an SSP
 * pass may take one), -1 where the step goes stage by stage, or 0 when pos lies inside a pass
 * already issued. The same on every rank and for every block of the same length. */
int tsr_run_tiles_pass(const tsr_run_ctx *x, int pos);

/* A fused block of len steps from step, shortened so that no pass ends past a step whose
 * state the run reads (monitors, snapshots, checkpoints, an injected fault). */
int tsr_run_tiles_block_len(const tsr_run_ctx *x, int64_t step, int len);

/* Issues the pass of m steps at place pos of the block from in (the state, its physical
 * ghosts filled) into out (the scheme's result slot); d's kind is the scheme's last stage's. */
tsr_err tsr_run_tiles_issue(tsr_run_ctx *x, const tsr_stage_desc *d, int pos, int m,
                            tsr_field *in, tsr_field *out);

/* report.json's "time_tiles" member. */
void tsr_run_tiles_report(const tsr_run_ctx *x, tsr_json *j);

/* ---- time.fuse: auto (solver/run_fuse.c) ----------------------------------------------- */

/* After the backend's and the time tiles' set-up, with time.fuse: auto: x->fa, the
 * measurement of fuse 1, 2, 4, ... up to x's largest on the run's first steps (each with an
 * exchange of its own depth and its time tiles; where no face is exchanged, the odd fuses up
 * to the longest pass), or x->fuse fixed at 1 with the reason when there is nothing to choose
 * (no exchanged face and no time tiles, boxes too thin, too few steps, a rebalancing decision
 * too soon). Collective. */
tsr_err tsr_run_fuse_auto_create(tsr_run_ctx *x);

/* Whether step `step` is one of the measurement's (issued plainly, not as a CUDA graph). */
int tsr_run_fuse_auto_busy(const tsr_run_ctx *x);

/* After step `step` (its block's bookkeeping done): at the end of a candidate's steps, its
 * time; after the last, the choice (x->fuse, the exchange of its depth), with the decision's
 * log line in line (else line is empty). Collective. */
tsr_err tsr_run_fuse_auto_after_step(tsr_run_ctx *x, int64_t step, char *line, size_t size);

/* report.json's "fuse_auto" member (rank 0): the candidates, their seconds per step and time
 * tile passes, the choice and why. Nothing without time.fuse: auto. */
void tsr_run_fuse_auto_report(const tsr_run_ctx *x, tsr_json *j);

/* Frees the measurement's exchanges and plans (before the backend's teardown). */
void tsr_run_fuse_auto_free(tsr_run_ctx *x);

/* ---- the rebalancer (solver/run_rebalance.c) ------------------------------------------ */

/* Sets up x->rb when the case rebalances (rebalance.enabled, several ranks) or slows a rank
 * down (debug.slowdown); else leaves it NULL. After set-up and the backend's prepare. */
tsr_err tsr_run_rebalance_create(tsr_run_ctx *x);
void tsr_run_rebalance_free(tsr_run_ctx *x);

/* Whether step `step` (from 0) is issued plainly instead of as a CUDA graph: a timed step of
 * the rebalancer's window or a step of debug.slowdown. The same on every rank. */
int tsr_run_rebalance_plain(const tsr_run_ctx *x, int64_t step);

/* Around a stage's compute on the stream of the interior (shell 0) or of the shell (1): end 0
 * before the stage call, 1 after it, with the stage's arguments. Times the compute at the
 * rebalancer's timed steps (device events, or the host's clock on CPU ranks) and, on the rank
 * and steps of debug.slowdown, repeats the stage into scratch fields before the end mark. */
tsr_err tsr_run_rebalance_mark(tsr_run_ctx *x, int shell, int end, const tsr_stage_desc *d,
                               const tsr_box *region, const tsr_field *in, const tsr_field *base,
                               const tsr_field *src);

/* After step `step` completed (U holds the state at step + 1): at a decision step, shares the
 * figures, decides and migrates; line gets the decision's log line (empty when there was
 * none). Collective. */
tsr_err tsr_run_rebalance_after_step(tsr_run_ctx *x, int64_t step, char *line, size_t size);

/* After a restart on the same rank count: the checkpoint's boxes (a rebalanced partition) and
 * the rebalancer's state, migrating U to them. Collective. */
tsr_err tsr_run_rebalance_restart(tsr_run_ctx *x, const char *path);

/* What checkpoints record of the rebalancer (NULL when it is off). */
const tsr_rebalance_state *tsr_run_rebalance_state(const tsr_run_ctx *x);

/* report.json's "rebalance" member (rank 0): the settings, and per decision that migrated the
 * step, the ranks' compute times before and after, and the boxes. Nothing when it is off. */
void tsr_run_rebalance_report(const tsr_run_ctx *x, tsr_json *j);

#endif
