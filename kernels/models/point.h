/* The pointwise form of a model, shared by every method (DESIGN.md, "Methods share one driver
 * and one definition of each model"): du/dt = F(u, grad u, lap u; params) at one point, and,
 * when a method asks, F's partial derivatives with respect to those inputs.
 *
 * The explicit stages fill a tsr_point from stencil values (tsr_cell_lap, tsr_cell_d1) and
 * call tsr_model_point with J == NULL; the PINN fills it from the network's Taylor-mode
 * derivatives and asks for J to back-propagate the residual; the implicit method will take J
 * for its Jacobian. Sources s(x, t) are added by the methods, not here. */
#ifndef TSR_MODEL_POINT_H
#define TSR_MODEL_POINT_H

#include "kernels/models/cell.h"

#ifndef TSR_MAX_COMP
#define TSR_MAX_COMP 4
#endif

/* What F reads at a point: per component c, the value, the gradient along the space axes
 * (g[c][d], d < dim) and the Laplacian. Entries a model does not read may hold anything. */
typedef struct {
  double u[TSR_MAX_COMP];
  double g[TSR_MAX_COMP][3];
  double lap[TSR_MAX_COMP];
} tsr_point;

/* dF_c / d(input) for every output component c: du[c][e] = dF_c/du_e, dg[c][e][d] =
 * dF_c/d(g_e along d), dlap[c][e] = dF_c/d(lap u_e). A model writes every entry (zeros
 * included) for c, e < ncomp and d < dim. */
typedef struct {
  double du[TSR_MAX_COMP][TSR_MAX_COMP];
  double dg[TSR_MAX_COMP][TSR_MAX_COMP][3];
  double dlap[TSR_MAX_COMP][TSR_MAX_COMP];
} tsr_point_jac;

/* Which inputs a model reads, so the stencil fill computes only those: TSR_NEEDS_GRAD (the
 * gradient), TSR_NEEDS_LAP (the Laplacian). The value is always read. */
enum { TSR_NEEDS_GRAD = 1, TSR_NEEDS_LAP = 2 };

/* Zeroes the entries of J a model with ncomp components in dim dimensions must write, so that
 * a model's J sets only its non-zero partials. */
TSR_HD static inline void tsr_point_jac_zero(tsr_point_jac *J, int ncomp, int dim) {
  for (int c = 0; c < ncomp; ++c)
    for (int e = 0; e < ncomp; ++e) {
      J->du[c][e] = 0.0;
      J->dlap[c][e] = 0.0;
      for (int d = 0; d < dim; ++d) J->dg[c][e][d] = 0.0;
    }
}

#endif
