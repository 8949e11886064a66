/* A PINN run's checkpoints: DIR/checkpoint_<iteration, 8 digits>.h5 with the parameters and
 * Adam's moments (float64 datasets /pinn/theta, /pinn/adam_m, /pinn/adam_v: a float32 run's
 * values widen exactly), the training history so far (/pinn/history, rows x columns), and root
 * attributes iteration, method ("pinn"), network (width, depth, activation, precision as
 * int64 [width, depth, act, single]), case_text, case_hash, tessera_version. A run on several
 * ranks (one network per rank's box) writes theta, adam_m and adam_v as nranks x nparam
 * (row r: rank r's network) and the decomposition as attributes ranks (int64) and boxes
 * (int64, nranks x 6: each rank's box of cells, lo x y z then hi x y z); a checkpoint without
 * them is of one rank. A run with time slabs (decomposition.time_slices > 1; ranks slab-major)
 * adds the attribute slabs (int64 [time_slices, causal, Adam's iterations per slab]) and, with
 * L-BFGS per causal slab, slab_lbfgs. L-BFGS's state, when written during L-BFGS, below. Chunked with
 * Fletcher32 checksums, written to a temporary name and renamed; DIR/latest names the newest
 * and the newest output.keep are kept (io/checkpoint.h's rules). The learning-rate schedule
 * and the random points are functions of the iteration, so it is the whole state beside the
 * arrays. Private to solver/pinn/. */
#ifndef TSR_IO_PINN_STATE_H
#define TSR_IO_PINN_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "io/case.h"

typedef struct {
  int64_t iteration;
  size_t nparam;
  double *theta, *m, *v;  /* nparam each */
  int hist_rows, hist_cols;
  double *hist;           /* hist_rows x hist_cols, row-major */
  int64_t net[4];         /* width, depth, activation, single */
  int nranks;             /* subdomains (>= 1): theta, m, v hold nranks x nparam, rank-major */
  const int64_t *boxes;   /* borrowed: nranks x 6, each rank's box (NULL with one rank) */
  int64_t slabs[3];       /* time slabs: [time_slices, causal, iterations per slab of a causal
                             run (else 0)], attribute slabs; {0, 0, 0} without (none written) */
  int64_t slab_lbfgs;     /* a causal run's L-BFGS iterations a slab (attribute slab_lbfgs,
                             written when > 0; absent reads as 0) */
  /* A checkpoint written during L-BFGS: attribute lbfgs [first iteration of the L-BFGS phase,
   * pairs kept m], attribute lbfgs_count (nranks: each rank's pairs, -1 where the rank is not in
   * that phase: a causal run's other slabs), datasets /pinn/lbfgs_s and /pinn/lbfgs_y (nranks *
   * m x nparam, each rank's pairs oldest first) and /pinn/lbfgs_rho (nranks * m); theta then
   * holds L-BFGS's parameters in double for the ranks in the phase. Write: lbfgs_m > 0 writes
   * them. Read: lbfgs_m is the run's pinn.lbfgs.history (a file's must be the same, else it is
   * refused); lbfgs_start is -1 after the read when the file has no L-BFGS state. */
  int64_t lbfgs_start;
  int lbfgs_m;
  int64_t *lbfgs_count;
  double *lbfgs_s, *lbfgs_y, *lbfgs_rho;
  int attempt;            /* read: tessera supervise's attempt (TESSERA_ATTEMPT) when >= 2, else
                             0; a refusal for another rank count then says why a relaunch on
                             fewer ranks cannot continue the run */
} tsr_pinn_state;

/* Writes st as the checkpoint of st->iteration into dir (path: the file, written into path of
 * n bytes). Errors: TSR_ERR_IO, TSR_ERR_HDF5 (the message names the file). */
tsr_err tsr_pinn_state_write(const tsr_case *c, const char *dir, const tsr_pinn_state *st,
                             char *path, size_t n);

/* Reads the checkpoint spec names ("latest": what dir/latest names, else the newest that
 * reads; or a file) into *st (arrays new: tsr_pinn_state_free). The case must be the one it
 * was written for (its hash), the network the same, and the decomposition st->nranks and
 * st->boxes (one subdomain per rank: a restart on another rank count or partition is refused).
 * Errors: TSR_ERR_INPUT (no checkpoint, a damaged one, another case, network or decomposition:
 * the message says which and what to do). */
tsr_err tsr_pinn_state_read(const tsr_case *c, const char *spec, const char *dir,
                            tsr_pinn_state *st, char *path, size_t n);

void tsr_pinn_state_free(tsr_pinn_state *st);

#endif
