/* Dispatch over the models and the time-integration stage update, host + device. */
#ifndef TSR_MODELS_ALL_H
#define TSR_MODELS_ALL_H

#include "kernels/models.h"
#include "kernels/models/advection_diffusion.h"
#include "kernels/models/allen_cahn.h"
#include "kernels/models/burgers.h"
#include "kernels/models/gray_scott.h"
#include "kernels/models/heat.h"
#include "kernels/models/ignition.h"
#include "kernels/models/poisson.h"
#include "kernels/models/wave.h"

/* Components of model m (tsr_models[m].ncomp, which device code cannot read); folds for a
 * constant m. */
TSR_HD static inline int tsr_model_ncomp(int m) {
  switch (m) {
  case TSR_MODEL_WAVE:
  case TSR_MODEL_GRAY_SCOTT: return 2;
  default: return 1;
  }
}

/* Which of the gradient and the Laplacian model m's F reads (TSR_NEEDS_* mask); folds for a
 * constant m. */
TSR_HD static inline int tsr_model_needs(int m) {
  switch (m) {
  case TSR_MODEL_ADVECTION_DIFFUSION:
  case TSR_MODEL_BURGERS: return TSR_NEEDS_GRAD | TSR_NEEDS_LAP;
  default: return TSR_NEEDS_LAP;
  }
}

/* Model m's pointwise F (and, when J != NULL, its partials) at pt: kernels/models/point.h. */
TSR_HD static inline void tsr_model_point(int m, const tsr_point *pt, const tsr_cell_coef *k,
                                          double *F, tsr_point_jac *J) {
  switch (m) {
  case TSR_MODEL_HEAT: tsr_heat_point(pt, k, F, J); break;
  case TSR_MODEL_ADVECTION_DIFFUSION: tsr_advection_diffusion_point(pt, k, F, J); break;
  case TSR_MODEL_WAVE: tsr_wave_point(pt, k, F, J); break;
  case TSR_MODEL_GRAY_SCOTT: tsr_gray_scott_point(pt, k, F, J); break;
  case TSR_MODEL_ALLEN_CAHN: tsr_allen_cahn_point(pt, k, F, J); break;
  case TSR_MODEL_IGNITION: tsr_ignition_point(pt, k, F, J); break;
  case TSR_MODEL_POISSON: tsr_poisson_point(pt, k, F, J); break;
  case TSR_MODEL_BURGERS: tsr_burgers_point(pt, k, F, J); break;
  default: break;
  }
}

/* Fills pt from the stencil around the cell u points to (component c at u + c k->scomp):
 * second-order Laplacian and centred gradient, only those model m reads. */
TSR_HD static inline void tsr_model_point_fill(int m, const double *u, const tsr_cell_coef *k,
                                               tsr_point *pt) {
  const int needs = tsr_model_needs(m);
  for (int c = 0; c < tsr_model_ncomp(m); ++c) {
    const double *uc = u + c * k->scomp;
    pt->u[c] = uc[0];
    if (needs & TSR_NEEDS_GRAD) {
      pt->g[c][0] = tsr_cell_d1(uc, 1, k->ih2x[0]);
      pt->g[c][1] = tsr_cell_d1(uc, k->sy, k->ih2x[1]);
      if (k->dim == 3) pt->g[c][2] = tsr_cell_d1(uc, k->sz, k->ih2x[2]);
    }
    if (needs & TSR_NEEDS_LAP) pt->lap[c] = tsr_cell_lap(uc, k);
  }
}

/* The explicit stages' right-hand side of model m at the cell u points to (component 0), into
 * r[0..ncomp-1]: F on the stencil's point, but ignition's mean rate of its sub-stepped
 * reaction (kernels/models/ignition.h). Kernels call it with a compile-time m so that the
 * switches fold away. Models without an explicit stage (tsr_models[m].methods) are never
 * called here; it still compiles for every m. */
TSR_HD static inline void tsr_model_rhs(int m, const double *u, const tsr_cell_coef *k, double *r) {
  if (m == TSR_MODEL_IGNITION) {
    tsr_ignition_rhs(u, k, r);
    return;
  }
  tsr_point pt;
  tsr_model_point_fill(m, u, k, &pt);
  tsr_model_point(m, &pt, k, r, NULL);
}

/* The work of one right-hand side of model m at the cell u points to, in units of the cheapest
 * cell's (tsr_models[m].varies says whether it can be other than 1): what the rebalancer's cost
 * map sums. Pure: the same cell, parameters and k->dt give the same count everywhere. */
TSR_HD static inline int tsr_model_work(int m, const double *u, const tsr_cell_coef *k) {
  switch (m) {
  case TSR_MODEL_IGNITION: return tsr_ignition_work(u, k);
  default: return 1;
  }
}

/* The stage kinds of the explicit schemes (Shu-Osher form for the SSP schemes; classic RK4
 * with an accumulator). `base` is u^n, `in` the stage input at this cell, `r` its
 * right-hand side, `acc` RK4's running sum. */
typedef enum {
  TSR_STAGE_EULER = 0, /* out = in + dt r                               (also SSP stage 1) */
  TSR_STAGE_SSP2_2,    /* out = 1/2 base + 1/2 (in + dt r)                                 */
  TSR_STAGE_SSP3_2,    /* out = 3/4 base + 1/4 (in + dt r)                                 */
  TSR_STAGE_SSP3_3,    /* out = 1/3 base + 2/3 (in + dt r)                                 */
  TSR_STAGE_RK4_1,     /* acc = base + dt r / 6;  out = base + dt r / 2                    */
  TSR_STAGE_RK4_2,     /* acc = acc + dt r / 3;   out = base + dt r / 2                    */
  TSR_STAGE_RK4_3,     /* acc = acc + dt r / 3;   out = base + dt r                        */
  TSR_STAGE_RK4_4      /* out = acc + dt r / 6                                             */
} tsr_stage_kind;

/* Which stages read `base` and RK4's `acc` (all of RK4's but the last also write it): the
 * kernels of every backend load only these, as tsr_stage_update ignores the rest */
TSR_HD static inline int tsr_stage_uses_base(int kind) {
  return kind != TSR_STAGE_EULER && kind != TSR_STAGE_RK4_4;
}
TSR_HD static inline int tsr_stage_uses_acc(int kind) { return kind >= TSR_STAGE_RK4_1; }

TSR_HD static inline double tsr_stage_update(int kind, double dt, double base, double in,
                                             double r, double *acc) {
  double k = dt * r;
  switch (kind) {
  case TSR_STAGE_EULER: return in + k;
  case TSR_STAGE_SSP2_2: return 0.5 * base + 0.5 * (in + k);
  case TSR_STAGE_SSP3_2: return 0.75 * base + 0.25 * (in + k);
  case TSR_STAGE_SSP3_3: return (1.0 / 3.0) * base + (2.0 / 3.0) * (in + k);
  case TSR_STAGE_RK4_1: *acc = base + k / 6.0; return base + k / 2.0;
  case TSR_STAGE_RK4_2: *acc = *acc + k / 3.0; return base + k / 2.0;
  case TSR_STAGE_RK4_3: *acc = *acc + k / 3.0; return base + k;
  case TSR_STAGE_RK4_4: return *acc + k / 6.0;
  default: return in;
  }
}

#endif
