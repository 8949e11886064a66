/* The PINN's points: the training batch (interior collocation points, boundary and initial
 * points) with the targets of its loss terms, and the evaluation points (the grid's cell
 * centres at given times), all in physical coordinates, host doubles. Private to solver/pinn/.
 *
 * Random points come from a counter-based generator: point i of draw k of stream s is a pure
 * function of (case seed, k, s, i), so a restart redraws exactly the points the run had and
 * the random state a checkpoint needs is the iteration alone. */
#ifndef TSR_PINN_POINTS_H
#define TSR_PINN_POINTS_H

#include <stdint.h>

#include "io/case.h"
#include "kernels/pinn.h"

enum { TSR_PINN_GROUP_PDE = 0, TSR_PINN_GROUP_BOUNDARY, TSR_PINN_GROUP_INITIAL,
       TSR_PINN_NGROUP };
extern const char *const tsr_pinn_group_names[TSR_PINN_NGROUP];

typedef struct {
  int nin, ncomp, nspace, timed;
  int npts;
  double *X;        /* nin x npts: X[j + nin * p] */
  double *T;        /* ncomp x npts: the terms' targets */
  int nterm;
  tsr_loss_term term[TSR_PINN_MAX_TERMS];
  int group[TSR_PINN_MAX_TERMS];     /* TSR_PINN_GROUP_* of each term */
  char name[TSR_PINN_MAX_TERMS][16]; /* "pde", "xlo", "x periodic", "initial" */
} tsr_pinn_batch;

/* Uniform double in [0, 1) from (seed, draw, stream, i). */
double tsr_pinn_uniform(uint64_t seed, uint64_t draw, uint64_t stream, uint64_t i);

/* Points of the case's batch for draw k (k = iteration / resample_every, 0 without
 * resampling; only the interior points change between draws) with their targets from the
 * case's expressions (boundary values at each point's x and t, the source, the initial
 * condition). Errors: TSR_ERR_INPUT (an expression that does not compile: a message at its
 * position), TSR_ERR_MEMORY. */
tsr_err tsr_pinn_batch_build(const tsr_case *c, uint64_t draw, tsr_pinn_batch *b);

/* The batch's size without building it (for memory checks and the plan). */
int tsr_pinn_batch_size(const tsr_case *c, int *nterm);

void tsr_pinn_batch_free(tsr_pinn_batch *b);

/* The cell centres of the grid at time t (x fastest), as network inputs (nin x cells). *X is
 * new (free). Errors: TSR_ERR_MEMORY. */
tsr_err tsr_pinn_grid_points(const tsr_case *c, double t, double **X, int64_t *n);

/* The case's network shape and input normalisation (to [-1, 1] over the box and [0, end]). */
void tsr_pinn_shape(const tsr_case *c, int *nin, double in_scale[4], double in_shift[4]);

#endif
