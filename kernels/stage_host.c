#include <math.h>

#include "kernels/stage.h"
#include "kernels/stage_cell_host.h"

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
  tsr_model_coef_derived(model, p, k->q);
}

/* One row of cells. Inlined with constant model, kind, precision and source flag so that
 * every branch folds and the x loop vectorises; out never aliases the arrays it reads. The
 * right-hand side is kernels/stage_cell_host.h's, shared with kernels/steps_host_tiles.h. */
static inline __attribute__((always_inline)) void
row(int model, int ncomp, int kind, int prec, int has_src, double dt, const tsr_cell_coef *k,
    ptrdiff_t o, int n, const void *restrict in, const void *restrict base, void *restrict acc,
    const void *restrict src, void *restrict out) {
  const ptrdiff_t sc = k->scomp;
  const tsr_cell_coef kw = tsr_cell_window_coef(k);
  for (int i = 0; i < n; ++i) {
    ptrdiff_t at = o + i;
    double r[TSR_MAX_COMP] = {0};
    tsr_cell_rhs_at(model, ncomp, prec, in, at, k, &kw, r);
    for (int c = 0; c < ncomp; ++c) {
      ptrdiff_t ac = at + c * sc;
      double rc = has_src ? r[c] + tsr_cell_ld(prec, src, ac) : r[c];
      double b = tsr_stage_uses_base(kind) ? tsr_cell_ld(prec, base, ac) : 0.0;
      double a = tsr_stage_uses_acc(kind) ? tsr_cell_ld(prec, acc, ac) : 0.0;
      tsr_cell_st(prec, out, ac, tsr_stage_update(kind, dt, b, tsr_cell_ld(prec, in, ac), rc, &a));
      if (tsr_stage_uses_acc(kind) && kind != TSR_STAGE_RK4_4) tsr_cell_st(prec, acc, ac, a);
    }
  }
}

static inline __attribute__((always_inline)) void
region_dim(int model, int ncomp, int kind, int dim, int prec, const tsr_stage_desc *s,
           const tsr_box *rg, const tsr_field *in, const tsr_field *base, tsr_field *acc,
           const tsr_field *src, tsr_field *out) {
  int nx = rg->hi[0] - rg->lo[0], ny = rg->hi[1] - rg->lo[1], nz = rg->hi[2] - rg->lo[2];
  const void *pi = in->data, *pb = base ? base->data : NULL, *ps = src ? src->data : NULL;
  void *pa = acc ? acc->data : NULL, *po = out->data;
  tsr_cell_coef k = s->coef;
  k.dim = dim; /* a constant here, so the 3D terms of the stencil fold away in 2D */
  const double dt = s->dt;
  k.dt = dt;
  /* an orphaned worksharing loop: the parallel region is opened by tsr_stage_host, around the
   * dispatch, so that each (model, kind, dim) instantiation is compiled with its constants */
#pragma omp for collapse(2) schedule(static)
  for (int kk = 0; kk < nz; ++kk)
    for (int jj = 0; jj < ny; ++jj) {
      ptrdiff_t o = tsr_field_at(in, 0, rg->lo[0], rg->lo[1] + jj, rg->lo[2] + kk);
      if (ps) row(model, ncomp, kind, prec, 1, dt, &k, o, nx, pi, pb, pa, ps, po);
      else row(model, ncomp, kind, prec, 0, dt, &k, o, nx, pi, pb, pa, NULL, po);
    }
}

static inline __attribute__((always_inline)) void
region_loop(int model, int ncomp, int kind, const tsr_stage_desc *s, const tsr_box *rg,
            const tsr_field *in, const tsr_field *base, tsr_field *acc, const tsr_field *src,
            tsr_field *out) {
  const int single = in->prec == TSR_PREC_SINGLE;
  if (s->coef.dim == 3) {
    if (single) region_dim(model, ncomp, kind, 3, TSR_PREC_SINGLE, s, rg, in, base, acc, src, out);
    else region_dim(model, ncomp, kind, 3, TSR_PREC_DOUBLE, s, rg, in, base, acc, src, out);
  } else {
    if (single) region_dim(model, ncomp, kind, 2, TSR_PREC_SINGLE, s, rg, in, base, acc, src, out);
    else region_dim(model, ncomp, kind, 2, TSR_PREC_DOUBLE, s, rg, in, base, acc, src, out);
  }
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
  case TSR_MODEL_IGNITION: TSR_KINDS(TSR_MODEL_IGNITION, 1); break;
  default: break; /* no explicit stage (tsr_models[].methods): out is left as it was */
  }
}
