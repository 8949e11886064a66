/* Shared pieces of the per-cell physics: compiled by the C compiler for the host and by nvcc
 * for the device from this one source (DESIGN.md principle 3). Every expression is written
 * once, with a fixed order of operations and contraction off, so that each cell's update is
 * the same bits on any decomposition and kernel split (principle 2). */
#ifndef TSR_MODELS_CELL_H
#define TSR_MODELS_CELL_H

#include <stddef.h>

#ifdef __CUDACC__
#define TSR_HD __host__ __device__ __attribute__((always_inline))
#else
#define TSR_HD __attribute__((always_inline))
#endif

/* Everything a cell update needs besides the field: strides, grid spacing and the model's
 * coefficients, prepared once on the host (tsr_cell_coef_init) and passed by value. */
typedef struct {
  int dim;
  ptrdiff_t sy, sz;    /* strides of y and z; x stride is 1 */
  ptrdiff_t scomp;     /* stride between components */
  double ih2[3];       /* 1 / h^2 per axis */
  double ih2x[3];      /* 1 / (2 h) per axis, for centred first derivatives */
  double p[8];         /* the model's parameters, in tsr_models[model].param order */
  double q[4];         /* derived constants (e.g. c^2, eps^2, F + k) computed once on the host */
  double dt;           /* the stage's step, set by the stage launchers: a model that integrates
                        * a term over the step (ignition's sub-stepped reaction) reads it */
} tsr_cell_coef;

/* Second-order Laplacian at p (2*dim + 1 points). */
TSR_HD static inline double tsr_cell_lap(const double *p, const tsr_cell_coef *k) {
  double l = (p[-1] - 2.0 * p[0] + p[1]) * k->ih2[0];
  l = l + (p[-k->sy] - 2.0 * p[0] + p[k->sy]) * k->ih2[1];
  if (k->dim == 3) l = l + (p[-k->sz] - 2.0 * p[0] + p[k->sz]) * k->ih2[2];
  return l;
}

/* Centred first derivative along axis d at p. */
TSR_HD static inline double tsr_cell_d1(const double *p, ptrdiff_t s, double ih2x) {
  return (p[s] - p[-s]) * ih2x;
}

#endif
