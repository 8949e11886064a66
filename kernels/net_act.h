/* The PINN network's activations, written once for the host backend (kernels/net_host_tmpl.h)
 * and the CUDA kernels (kernels/net.cu, kernels/net_fused.cu): s(a) and its first three
 * derivatives (the third is needed by the reverse pass of the second-derivative channels).
 *
 * The derivatives take y = s(a) as the forward pass computed it: tanh's come from y alone, so
 * the reverse pass differentiates exactly the value the forward pass propagated, and
 * (1 - y)(1 + y) keeps the relative accuracy of 1 - y^2 where |y| is near 1. One function per
 * element type (C has no overloading); act is a tsr_net_act (0 tanh, 1 sin). */
#ifndef TSR_NET_ACT_H
#define TSR_NET_ACT_H

#include <math.h>

#include "kernels/models/cell.h" /* TSR_HD */

TSR_HD static inline double tsr_net_act_value_d(int act, double a) {
  return act == 0 ? tanh(a) : sin(a);
}

TSR_HD static inline float tsr_net_act_value_f(int act, float a) {
  return act == 0 ? tanhf(a) : sinf(a);
}

/* s', s'', s''' at a, from y = s(a). */
TSR_HD static inline void tsr_net_act_derivs_d(int act, double a, double y, double *s1,
                                               double *s2, double *s3) {
  if (act == 0) {
    const double d = (1 - y) * (1 + y);
    *s1 = d;
    *s2 = -2 * y * d;
    *s3 = -2 * d * d + 4 * y * y * d;
  } else {
    const double c = cos(a);
    *s1 = c;
    *s2 = -y;
    *s3 = -c;
  }
}

TSR_HD static inline void tsr_net_act_derivs_f(int act, float a, float y, float *s1, float *s2,
                                               float *s3) {
  if (act == 0) {
    const float d = (1 - y) * (1 + y);
    *s1 = d;
    *s2 = -2 * y * d;
    *s3 = -2 * d * d + 4 * y * y * d;
  } else {
    const float c = cosf(a);
    *s1 = c;
    *s2 = -y;
    *s3 = -c;
  }
}

#endif
