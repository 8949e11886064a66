/* The PINN trainer's state, shared by solver/pinn/train*.c (the trainer,
 * solver/pinn/train_impl.h lists its pieces) and solver/pinn/report.c
 * (what it writes). Private to solver/pinn/. */
#ifndef TSR_PINN_TRAIN_H
#define TSR_PINN_TRAIN_H

#include <mpi.h>

#include "io/case.h"
#include "decomp/layout.h"
#include "io/progress.h"
#include "solver/pinn/iface.h"
#include "solver/pinn/engine.h"
#include "solver/pinn/points.h"
#include "solver/run.h"

/* Columns of the history (history.csv, report.json, checkpoints). On several ranks the loss
 * columns are sums over the subdomains (the loss every rank's network minimises its part of),
 * the error is the whole grid's, interface the interface terms' sum and mismatch the largest
 * |u - u_nb| over the interface points of every rank (empty on one rank). H_NCOL_V1: the
 * columns of checkpoints written before interface and mismatch existed. */
enum { H_ITER, H_LOSS, H_PDE, H_BOUNDARY, H_INITIAL, H_ERROR, H_LR, H_SECONDS, H_INTERFACE,
       H_MISMATCH, H_NCOL };
enum { H_NCOL_V1 = H_SECONDS + 1 };
extern const char *const tsr_pinn_hist_names[H_NCOL];

/* One subdomain's figures at the end of a run (report.json's subdomains). */
typedef struct {
  int nterm, npts;
  int box[6];
  double loss[TSR_PINN_MAX_TERMS];
  int count[TSR_PINN_MAX_TERMS];
  char name[TSR_PINN_MAX_TERMS][16];
  double mismatch;
  int slab;                 /* its time slab (0 without) and that slab's span */
  double t0, t1;
} tsr_pinn_subdomain;

typedef struct {
  const tsr_case *c;
  tsr_run_opts opts;
  MPI_Comm comm;
  int rank, size;
  int nslab, nspace;        /* time slabs (1: none) and ranks per slab (size / nslab) */
  int causal;               /* pinn.slabs: causal (one slab trains at a time) */
  int watched;              /* the watchdog runs (several CPU ranks, not causal: start_watchdog) */
  int64_t total;            /* the run's iterations: pinn.adam.iterations (I) + pinn.lbfgs
                               .iterations (L), or with causal slabs P (I + L): slab k trains
                               [k S, (k + 1) S), S = I + L, Adam's I then L-BFGS's L */
  int64_t slab_len;         /* S of a causal run (I + L), else I + L */
  tsr_layout layout;        /* every space rank's box (several ranks) */
  tsr_pinn_sub sub;
  const tsr_pinn_sub *psub; /* &sub on several ranks, NULL on one (the whole grid) */
  tsr_pinn_iface *xch;      /* the interface exchange (several ranks) */
  void *nccl;               /* the NCCL communicator of a GPU run on several ranks */
  MPI_Comm group;           /* a causal run's ranks of one slab (they train together and agree
                               on the CUDA graph of their iteration); MPI_COMM_NULL otherwise */
  double last_terms[TSR_PINN_MAX_TERMS]; /* this rank's terms at the last iteration */
  double mismatch;          /* the interface mismatch at the last log point, all ranks */
  double worst, mean;       /* worst and mean subdomain loss at the last log point */
  int worst_rank;
  tsr_pinn_subdomain *subs; /* rank 0, at the end: every rank's figures */
  const char *out_dir;
  int device;               /* 1: the CUDA backend */
  int shared;               /* GPUs: more ranks than GPUs on some node, so ranks share GPUs and
                               exchange over MPI (choose_device) */
  int per_gpu;              /* then the most ranks on one GPU */
  tsr_net_shape shape;
  size_t nparam;
  tsr_pinn_batch batch;
  uint64_t draw;            /* the batch's draw of random interior points */
  tsr_pinn_engine_opts eo;
  tsr_pinn_engine *eng;
  double *Xe, *ue;          /* the error's points (nin x ne) and exact values (ncomp x ne) */
  int64_t ne;
  int has_exact;             /* the case gives exact: */
  double *hist;             /* rows of H_NCOL */
  int nrow, caprow;
  int64_t it0;              /* the iteration the run started from (a restart's) */
  double train_s;           /* seconds in training iterations (this run), this rank's */
  double run_s;             /* the run's training seconds at the last chunk's end: the slowest
                               rank's, summed over the slabs of a causal run (one trains at a
                               time) */
  double prior_s;           /* training seconds of the runs before a restart */
  double setup_s, eval_s, ckpt_s, output_s;
  int ckpt_count;
  int prof_n;               /* TSR_PINN_PROFILE=N: N iterations timed phase by phase after
                               training (the trained state is put back before the outputs) */
  double prof[6];           /* their seconds in forward, loss, backward, Adam, and with an
                               exchange the interface values and the exchange alone */
  char ckpt_path[4200];     /* the last checkpoint written or read */
  struct tsr_pinn_lbfgs *lb;/* L-BFGS of this rank while it runs (checkpoints read its state) */
  int lb_done;              /* this rank's last L-BFGS step found no lower loss (or it does not
                               train in this phase) */
  int all_done;             /* every rank's lb_done (tsr_pinn_gather_row): an L-BFGS
                               phase ends early */
  double lb_step;           /* this rank's last line search step */
  int64_t lb_phase;         /* the first iteration of the L-BFGS phase running (-1: none) */
  int64_t lb_start;         /* the L-BFGS phase a restart's state belongs to (-1: none) */
  double *lb_state;         /* a restart's L-BFGS state for this rank: theta, s, y, rho (NULL:
                               none, or this rank has none: lb_count < 0) */
  int lb_count;
} tsr_pinn_ctx;

/* This rank's squared error and squared exact values over its error points (both 0 without
 * exact); tsr_pinn_error_of combines every rank's, in rank order. */
tsr_err tsr_pinn_error_sums(tsr_pinn_ctx *x, double *se, double *sx);

/* The relative L2 error of the networks against exact over the whole grid's error points (NaN
 * without exact). Collective. */
tsr_err tsr_pinn_error(tsr_pinn_ctx *x, double *err);

/* final.h5 + final.xmf (the networks sampled on the grid's cells at the end, each cell from
 * its rank's network), the snapshots of output.snapshot_every {time: T} with snapshots.xmf,
 * history.csv and report.json (rank 0). Collective. */
tsr_err tsr_pinn_write_outputs(tsr_pinn_ctx *x, const tsr_run_result *res);

/* history.csv alone (also after a stop, so what was trained is on disk); rank 0 writes. */
tsr_err tsr_pinn_write_history(const tsr_pinn_ctx *x);

#endif
