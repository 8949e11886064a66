/* The PINN's loss and optimizer steps on one backend (host loops or CUDA kernels), around the
 * network of kernels/net.h: from the network's output channels U, each point's residual, the
 * loss terms and dL/dU; then Adam's update of the parameters.
 *
 * The batch is the network's npts points; the terms each take a run of them. A term's loss is
 * weight * mean over its points of the squared residual summed over components:
 *   pde        r = du/dt - F(u, grad u, lap u) - s   (F: tsr_model_point; du/dt left out for a
 *              steady model; s: the target, the case's source)
 *   dirichlet  r = u - g
 *   neumann    r = sign * du/dx_axis - g            (sign: -1 on a lo face, +1 on a hi face)
 *   periodic   r = u(p) - u(p'), r' = du/dx_axis(p) - du/dx_axis(p')  (p' = p + count: the
 *              term's points are `count` points on the lo face then their images on the hi face)
 *   initial    r = u - u0
 * Residuals and sums are computed in double whatever the network's precision; each term's sum
 * runs in a fixed order, so a backend gives the same bits every time. */
#ifndef TSR_PINN_KERNELS_H
#define TSR_PINN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "io/error.h"
#include "kernels/models/cell.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TSR_LOSS_PDE = 0,
  TSR_LOSS_DIRICHLET,
  TSR_LOSS_NEUMANN,
  TSR_LOSS_PERIODIC,
  TSR_LOSS_INITIAL
} tsr_loss_kind;

typedef struct {
  int kind;          /* tsr_loss_kind */
  int start, count;  /* its points in the batch: [start, start + count) (periodic: 2 count) */
  int axis, side;    /* neumann, periodic: the face's axis; neumann: side 0 lo, 1 hi */
  double weight;     /* the case's weight of the term's group */
} tsr_loss_term;

#define TSR_PINN_MAX_TERMS 16

/* What every loss evaluation reads besides the arrays. */
typedef struct {
  int model;         /* tsr_model_id */
  int ncomp;
  int nspace;        /* space axes: the network's first inputs */
  int timed;         /* 1: the last input is t, channel 1 + nspace its derivative */
  int nd1;           /* the network's first-derivative channels (nspace + timed) */
  int npts;          /* the batch */
  int single;        /* U and dU are float (else double) */
  tsr_cell_coef coef; /* the model's p and q (strides and h unused) */
  int nterm;
  tsr_loss_term term[TSR_PINN_MAX_TERMS];
} tsr_pinn_loss_desc;

/* Adam with the learning rate lr * decay^(t / decay_every) at step t (from 1), PyTorch's
 * defaults beta1 0.9, beta2 0.999, eps 1e-8, bias-corrected. */
typedef struct {
  double lr, decay, decay_every;
  double beta1, beta2, eps;
  size_t n;          /* parameters */
  int single;        /* theta, grad, m, v are float (else double) */
} tsr_pinn_adam;

/* ---- host (kernels/pinn.c) ---- */

/* Residuals of every term from U (layout of kernels/net.h) and the targets T (ncomp x npts,
 * double, T[c + ncomp * p]: s, g or u0 by term): writes loss[k] for each term k (weighted
 * mean) and dU (all channels; zero where no term reads). OpenMP over points, term sums in
 * point order. */
void tsr_pinn_loss_host(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                        double *loss, void *dU);

/* One Adam step t (>= 1) on host arrays. */
void tsr_pinn_adam_host(const tsr_pinn_adam *a, int64_t t, void *theta, const void *grad,
                        void *m, void *v);

#ifdef TSR_HAVE_CUDA
/* ---- CUDA (kernels/pinn.cu), asynchronous on stream, no allocation: graph-capturable ---- */

/* As tsr_pinn_loss_host with device arrays; lp is device scratch of npts doubles. loss is a
 * device array of nterm doubles; when hist is not NULL the losses are also copied to
 * hist[(*it_dev % hist_cap) * nterm + k] (the iteration from device memory, so one captured
 * graph serves every iteration). Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_loss_cuda(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                           double *lp, double *loss, void *dU, const int64_t *it_dev,
                           double *hist, int hist_cap, void *stream);

/* One Adam step: t = *it_dev + 1 read on the device, which then stores t into *it_dev.
 * Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_adam_cuda(const tsr_pinn_adam *a, int64_t *it_dev, void *theta,
                           const void *grad, void *m, void *v, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
