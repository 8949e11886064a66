/* The implicit method's run, shared by solver/implicit/run_petsc.c (PETSc's set-up, the TS
 * and its step loop) and solver/implicit/state_petsc.c (checkpoints, final.h5 and restart,
 * TSBDF's history with them). Private to solver/implicit/. */
#ifndef TSR_IMPLICIT_IMPL_H
#define TSR_IMPLICIT_IMPL_H

#include <petscts.h>
#include <stdint.h>

#include "io/progress.h"
#include "solver/implicit/operator.h"
#include "solver/run_internal.h"

typedef struct {
  tsr_run_ctx *x;
  tsr_implicit_op *op;
  TS ts;
  Vec U;
  Mat P, Jrhs;             /* the TS's matrix; a linear model's dF/dU, assembled once */
  int linear, imex, adaptive;
  int jac_ready;
  double last_shift;
  tsr_err err;             /* an error of a callback, with its message set */
  /* options: the case's inserted into PETSc's database (cleared at the end) */
  int ninserted;
  int checked;             /* the unused-options check was made (after the first step) */
  /* progress */
  tsr_progress pg;
  int64_t every;
  double cells, start, t_prev, dt_last;
  double t_ok;             /* the time of the last monitor line with a finite state */
  PetscInt snes_prev, ksp_prev, snes_max, ksp_max;
  int64_t last_line;       /* the step of the last monitor line */
  tsr_run_norms nm;
  /* what the report says */
  char ts_type[64], snes_type[64], ksp_type[64], pc_type[64], arkimex_type[64];
  char pc_hypre_type[64];  /* hypre's preconditioner ("boomeramg"), "" for another PC */
  PetscInt steps, snes_its, ksp_its, rejected;
  double solve_wall;
  double *state_buf;       /* a checkpoint's state split into components (state_get) */
  double solver_rest;      /* of solve_wall: what PETSc spent beside the callbacks, monitors
                              and snapshots */
  tsr_implicit_op_times times; /* the slowest rank's */
  /* checkpoints, restart and stopping early */
  PetscInt first;          /* the step the solve starts from (a restart's, else 0) */
  int64_t ckpt_step;       /* the step of the last checkpoint written (-1: none) */
  int nckpt;
  double ckpt_wall;        /* seconds the steps waited for checkpoints (the copy of the state
                              at the step; the writer's thread writes it meanwhile) */
  int stop_why;            /* a signal or the wall time stopped the run (TSR_STOP_*) */
  int64_t stop_step;
  double stop_t;
  int restored;            /* history vectors restored into TSBDF on a restart (0: none) */
  int64_t beat_step;       /* the step the linear iterations beat the watchdog with */
} impl;

/* The state of step `step` at t into final.h5 and its final.xmf, in the step loop: the run
 * has ended (after the checkpoint writer's last). Collective. */
tsr_err tsr_implicit_write_final(impl *m, int64_t step, double t);

/* A checkpoint of step `step` into the output directory, written in the background by the
 * explicit method's writer (solver/ckpt_writer.h): the state and BDF's history are copied here,
 * at the step, and the writer's thread writes them while TS steps on; latest names it once
 * complete, the newest output.keep stay. Collective. */
tsr_err tsr_implicit_checkpoint(impl *m, int64_t step, double t);

/* The state of a checkpoint (any decomposition and rank count) into U, and its time, step and
 * next dt; BDF's history into TS (after TSSetUp). Collective. */
tsr_err tsr_implicit_restart(impl *m, double *t0, double *next_dt);

/* PETSc's options (solver/implicit/options_petsc.c). The case's petsc: options into PETSc's
 * database, unless the command line gave them (those win); cleared at the end. */
tsr_err tsr_implicit_options_insert(impl *m);
void tsr_implicit_options_clear(impl *m);
/* The command line's options of the time plan (tsr_case_petsc_owned), refused: before
 * TSSetFromOptions reads them. */
tsr_err tsr_implicit_options_owned(impl *m);
/* An error of TSSetFromOptions: the option whose value PETSc refused, named where it was given
 * (exit 2); PETSc's own error when no option of the user's is in question. */
tsr_err tsr_implicit_options_refused(impl *m, PetscErrorCode pe, const char *call);
/* An option that no PETSc object has read after the first step, named where it was given. */
tsr_err tsr_implicit_options_left(impl *m);
/* An error of PETSc setting up or running the solvers (call: "TSSetUp", "TSSolve") that the
 * user's solver options can cause: input (exit 2), with the options and where each was given;
 * otherwise, or with no option given, PETSc's error as it is. */
tsr_err tsr_implicit_options_failed(impl *m, PetscErrorCode pe, const char *call);

#endif
