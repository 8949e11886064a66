#include <math.h>

#include "kernels/stage.h"

void tsr_stage_coef_init(tsr_cell_coef *k, int model, const double *p, const double h[3],
                         const tsr_field *f) {
  *k = (tsr_cell_coef){0};
  k->dim = f->dim;
  k->sy = f->sy;
  k->sz = f->sz;
  k->scomp = f->scomp;
  for (int d = 0; d < 3; ++d) {
    k->ih2[d] = 1.0 / (h[d] * h[d]);
    k->ih2x[d] = 1.0 / (2.0 * h[d]);
  }
  for (int i = 0; i < tsr_models[model].nparam; ++i) k->p[i] = p[i];
  switch (model) {
  case TSR_MODEL_WAVE: k->q[0] = p[0] * p[0]; break;
  case TSR_MODEL_GRAY_SCOTT: k->q[0] = p[2] + p[3]; break;
  case TSR_MODEL_ALLEN_CAHN: k->q[0] = p[0] * p[0]; break;
  default: break;
  }
}

static inline int uses_base(int kind) {
  return kind != TSR_STAGE_EULER && kind != TSR_STAGE_RK4_4;
}
static inline int uses_acc(int kind) { return kind >= TSR_STAGE_RK4_1; }

/* One row of cells. Inlined with constant model, kind and source flag so that every branch
 * folds and the x loop vectorises; out never aliases the arrays it reads. */
static inline __attribute__((always_inline)) void
row(int model, int ncomp, int kind, int has_src, double dt, const tsr_cell_coef *k, ptrdiff_t o,
    int n, const double *restrict in, const double *restrict base, double *restrict acc,
    const double *restrict src, double *restrict out) {
  const ptrdiff_t sc = k->scomp;
  for (int i = 0; i < n; ++i) {
    ptrdiff_t at = o + i;
    double r[TSR_MAX_COMP] = {0};
    tsr_model_rhs(model, in + at, k, r);
    for (int c = 0; c < ncomp; ++c) {
      ptrdiff_t ac = at + c * sc;
      double rc = has_src ? r[c] + src[ac] : r[c];
      double b = uses_base(kind) ? base[ac] : 0.0;
      double a = uses_acc(kind) ? acc[ac] : 0.0;
      out[ac] = tsr_stage_update(kind, dt, b, in[ac], rc, &a);
      if (uses_acc(kind) && kind != TSR_STAGE_RK4_4) acc[ac] = a;
    }
  }
}

static inline __attribute__((always_inline)) void
region_dim(int model, int ncomp, int kind, int dim, const tsr_stage_desc *s, const tsr_box *rg,
           const tsr_field *in, const tsr_field *base, tsr_field *acc, const tsr_field *src,
           tsr_field *out) {
  int nx = rg->hi[0] - rg->lo[0], ny = rg->hi[1] - rg->lo[1], nz = rg->hi[2] - rg->lo[2];
  const double *pi = in->data, *pb = base ? base->data : NULL, *ps = src ? src->data : NULL;
  double *pa = acc ? acc->data : NULL, *po = out->data;
  tsr_cell_coef k = s->coef;
  k.dim = dim; /* a constant here, so the 3D terms of the stencil fold away in 2D */
  const double dt = s->dt;
  /* an orphaned worksharing loop: the parallel region is opened by tsr_stage_host, around the
   * dispatch, so that each (model, kind, dim) instantiation is compiled with its constants */
#pragma omp for collapse(2) schedule(static)
  for (int kk = 0; kk < nz; ++kk)
    for (int jj = 0; jj < ny; ++jj) {
      ptrdiff_t o = tsr_field_at(in, 0, rg->lo[0], rg->lo[1] + jj, rg->lo[2] + kk);
      if (ps) row(model, ncomp, kind, 1, dt, &k, o, nx, pi, pb, pa, ps, po);
      else row(model, ncomp, kind, 0, dt, &k, o, nx, pi, pb, pa, NULL, po);
    }
}

static inline __attribute__((always_inline)) void
region_loop(int model, int ncomp, int kind, const tsr_stage_desc *s, const tsr_box *rg,
            const tsr_field *in, const tsr_field *base, tsr_field *acc, const tsr_field *src,
            tsr_field *out) {
  if (s->coef.dim == 3) region_dim(model, ncomp, kind, 3, s, rg, in, base, acc, src, out);
  else region_dim(model, ncomp, kind, 2, s, rg, in, base, acc, src, out);
}

/* Instantiates the loop for a compile-time (model, kind) pair. */
#define TSR_KINDS(M, NC)                                                                        \
  switch (s->kind) {                                                                           \
  case TSR_STAGE_EULER: region_loop(M, NC, TSR_STAGE_EULER, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_SSP2_2: region_loop(M, NC, TSR_STAGE_SSP2_2, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_SSP3_2: region_loop(M, NC, TSR_STAGE_SSP3_2, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_SSP3_3: region_loop(M, NC, TSR_STAGE_SSP3_3, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_RK4_1: region_loop(M, NC, TSR_STAGE_RK4_1, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_RK4_2: region_loop(M, NC, TSR_STAGE_RK4_2, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_RK4_3: region_loop(M, NC, TSR_STAGE_RK4_3, s, rg, in, base, acc, src, out); break; \
  case TSR_STAGE_RK4_4: region_loop(M, NC, TSR_STAGE_RK4_4, s, rg, in, base, acc, src, out); break; \
  }

void tsr_stage_host(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                    const tsr_field *base, tsr_field *acc, const tsr_field *src, tsr_field *out) {
  if (tsr_box_empty(rg)) return;
#pragma omp parallel
  switch (s->model) {
  case TSR_MODEL_HEAT: TSR_KINDS(TSR_MODEL_HEAT, 1); break;
  case TSR_MODEL_ADVECTION_DIFFUSION: TSR_KINDS(TSR_MODEL_ADVECTION_DIFFUSION, 1); break;
  case TSR_MODEL_WAVE: TSR_KINDS(TSR_MODEL_WAVE, 2); break;
  case TSR_MODEL_GRAY_SCOTT: TSR_KINDS(TSR_MODEL_GRAY_SCOTT, 2); break;
  case TSR_MODEL_ALLEN_CAHN: TSR_KINDS(TSR_MODEL_ALLEN_CAHN, 1); break;
  default: break;
  }
}
