#include "kernels/pinn.h"

#include <math.h>

#include "kernels/pinn_point.h"

void tsr_pinn_loss_host(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                        const double *N, const int *F, double *lp, double *loss, void *dU) {
#pragma omp parallel for schedule(static) if (d->npts > 4096)
  for (int p = 0; p < d->npts; ++p) lp[p] = tsr_pinn_point(d, p, U, T, N, F, dU);
  /* each term in point order: the same bits for any thread count */
  for (int k = 0; k < d->nterm; ++k) {
    const tsr_loss_term *t = &d->term[k];
    double s = 0.0;
    for (int i = 0; i < t->count; ++i) s += lp[t->start + i];
    loss[k] = s;
  }
}

void tsr_pinn_iface_values_host(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                                const int *F, double *out) {
  const size_t nv = (size_t)TSR_PINN_IFACE_NV * (size_t)d->ncomp;
#pragma omp parallel for schedule(static) if (d->npts > 4096)
  for (int p = 0; p < d->npts; ++p) tsr_pinn_iface_point(d, p, U, T, F, out + (size_t)p * nv);
}

/* The step's scalars, computed once in double by both backends' formulas. */
static void adam_scalars(const tsr_pinn_adam *a, int64_t t, double *lr, double *bc1,
                         double *bc2) {
  *lr = a->lr * pow(a->decay, (double)t / a->decay_every);
  *bc1 = 1.0 - pow(a->beta1, (double)t);
  *bc2 = 1.0 - pow(a->beta2, (double)t);
}

void tsr_pinn_adam_host(const tsr_pinn_adam *a, int64_t t, void *theta, const void *grad,
                        void *m, void *v) {
  double lr, bc1, bc2;
  adam_scalars(a, t, &lr, &bc1, &bc2);
  const double b1 = a->beta1, b2 = a->beta2, eps = a->eps, sq2 = sqrt(bc2);
  if (a->single) {
    float *th = theta, *mm = m, *vv = v;
    const float *g = grad;
    const float fb1 = (float)b1, fb2 = (float)b2;
#pragma omp parallel for schedule(static) if (a->n > 65536)
    for (size_t i = 0; i < a->n; ++i) {
      mm[i] = fb1 * mm[i] + (1.0f - fb1) * g[i];
      vv[i] = fb2 * vv[i] + (1.0f - fb2) * g[i] * g[i];
      /* PyTorch's form: lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) */
      float den = sqrtf(vv[i]) / (float)sq2 + (float)eps;
      th[i] = th[i] - (float)(lr / bc1) * mm[i] / den;
    }
  } else {
    double *th = theta, *mm = m, *vv = v;
    const double *g = grad;
#pragma omp parallel for schedule(static) if (a->n > 65536)
    for (size_t i = 0; i < a->n; ++i) {
      mm[i] = b1 * mm[i] + (1.0 - b1) * g[i];
      vv[i] = b2 * vv[i] + (1.0 - b2) * g[i] * g[i];
      double den = sqrt(vv[i]) / sq2 + eps;
      th[i] = th[i] - (lr / bc1) * mm[i] / den;
    }
  }
}
