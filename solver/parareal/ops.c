/* Parareal's field operations (ops.h): host loops, or the CUDA kernels for device fields. */
#include "solver/parareal/ops.h"

#include <math.h>

#include "kernels/parareal.h"
#include "solver/run_internal.h"

#ifdef TSR_HAVE_CUDA
#define ON_DEVICE(f) ((f)->mem == TSR_MEM_DEVICE)
#define STREAM(x) tsr_backend_cuda_stream(x)
#endif

tsr_err tsr_parareal_copy(tsr_run_ctx *x, tsr_field *dst, const tsr_field *src) {
  (void)x;
#ifdef TSR_HAVE_CUDA
  if (ON_DEVICE(dst)) return tsr_parareal_copy_cuda(dst, src, STREAM(x));
#endif
  tsr_field_copy_box(dst, src, &dst->box);
  return TSR_OK;
}

tsr_err tsr_parareal_restrict(tsr_run_ctx *x, int r, const tsr_field *fine, tsr_field *coarse) {
  (void)x;
#ifdef TSR_HAVE_CUDA
  if (ON_DEVICE(coarse)) return tsr_parareal_restrict_cuda(r, fine, coarse, STREAM(x));
#endif
  const tsr_box *b = &coarse->box;
  const int dim = coarse->dim, rz = dim == 3 ? r : 1;
  const double n = (double)(r * r * rz);
  for (int c = 0; c < coarse->ncomp; ++c)
    for (int K = b->lo[2]; K < b->hi[2]; ++K)
      for (int J = b->lo[1]; J < b->hi[1]; ++J)
        for (int I = b->lo[0]; I < b->hi[0]; ++I) {
          double s = 0.0;
          for (int k = 0; k < rz; ++k)
            for (int j = 0; j < r; ++j)
              for (int i = 0; i < r; ++i)
                s += tsr_field_get(fine, tsr_field_at(fine, c, r * I + i, r * J + j,
                                                      dim == 3 ? r * K + k : K));
          tsr_field_set(coarse, tsr_field_at(coarse, c, I, J, K), s / n);
        }
  return TSR_OK;
}

tsr_err tsr_parareal_prolong(tsr_run_ctx *x, int r, const tsr_field *coarse, tsr_field *fine) {
  (void)x;
#ifdef TSR_HAVE_CUDA
  if (ON_DEVICE(fine)) return tsr_parareal_prolong_cuda(r, coarse, fine, STREAM(x));
#endif
  const tsr_box *b = &fine->box;
  const int dim = fine->dim;
  for (int c = 0; c < fine->ncomp; ++c)
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) {
          const int f[3] = {i, j, k};
          int I[3], side[3] = {0, 0, 0};
          double w[3] = {0, 0, 0}, nb[3] = {0, 0, 0};
          for (int d = 0; d < 3; ++d) I[d] = d < dim ? f[d] / r : f[d];
          for (int d = 0; d < dim; ++d) w[d] = tsr_parareal_weight(f[d], r, &side[d]);
          const double c0 = tsr_field_get(coarse, tsr_field_at(coarse, c, I[0], I[1], I[2]));
          for (int d = 0; d < dim; ++d) {
            int J[3] = {I[0], I[1], I[2]};
            J[d] += side[d];
            nb[d] = tsr_field_get(coarse, tsr_field_at(coarse, c, J[0], J[1], J[2]));
          }
          tsr_field_set(fine, tsr_field_at(fine, c, i, j, k),
                        tsr_parareal_prolong_value(c0, nb, w, dim));
        }
  return TSR_OK;
}

tsr_err tsr_parareal_correct(tsr_run_ctx *x, const tsr_field *f, const tsr_field *gnew,
                             const tsr_field *gold, tsr_field *out, tsr_field *scratch,
                             double chg[2]) {
  (void)x;
#ifdef TSR_HAVE_CUDA
  if (ON_DEVICE(out)) return tsr_parareal_correct_cuda(f, gnew, gold, out, scratch, chg, STREAM(x));
#endif
  (void)scratch;
  const tsr_box *b = &out->box;
  double dmax = 0.0, umax = 0.0;
  for (int c = 0; c < out->ncomp; ++c)
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) {
          const ptrdiff_t o = tsr_field_at(out, c, i, j, k);
          const double old = tsr_field_get(out, o);
          tsr_field_set(out, o, tsr_parareal_correct_value(tsr_field_get(f, o),
                                                           tsr_field_get(gnew, o),
                                                           tsr_field_get(gold, o)));
          const double v = tsr_field_get(out, o), d = fabs(v - old);
          /* written so that a NaN makes the maximum +inf instead of being skipped */
          dmax = d <= dmax ? dmax : (isnan(d) ? INFINITY : d);
          umax = fabs(v) <= umax ? umax : (isnan(v) ? INFINITY : fabs(v));
        }
  chg[0] = dmax;
  chg[1] = umax;
  return TSR_OK;
}
