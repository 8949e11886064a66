/* What a method gives the run driver (DESIGN.md, Methods share one driver): tsr_run
 * (solver/driver.c) runs every method through the same sequence, and each method fills these
 * hooks. The driver owns what is the same for all of them: the context (case, options, output
 * directory, communicator), the watchdog, the output directory, the choice between a
 * checkpoint and the initial conditions (a relaunch that failed before its first checkpoint
 * starts over), the order of the calls, and the clean-up after an error. The methods own what
 * they advance and how: the explicit method's steps (solver/explicit.c), PETSc's TS
 * (solver/implicit/), the PINN's optimizer iterations (solver/pinn/) and parareal's iterations
 * over time slices (solver/parareal/).
 *
 * The sequence, on every rank of the run (each hook is collective except peers; the driver
 * agrees the errors of setup and start over the ranks, advance and finish agree their own):
 *   setup → the watchdog on peers → the output directory → start → advance → finish
 *   (finish only when the run wrote output and was not stopped), then teardown, also after an
 *   error. */
#ifndef TSR_METHOD_H
#define TSR_METHOD_H

#include "io/json.h"
#include "solver/run.h"

struct tsr_run_ctx;

typedef struct tsr_method_ops {
  /* Its own state (x->method) and set-up: the backend, the decomposition, what it advances,
   * its checks of the case and of --inject-fault. Leaves x->phase[PH_SETUP] to the driver. */
  tsr_err (*setup)(struct tsr_run_ctx *x);
  /* The ranks this rank would wait for in advance (the watchdog names them), at most max,
   * into peers; their count, or -1 where the method's waits are not watched. Not collective. */
  int (*peers)(const struct tsr_run_ctx *x, int *peers, int max);
  /* Its state at the start: from the checkpoint x->opts.restart names, or from the initial
   * conditions where that is NULL. */
  tsr_err (*start)(struct tsr_run_ctx *x);
  /* Advances to the end, or to a stop (a signal, the wall time: res->stopped, with the
   * checkpoint that continues it written), with its monitor lines, snapshots, checkpoints and
   * injected faults on the way; fills res. */
  tsr_err (*advance)(struct tsr_run_ctx *x, tsr_run_result *res);
  /* The end of a run that completed with output: final.h5 and final.xmf, report.json. */
  tsr_err (*finish)(struct tsr_run_ctx *x, tsr_run_result *res);
  /* What it adds to report.json (NULL: nothing). Rank 0, from tsr_report_write. */
  void (*report)(const struct tsr_run_ctx *x, tsr_json *j);
  /* Frees x->method and what the method made beside the context (NULL: nothing), after the
   * watchdog stopped and before the context is freed. Safe after any failed hook. */
  void (*teardown)(struct tsr_run_ctx *x);
} tsr_method_ops;

extern const tsr_method_ops tsr_method_explicit;  /* solver/explicit.c */
extern const tsr_method_ops tsr_method_implicit;  /* solver/implicit/ (refuses without PETSc) */
extern const tsr_method_ops tsr_method_pinn;      /* solver/pinn/train.c */
extern const tsr_method_ops tsr_method_parareal;  /* solver/parareal/parareal.c */

/* The method that runs case c: pinn, parareal (method explicit with time_slices > 1),
 * implicit or explicit. */
const tsr_method_ops *tsr_method_of(const tsr_case *c);

/* tsr_run with method m instead of c's (tsr_run is this with tsr_method_of(c); the driver's
 * tests give methods of their own). */
tsr_err tsr_run_method(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts,
                       const tsr_method_ops *m, tsr_run_result *res);

#endif
