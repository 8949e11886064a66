/* poisson: the steady 0 = lap(u) + f, i.e. -lap(u) = f with f the case's source: F is lap(u)
 * alone (the methods add the source). No time derivative (tsr_models[].steady), no parameters,
 * and no explicit stage: the PINN solves it. */
#ifndef TSR_MODEL_POISSON_H
#define TSR_MODEL_POISSON_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_poisson_point(const tsr_point *pt, const tsr_cell_coef *k,
                                            double *F, tsr_point_jac *J) {
  F[0] = pt->lap[0];
  if (J) {
    tsr_point_jac_zero(J, 1, k->dim);
    J->dlap[0][0] = 1.0;
  }
}
#endif
