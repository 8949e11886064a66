/* The PINN trainer's state, shared by solver/pinn/train.c (the loop) and solver/pinn/report.c
 * (what it writes). Private to solver/pinn/. */
#ifndef TSR_PINN_TRAIN_H
#define TSR_PINN_TRAIN_H

#include <mpi.h>

#include "io/case.h"
#include "io/progress.h"
#include "solver/pinn/engine.h"
#include "solver/pinn/points.h"
#include "solver/run.h"

/* Columns of the history (history.csv, report.json, checkpoints). */
enum { H_ITER, H_LOSS, H_PDE, H_BOUNDARY, H_INITIAL, H_ERROR, H_LR, H_SECONDS, H_NCOL };
extern const char *const tsr_pinn_hist_names[H_NCOL];

typedef struct {
  const tsr_case *c;
  tsr_run_opts opts;
  const char *out_dir;
  int device;               /* 1: the CUDA backend */
  tsr_net_shape shape;
  size_t nparam;
  tsr_pinn_batch batch;
  uint64_t draw;            /* the batch's draw of random interior points */
  tsr_pinn_engine_opts eo;
  tsr_pinn_engine *eng;
  double *Xe, *ue;          /* the error's points (nin x ne) and exact values (ncomp x ne) */
  int64_t ne;
  double *hist;             /* rows of H_NCOL */
  int nrow, caprow;
  int64_t it0;              /* the iteration the run started from (a restart's) */
  double train_s;           /* seconds in training iterations (this run) */
  double prior_s;           /* training seconds of the runs before a restart */
  double setup_s, eval_s, ckpt_s, output_s;
  int ckpt_count;
  int prof_n;               /* TSR_PINN_PROFILE=N: N iterations timed phase by phase after
                               training (the trained state is put back before the outputs) */
  double prof[4];           /* their seconds in forward, loss, backward, Adam */
  char ckpt_path[4200];     /* the last checkpoint written or read */
} tsr_pinn_ctx;

/* The relative L2 error of the network against exact over the error's points (NaN without
 * exact). */
tsr_err tsr_pinn_error(tsr_pinn_ctx *x, double *err);

/* final.h5 + final.xmf (the network sampled on the grid's cells at the end), the snapshots of
 * output.snapshot_every {time: T} with snapshots.xmf, history.csv and report.json. */
tsr_err tsr_pinn_write_outputs(tsr_pinn_ctx *x, const tsr_run_result *res);

/* history.csv alone (also after a stop, so what was trained is on disk). */
tsr_err tsr_pinn_write_history(const tsr_pinn_ctx *x);

#endif
