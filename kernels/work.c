#include "kernels/work.h"

/* The cell's stencil as double, shaped like a 3x3(x3) field (strides 1, 3, 9), as the stage's
 * single-precision path gathers it (kernels/stage_host.c), so both see the same values. */
static void gather(const tsr_field *u, ptrdiff_t at, const tsr_cell_coef *k, double *w) {
  const int n = k->dim == 3 ? 27 : 9, wo = k->dim == 3 ? 13 : 4;
  for (int c = 0; c < u->ncomp; ++c) {
    double *wp = w + c * n + wo;
    const ptrdiff_t p = at + c * u->scomp;
    wp[0] = tsr_field_get(u, p);
    wp[-1] = tsr_field_get(u, p - 1);
    wp[1] = tsr_field_get(u, p + 1);
    wp[-3] = tsr_field_get(u, p - u->sy);
    wp[3] = tsr_field_get(u, p + u->sy);
    if (k->dim == 3) {
      wp[-9] = tsr_field_get(u, p - u->sz);
      wp[9] = tsr_field_get(u, p + u->sz);
    }
  }
}

tsr_err tsr_work_host(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *u,
                      int32_t *work, int64_t *total) {
  TSR_CHECK(u && u->mem == TSR_MEM_HOST, TSR_ERR_STATE, "tsr_work_host needs a host field");
  TSR_CHECK(tsr_box_empty(rg) || tsr_box_contains(&u->box, rg), TSR_ERR_STATE,
            "tsr_work_host: the region is not inside the field's owned box");
  TSR_CHECK(u->ncomp == tsr_models[s->model].ncomp, TSR_ERR_STATE,
            "tsr_work_host: the field has %d components, model %s %d", u->ncomp,
            tsr_models[s->model].name, tsr_models[s->model].ncomp);
  tsr_cell_coef k = s->coef, kw = s->coef;
  k.dt = kw.dt = s->dt;
  kw.sy = 3;
  kw.sz = 9;
  kw.scomp = k.dim == 3 ? 27 : 9;
  const int wo = k.dim == 3 ? 13 : 4;
  const int nx = rg->hi[0] - rg->lo[0], ny = rg->hi[1] - rg->lo[1], nz = rg->hi[2] - rg->lo[2];
  int64_t sum = 0;
  if (!tsr_box_empty(rg)) {
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : sum)
    for (int kk = 0; kk < nz; ++kk)
      for (int jj = 0; jj < ny; ++jj) {
        ptrdiff_t o = tsr_field_at(u, 0, rg->lo[0], rg->lo[1] + jj, rg->lo[2] + kk);
        int32_t *row = work + ((int64_t)kk * ny + jj) * nx;
        for (int i = 0; i < nx; ++i) {
          int n;
          if (u->prec == TSR_PREC_DOUBLE) {
            n = tsr_model_work(s->model, (const double *)u->data + o + i, &k);
          } else {
            double w[TSR_MAX_COMP * 27];
            gather(u, o + i, &k, w);
            n = tsr_model_work(s->model, w + wo, &kw);
          }
          row[i] = n;
          sum += n;
        }
      }
  }
  if (total) *total = sum;
  return TSR_OK;
}
