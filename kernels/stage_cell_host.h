/* The per-cell right-hand side of the host's explicit stages, shared by kernels/stage_host.c
 * (one step a pass) and kernels/steps_host_tiles.h (several) so that both run the same arithmetic
 * on the same values: double fields hand tsr_model_rhs a pointer into the array; single ones
 * first gather the stencil into a small double window shaped like a 3x3(x3) field (strides 1,
 * 3, 9), as the GPU kernels do. Private to kernels/ (inlined with constant model and
 * precision, so that every branch folds). */
#ifndef TSR_STAGE_CELL_HOST_H
#define TSR_STAGE_CELL_HOST_H

#include "kernels/field.h"
#include "kernels/models/all.h"

/* Value i of an array of precision prec, as double; and the store, rounded once. */
static inline __attribute__((always_inline)) double tsr_cell_ld(int prec, const void *p,
                                                                ptrdiff_t i) {
  return prec == TSR_PREC_SINGLE ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline __attribute__((always_inline)) void tsr_cell_st(int prec, void *p, ptrdiff_t i,
                                                              double v) {
  if (prec == TSR_PREC_SINGLE) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* k with the window's strides, for tsr_cell_rhs_at on single fields. */
static inline __attribute__((always_inline)) tsr_cell_coef tsr_cell_window_coef(
    const tsr_cell_coef *k) {
  tsr_cell_coef kw = *k;
  kw.sy = 3;
  kw.sz = 9;
  kw.scomp = k->dim == 3 ? 27 : 9;
  return kw;
}

/* r[0 .. ncomp) = model's right-hand side at the cell at offset `at` of in, laid out with k's
 * strides (kw: tsr_cell_window_coef(k)). */
static inline __attribute__((always_inline)) void
tsr_cell_rhs_at(int model, int ncomp, int prec, const void *in, ptrdiff_t at,
                const tsr_cell_coef *k, const tsr_cell_coef *kw, double *r) {
  if (prec == TSR_PREC_DOUBLE) {
    tsr_model_rhs(model, (const double *)in + at, k, r);
    return;
  }
  const ptrdiff_t wo = k->dim == 3 ? 13 : 4;
  double w[TSR_MAX_COMP * 27];
  for (int c = 0; c < ncomp; ++c) {
    const ptrdiff_t p = at + c * k->scomp;
    double *wp = w + c * kw->scomp + wo;
    wp[0] = tsr_cell_ld(prec, in, p);
    wp[-1] = tsr_cell_ld(prec, in, p - 1);
    wp[1] = tsr_cell_ld(prec, in, p + 1);
    wp[-3] = tsr_cell_ld(prec, in, p - k->sy);
    wp[3] = tsr_cell_ld(prec, in, p + k->sy);
    if (k->dim == 3) {
      wp[-9] = tsr_cell_ld(prec, in, p - k->sz);
      wp[9] = tsr_cell_ld(prec, in, p + k->sz);
    }
  }
  tsr_model_rhs(model, w + wo, kw, r);
}

#endif
