/* The run driver's public face: tsr_run (solver/driver.c) runs a case with its method
 * (solver/method.h); the shared pieces behind it (set-up of layout, fields, halo plan and
 * expressions, monitors, the final output: final.h5 + final.xmf + report.json) are
 * solver/run.c's, listed in solver/run_internal.h. */
#ifndef TSR_RUN_H
#define TSR_RUN_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "io/case.h"
#include "solver/fault.h"

typedef struct {
  const char *out_dir;  /* overrides case output.dir when not NULL */
  int quiet;            /* 1: no progress or summary on stdout (tests) */
  int write_output;     /* 1 (default via tsr_run_opts_default): write final.h5, xmf, report */
  tsr_backend backend;  /* overrides the case's backend unless TSR_BACKEND_AUTO */
  const char *restart;  /* NULL, "latest" (newest good checkpoint in the output dir) or a
                           checkpoint file: start from it instead of the initial conditions */
  int restart_force;    /* 1: restart from a checkpoint of a case whose keys differ (a warning
                           lists them); never when the grid or the model differ */
  const tsr_fault *fault; /* --inject-fault (tests only), or NULL */
  int graph_timing;     /* 1: time each step replayed as a CUDA graph on the GPU, with events
                           around its launch (benchmarks: graph_gpu_time) */
} tsr_run_opts;

typedef struct {
  int stopped;                      /* the run stopped early with a checkpoint of its last
                                       step: the signal, or TSR_STOP_WALLTIME (solver/stop.h);
                                       0 when it ran to its end */
  int64_t steps;
  double t_final;
  double dt;
  double wall;                      /* seconds in the step loop */
  double cells_per_s;               /* cell updates (cells x steps) per second, all ranks */
  int has_exact;
  double err_l2[TSR_MAX_COMP];      /* sqrt(sum err^2 * cell volume), per component */
  double err_linf[TSR_MAX_COMP];
  double l2[TSR_MAX_COMP];          /* the field's own norms */
  double min[TSR_MAX_COMP], max[TSR_MAX_COMP];
  double sum[TSR_MAX_COMP];         /* sum of u * cell volume (conserved quantities) */
  /* checkpoints written by the step loop (solver/ckpt_writer.h); times in seconds, each the
   * slowest rank's */
  int ckpt_count;
  int ckpt_async;                   /* 1: written by a background thread */
  double ckpt_stall;                /* the step loop stood still for them, summed */
  double ckpt_stall_max;            /* the longest single stall */
  double ckpt_wait;                 /* of the stall: waiting for the previous write */
  double ckpt_copy;                 /* of the stall: copying the state to staging memory */
  double ckpt_write;                /* writing (chunks from the staged state, HDF5), summed */
  double ckpt_final_wait;           /* waiting for the last write after the loop (in wall) */
  double ckpt_stage_bytes;          /* bytes staged per checkpoint, the largest rank's */
  double ckpt_file_bytes;           /* field bytes in one checkpoint file, all ranks */
  /* CUDA graphs of whole steps (solver/graph.h), this rank's */
  int64_t graph_steps;              /* steps replayed as graph launches */
  double graph_gpu_time;            /* with opts.graph_timing: the GPU's seconds in them, from
                                       the start to the end of each replay (host gaps left
                                       out); else 0 */
  /* method pinn (solver/pinn/pinn.h): steps are its iterations */
  int pinn;                         /* 1: the run trained a network */
  int64_t first_step;               /* the iteration this run started from (a restart's) */
  double loss;                      /* the last iteration's loss, every term weighted */
  double rel_l2;                    /* relative L2 error against exact (NaN without exact) */
} tsr_run_result;

tsr_run_opts tsr_run_opts_default(void);

/* Makes an error found on some ranks collective: every rank returns the code and message of
 * the lowest failing rank (prefixed "rank R: " when R != 0), or TSR_OK when none failed. */
tsr_err tsr_run_agree(MPI_Comm comm, tsr_err err);

/* Runs the case on the ranks of comm (collective) with its method, through the one sequence
 * of solver/method.h (solver/driver.c). Fills *res on every rank. Errors:
 * TSR_ERR_INPUT (a case this rank count cannot run, a solution that becomes non-finite, an
 * output directory that cannot be made or written), TSR_ERR_IO, TSR_ERR_MEMORY, TSR_ERR_MPI,
 * TSR_ERR_HDF5; every rank returns the same code for problems found collectively. */
tsr_err tsr_run(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts, tsr_run_result *res);

/* Whether the run goes on GPUs: want (the case's backend or --backend) against the GPUs the
 * ranks see (auto: all of them see one). Collective. Errors: TSR_ERR_INPUT (backend cuda
 * where a rank sees no GPU, or a build without CUDA: the message says what to do). */
tsr_err tsr_run_use_cuda(MPI_Comm comm, tsr_backend want, int *cuda);

/* The longest output directory path tessera takes, in bytes: PATH_MAX (4096) less room for the
 * names of the files it writes there. */
#define TSR_RUN_OUTDIR_MAX 4000

/* The directories that tsr_run_prepare_outdir made for a path, so that a run that fails
 * removes them again: path[0, made[i]) names the i-th, shallowest first. Start from {0}. */
typedef struct {
  char *path;   /* the path without its trailing slashes; owned */
  size_t *made; /* owned */
  int nmade;
} tsr_run_outdir;

/* Creates the output directory dir and each missing directory above it (rank 0, which records
 * them in *od; other ranks leave it empty) and checks that it takes files: for every method.
 * Collective. End *od with tsr_run_outdir_end, on every return. Errors: TSR_ERR_INPUT (a path
 * longer than TSR_RUN_OUTDIR_MAX, refused before anything is made; a path through a file, or
 * where a directory cannot be made or written: the message names it and says what to do),
 * TSR_ERR_IO (the file system failed in a way that may pass: no space, an I/O error). */
tsr_err tsr_run_prepare_outdir(MPI_Comm comm, const char *dir, tsr_run_outdir *od);

/* Ends *od (accepts an empty one): when failed, first removes the directories it made,
 * deepest first, each only if it is empty (a file left in one keeps it and those above). */
void tsr_run_outdir_end(tsr_run_outdir *od, int failed);

/* 1 when this run was launched with --restart latest (restart) by tessera supervise after a
 * failure (TESSERA_ATTEMPT >= 2) and dir holds no checkpoint yet: the failed attempt ended
 * before its first, so the run starts over (rank 0 says so on stdout); else 0. For every
 * method. Collective. */
int tsr_run_relaunch_fresh(MPI_Comm comm, const char *restart, const char *dir);

/* A run started from the initial conditions (no --restart) into a directory that holds an
 * earlier run's checkpoints (checkpoint_<step>.h5, or what dir/latest names) is refused
 * (TSR_ERR_INPUT, saying how to continue that run or start elsewhere): it would replace
 * latest, and output.keep would prune by step among both runs' files, keeping the earlier
 * run's newer steps over this run's own. A final.h5 alone (an ended run's output) is
 * overwritten as before. Collective. */
tsr_err tsr_run_refuse_earlier(MPI_Comm comm, const char *dir);

/* Prints the plan for nranks ranks without running: box per rank, cells, neighbours, halo
 * bytes per step, memory per rank. Not collective. Errors: TSR_ERR_INPUT (too many ranks). */
tsr_err tsr_run_check(const tsr_case *c, int nranks, FILE *out);

#endif
