/* Parareal's per-cell arithmetic (solver/parareal/), one source for the host loops and the
 * CUDA kernels, so that both backends give the same bits (DESIGN.md principle 3). The coarse
 * grid coarsens the fine one by r on every axis: coarse cell I covers fine cells rI .. rI+r-1. */
#ifndef TSR_KERNELS_PARAREAL_H
#define TSR_KERNELS_PARAREAL_H

#include "kernels/models/cell.h" /* TSR_HD */

/* The correction at one value: F + (G_new - G_old). Where the two coarse values are equal the
 * result is F itself (not F + 0, which would turn -0 into +0), so a slice whose input stopped
 * changing keeps the fine propagator's bits exactly. */
TSR_HD static inline double tsr_parareal_correct_value(double f, double gnew, double gold) {
  const double d = gnew - gold;
  return d != 0.0 ? f + d : f;
}

/* Where fine index i (>= 0) sits in its coarse cell: the coarse neighbour to interpolate from
 * (-1 or +1) and its weight, |offset of i's centre from the coarse centre| in coarse cells. */
TSR_HD static inline double tsr_parareal_weight(int i, int r, int *side) {
  const double xi = ((double)i + 0.5) / (double)r - ((double)(i / r) + 0.5);
  *side = xi < 0.0 ? -1 : 1;
  return xi < 0.0 ? -xi : xi;
}

/* Linear prolongation at one fine cell from its coarse cell's value c0 and, per axis d, the
 * value nb[d] of the face neighbour on the side tsr_parareal_weight gives, with its weight
 * w[d]: the coarse value plus one linear correction per axis. It reads no diagonal neighbour (halo
 * exchanges fill faces, not corners) and is exact for linear fields. */
TSR_HD static inline double tsr_parareal_prolong_value(double c0, const double *nb,
                                                       const double *w, int dim) {
  double v = c0;
  for (int d = 0; d < dim; ++d) v = v + w[d] * (nb[d] - c0);
  return v;
}

#endif
