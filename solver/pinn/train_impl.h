/* Private to solver/pinn/train*.c: the trainer's pieces, which call each other.
 *   train.c           set-up (backend, decomposition, points, network, exchange, restart) and
 *                     the run's end (profile, outputs)
 *   train_loop.c      the loop: Adam's iterations in chunks between log points, checkpoints,
 *                     resampling, faults, signals and --walltime
 *   train_lbfgs.c     an L-BFGS phase: each rank's own L-BFGS, stepped in lockstep
 *   train_phases.c    which phase and which causal slab an iteration is in, the draw of points,
 *                     and a causal run's handoff from slab to slab
 *   train_ckpt.c      checkpoints and restarts (parameters, moments, L-BFGS's state, history)
 *   train_progress.c  the history rows agreed over the ranks, the error, the progress lines
 * Every function takes the trainer's state (solver/pinn/train.h); "collective" is over x->comm. */
#ifndef TSR_PINN_TRAIN_IMPL_H
#define TSR_PINN_TRAIN_IMPL_H

#include "io/progress.h"
#include "solver/pinn/train.h"
#include "solver/stop.h"

/* ---- train_phases.c ---- */

/* A phase of training: Adam's iterations, or L-BFGS's after them; [start, end) of the run's
 * iterations; with causal slabs each slab has both, in turn. */
typedef struct {
  int lbfgs;
  int64_t start, end;
} tsr_pinn_phase;

tsr_pinn_phase tsr_pinn_phase_at(const tsr_pinn_ctx *x, int64_t it);
uint64_t tsr_pinn_draw_at(const tsr_pinn_ctx *x, int64_t it);
int64_t tsr_pinn_local_it(const tsr_pinn_ctx *x, int64_t it);
int tsr_pinn_active_slab(const tsr_pinn_ctx *x, int64_t it);
int tsr_pinn_trains(const tsr_pinn_ctx *x, int64_t it);
/* The batch of draw k into the engine (rebuilt where k is not the batch's). */
tsr_err tsr_pinn_set_draw(tsr_pinn_ctx *x, uint64_t k);
/* A causal run's handoff to slab k > 0 (transfer: with the parameters). Collective. */
tsr_err tsr_pinn_handoff(tsr_pinn_ctx *x, int k, int transfer);

/* ---- train_ckpt.c ---- */

/* The checkpoint of iteration it, written by rank 0. Collective. */
tsr_err tsr_pinn_checkpoint(tsr_pinn_ctx *x, int64_t it);
/* x->opts.restart read into every rank's engine, history and L-BFGS state. Collective. */
tsr_err tsr_pinn_restart(tsr_pinn_ctx *x);
/* The restart's iteration against this run's phases (TSR_ERR_INPUT with what to change). */
tsr_err tsr_pinn_check_restart_phase(const tsr_pinn_ctx *x);

/* ---- train_progress.c ---- */

/* The error's points and exact values over this rank's box (x->Xe, x->ue; none without exact). */
tsr_err tsr_pinn_error_points(tsr_pinn_ctx *x);
tsr_err tsr_pinn_add_row(tsr_pinn_ctx *x, const double *row);
/* The stop's message for a loss term that is not finite in one of n rows of terms. */
tsr_err tsr_pinn_check_finite(const tsr_pinn_ctx *x, const double *rows, int n, int64_t it);
/* The history row of iteration it from every rank's figures (one allgather). Collective. */
tsr_err tsr_pinn_gather_row(tsr_pinn_ctx *x, const double *terms, int64_t it, int is_log,
                            tsr_err local, double *row);
int tsr_pinn_is_log(const tsr_pinn_ctx *x, int64_t it, int64_t total, int force);
/* At a log point: row added to the history, its line shown, a stalled term warned of. */
tsr_err tsr_pinn_log_point(tsr_pinn_ctx *x, double *row, int64_t it, int64_t total,
                           tsr_progress *pg, int *warned, int force);
/* The start line: backend, network, points, ranks. */
void tsr_pinn_summary(const tsr_pinn_ctx *x, tsr_progress *pg);

/* ---- train_loop.c ---- */

/* The signal / --walltime poll after iteration it (a checkpoint and the command that continues
 * where it stops: *why). Collective. */
tsr_err tsr_pinn_stop_here(tsr_pinn_ctx *x, tsr_stop *st, int64_t it, double chunk_s, int *why);
/* Training from x->it0 to x->total (or a stop); res->steps, res->loss. Collective. */
tsr_err tsr_pinn_loop(tsr_pinn_ctx *x, tsr_run_result *res);

/* ---- train_lbfgs.c ---- */

/* The L-BFGS phase [start, end) from *pit (where it ended on return). Collective. */
tsr_err tsr_pinn_lbfgs_phase(tsr_pinn_ctx *x, int64_t *pit, int64_t start, int64_t end,
                             tsr_progress *pg, int *warned, tsr_stop *st, tsr_run_result *res);

#endif
