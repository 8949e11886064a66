/* One point of the PINN's loss (kernels/pinn.h), host + device from one source: its residuals
 * from the network's channels, its share of its term's loss, and dL/dU at its channels. */
#ifndef TSR_PINN_POINT_H
#define TSR_PINN_POINT_H

#include "kernels/models/all.h"
#include "kernels/models/point.h"
#include "kernels/pinn.h"

/* Channel ch of component c at point p, as double. */
TSR_HD static inline double tsr_pinn_ld(const tsr_pinn_loss_desc *d, const void *U, int c, int ch,
                                        int p) {
  size_t i = (size_t)c + (size_t)d->ncomp * ((size_t)ch * (size_t)d->npts + (size_t)p);
  return d->single ? (double)((const float *)U)[i] : ((const double *)U)[i];
}

TSR_HD static inline void tsr_pinn_st(const tsr_pinn_loss_desc *d, void *dU, int c, int ch,
                                      int p, double v) {
  size_t i = (size_t)c + (size_t)d->ncomp * ((size_t)ch * (size_t)d->npts + (size_t)p);
  if (d->single) ((float *)dU)[i] = (float)v;
  else ((double *)dU)[i] = v;
}

/* The term point p belongs to, or -1 (the periodic images are their term's too). */
TSR_HD static inline int tsr_pinn_term_of(const tsr_pinn_loss_desc *d, int p) {
  for (int k = 0; k < d->nterm; ++k) {
    const tsr_loss_term *t = &d->term[k];
    int n = t->kind == TSR_LOSS_PERIODIC ? 2 * t->count : t->count;
    if (p >= t->start && p < t->start + n) return k;
  }
  return -1;
}

/* Point p's weighted squared residual (0 for a periodic image: its pair counts once, at the lo
 * point) and dL/dU at its channels, all written (zeros where nothing depends). */
TSR_HD static inline double tsr_pinn_point(const tsr_pinn_loss_desc *d, int p, const void *U,
                                           const double *T, void *dU) {
  const int K = 1 + d->nd1 + d->nspace, nc = d->ncomp;
  int k = tsr_pinn_term_of(d, p);
  const tsr_loss_term *t = k < 0 ? NULL : &d->term[k];
  /* a periodic pair is written by its lo point alone (the image's entries included), so no
   * two threads write one entry */
  if (t && t->kind == TSR_LOSS_PERIODIC && p - t->start >= t->count) return 0.0;
  for (int c = 0; c < nc; ++c)
    for (int ch = 0; ch < K; ++ch) {
      tsr_pinn_st(d, dU, c, ch, p, 0.0);
      if (t && t->kind == TSR_LOSS_PERIODIC) tsr_pinn_st(d, dU, c, ch, p + t->count, 0.0);
    }
  if (!t) return 0.0;
  const double w = t->weight / (double)t->count;
  double sum = 0.0;
  switch (t->kind) {
  case TSR_LOSS_PDE: {
    tsr_point pt;
    double F[TSR_MAX_COMP] = {0};
    tsr_point_jac J;
    for (int c = 0; c < nc; ++c) {
      pt.u[c] = tsr_pinn_ld(d, U, c, 0, p);
      pt.lap[c] = 0.0;
      for (int a = 0; a < 3; ++a) pt.g[c][a] = 0.0;
      for (int a = 0; a < d->nspace; ++a) {
        pt.g[c][a] = tsr_pinn_ld(d, U, c, 1 + a, p);
        pt.lap[c] = pt.lap[c] + tsr_pinn_ld(d, U, c, 1 + d->nd1 + a, p);
      }
    }
    tsr_model_point(d->model, &pt, &d->coef, F, &J);
    double dr[TSR_MAX_COMP];
    for (int c = 0; c < nc; ++c) {
      double ut = d->timed ? tsr_pinn_ld(d, U, c, 1 + d->nspace, p) : 0.0;
      double r = ut - F[c] - T[c + nc * p];
      sum = sum + r * r;
      dr[c] = 2.0 * w * r;
      if (d->timed) tsr_pinn_st(d, dU, c, 1 + d->nspace, p, dr[c]);
    }
    /* r_c = u_t - F_c - s: dL/d(input e) = -sum_c dr_c dF_c/d(input e) */
    for (int e = 0; e < nc; ++e) {
      double du = 0.0, dl = 0.0;
      for (int c = 0; c < nc; ++c) {
        du = du - dr[c] * J.du[c][e];
        dl = dl - dr[c] * J.dlap[c][e];
      }
      tsr_pinn_st(d, dU, e, 0, p, du);
      for (int a = 0; a < d->nspace; ++a) {
        double dg = 0.0;
        for (int c = 0; c < nc; ++c) dg = dg - dr[c] * J.dg[c][e][a];
        tsr_pinn_st(d, dU, e, 1 + a, p, dg);
        tsr_pinn_st(d, dU, e, 1 + d->nd1 + a, p, dl);
      }
    }
    break;
  }
  case TSR_LOSS_DIRICHLET:
  case TSR_LOSS_INITIAL:
    for (int c = 0; c < nc; ++c) {
      double r = tsr_pinn_ld(d, U, c, 0, p) - T[c + nc * p];
      sum = sum + r * r;
      tsr_pinn_st(d, dU, c, 0, p, 2.0 * w * r);
    }
    break;
  case TSR_LOSS_NEUMANN: {
    double sign = t->side ? 1.0 : -1.0;
    for (int c = 0; c < nc; ++c) {
      double r = sign * tsr_pinn_ld(d, U, c, 1 + t->axis, p) - T[c + nc * p];
      sum = sum + r * r;
      tsr_pinn_st(d, dU, c, 1 + t->axis, p, 2.0 * w * r * sign);
    }
    break;
  }
  case TSR_LOSS_PERIODIC: {
    int q = p + t->count;
    for (int c = 0; c < nc; ++c) {
      double r0 = tsr_pinn_ld(d, U, c, 0, p) - tsr_pinn_ld(d, U, c, 0, q);
      double r1 = tsr_pinn_ld(d, U, c, 1 + t->axis, p) - tsr_pinn_ld(d, U, c, 1 + t->axis, q);
      sum = sum + r0 * r0 + r1 * r1;
      tsr_pinn_st(d, dU, c, 0, p, 2.0 * w * r0);
      tsr_pinn_st(d, dU, c, 0, q, -2.0 * w * r0);
      tsr_pinn_st(d, dU, c, 1 + t->axis, p, 2.0 * w * r1);
      tsr_pinn_st(d, dU, c, 1 + t->axis, q, -2.0 * w * r1);
    }
    break;
  }
  default: break;
  }
  return w * sum;
}

#endif
