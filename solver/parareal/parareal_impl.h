/* Parareal's state, shared by solver/parareal/setup.c (the set-up), parareal.c (the
 * iterations) and state.c (checkpoints and restart). Private to solver/parareal/. */
#ifndef TSR_PARAREAL_IMPL_H
#define TSR_PARAREAL_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "io/case.h"
#include "solver/parareal/graphs.h"
#include "solver/parareal/link.h"
#include "solver/run_internal.h"

enum { T_FINE, T_COARSE, T_COMM, T_COUNT };

/* Steps per CUDA graph launch (graphs.h): enough that one launch's host cost (a few
 * microseconds) is small against the GPU time of that many steps of a small grid. */
#define GRAPH_CHUNK 16

/* A stop inside an iteration (halt.c): the ranks of a group poll their stop flags between fine
 * steps and stop their fine solves together; they tell the other groups, whose next poll takes
 * it as their own, and the iteration is dropped (gather in parareal.c). */
typedef struct {
  int why;                  /* this group stopped its fine solves: why (solver/stop.h), else 0 */
  int every;                /* fine steps between two polls */
  double last, gap;         /* MPI_Wtime of the last poll, the longest gap between two */
  double write_longest;     /* the longest checkpoint write so far: the wall time's margin */
  MPI_Comm comm;            /* a duplicate of the world's for the notices between groups */
  MPI_Request in, *out;     /* the notice this rank waits for; those it sent (ngroup - 1) */
  int in_why, out_why, got, nout;
} pr_halt;

typedef struct {
  const tsr_case *c;
  tsr_case cc;              /* the coarse propagator's case: c on the coarse grid */
  MPI_Comm world, slice;    /* the run's ranks; this rank's group */
  int rank, size, nspace, ngroup, group, srank;
  int P, m, r;              /* slices, slices per group, coarsening */
  int s0;                   /* this group's first slice */
  tsr_run_ctx *fx;          /* the fine propagator: one context per slice of this rank on
                               GPUs (each its own streams and CUDA graphs, so that the slices
                               run together), one for all of them on CPU ranks */
  int nctx;
  tsr_run_ctx coarse;
  tsr_pr_graph **g, *gc;     /* CUDA graphs of each fine context's steps, and the coarse ones */
  struct tsr_pr_batch *batch; /* the fine contexts stepping together (batch.h), or NULL */
  int cblock;               /* the coarse steps of a slice in one GPU launch (coarse.h) */
  int64_t *step_of;         /* P + 1: slice n is fine steps [step_of[n], step_of[n + 1]) */
  int64_t *cn;              /* P: coarse steps of slice n, of cdt[n] each */
  double *cdt, dtc_max, limit;
  tsr_field **in;           /* m + 1: in[j], slice s0 + j's start; in[m], the group's end */
  tsr_field **fv, **gold;   /* m: F and G of each slice's input at the last evaluation */
  tsr_field *gnew, *scratch;
  tsr_field **keep;         /* m + 1: in[] as the last iteration ended (halt.c) */
  int *fresh;               /* m: fv[j] is F of in[j] as it is now */
  double *chg;              /* m x 2: this iteration's max |change| and max |U| of each end */
  tsr_pr_link *link;        /* the end states to the next group (link.h) */
  double *sbuf, *rbuf;      /* a state through host memory (MPI): the snapshots and checkpoints
                               gathered to the last group, once per output, not per iteration */
  double t[T_COUNT], t_iter[T_COUNT];
  int iterations, converged;
  double *hist;             /* per iteration (1..), P relative changes then the 3 times */
  int nhist;
  double pred;              /* the parareal model's speedup from the measured costs */
  double t_step;            /* a serial step's seconds, measured where slices share a GPU
                               (serial_probe in parareal.c; 0: not measured) */
  int ckpt_iteration;       /* the iteration of the last checkpoint written or restarted from
                               (0: none) */
  pr_halt h;                /* a stop inside an iteration (halt.c) */
  double iter_start, iter_longest; /* for the wall-time limit */
  double start;             /* MPI_Wtime as the iterations began */
  int k0;                   /* the iteration they go on from (a restart's) */
} pr;

static inline int last_group(const pr *p) { return p->group == p->ngroup - 1; }

/* The rank groups from the case's slices and the run's ranks into p (P, m, r, ngroup, nspace,
 * group, srank, s0), or the rank counts that work (setup.c). */
tsr_err tsr_pr_groups(pr *p);

/* The set-up on p->world (not collective by itself: the caller agrees on errors), and what it
 * holds freed; teardown is safe after a set-up that failed part way (setup.c). */
tsr_err tsr_pr_setup(pr *p, const tsr_run_opts *opts);
void tsr_pr_teardown(pr *p);

/* G(in[j]) into gnew (parareal.c). */
tsr_err tsr_pr_coarse_solve(pr *p, int j);

/* After iteration k (collective over the world): every slice's start state and the last end
 * gathered to the last group, which writes DIR/parareal_<k>.h5 and points DIR/latest at it;
 * the newest output.keep are kept (state.c). */
tsr_err tsr_pr_checkpoint(pr *p, int k);

/* The iteration state of the checkpoint opts.restart names (latest or a file): each group's
 * start states and end into in[], gold[] recomputed from them, every fine solve due; *k the
 * iteration it was written after. Collective over the world (state.c). */
tsr_err tsr_pr_restart(pr *p, int *k);

/* ---- a stop inside an iteration (halt.c) ---- */

/* Before the iterations: the notices' communicator and receive, the polls' spacing. Collective
 * over the world. Errors: TSR_ERR_MPI, TSR_ERR_MEMORY. */
tsr_err tsr_pr_halt_begin(pr *p);

/* Polls the group's stop flags (collective over the group, in the same place on its ranks):
 * now = 1 decides on the spot, else a nonblocking poll answered at the next one (stop.h). On
 * a stop, sets h.why and tells the same space rank of every other group. Does nothing once
 * h.why is set. Errors: TSR_ERR_MPI. */
tsr_err tsr_pr_halt_poll(pr *p, int now);

/* A nonblocking poll once h.every fine steps have gone by since the last: *since counts them,
 * steps the ones just issued. */
tsr_err tsr_pr_halt_steps(pr *p, int64_t steps, int64_t *since);

/* After the fine solves: completes the poll in flight (collective over the group). */
void tsr_pr_halt_settle(pr *p);

/* In a dropped iteration's gather: receives the notices the other groups sent this rank (row
 * r of all, stride doubles each, says at index at whether world rank r stopped its fine
 * solves) and completes this rank's. Errors: TSR_ERR_MPI. */
tsr_err tsr_pr_halt_drain(pr *p, const double *all, int stride, int at);

/* Cancels the notice still awaited and frees the communicator. Accepts a halt never begun. */
void tsr_pr_halt_end(pr *p);

/* keep[] := in[] before an iteration changes in[]; in[] := keep[] where it is dropped. Both on
 * fx[0]'s stream; restore waits for it. */
tsr_err tsr_pr_keep(pr *p);
tsr_err tsr_pr_restore(pr *p);

#endif
