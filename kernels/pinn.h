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
 *   interface  a point on a face this subdomain shares with a neighbour (solver/pinn/iface.h),
 *              its outward normal +-e_axis (F: 2 axis + side), the neighbour's value u', outward
 *              flux f' = n'.grad u' and PDE residual r' at the same point held in N (constants:
 *              each subdomain differentiates only its own network, the XPINN/cPINN convention):
 *                wi[0] (u - (u + u')/2)^2      solution continuity to the average (XPINN)
 *              + wi[1] (f + f')^2              flux continuity, f = n.grad u (cPINN)
 *              + wi[2] (r - r')^2              residual continuity (XPINN)
 *              summed over components, r as in pde (u_t - F - s, s the target)
 *   slab       a point of a time slab's earlier face (interface points too: F = 2 nspace):
 *              r = u - u', u' the earlier slab's value there held in N (its initial condition)
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
  TSR_LOSS_INITIAL,
  TSR_LOSS_INTERFACE,
  TSR_LOSS_SLAB
} tsr_loss_kind;

typedef struct {
  int kind;          /* tsr_loss_kind */
  int start, count;  /* its points in the batch: [start, start + count) (periodic: 2 count);
                        interface: the desc's [if_start, if_start + if_count) */
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
  int nd1;           /* the network's first-derivative channels (nspace + timed); channel
                        1 + nd1 holds the Laplacian in the space axes (the network's Laplacian
                        mode, kernels/net.h: lap = 1, nd2 = nspace) */
  int npts;          /* the batch */
  int single;        /* U and dU are float (else double) */
  tsr_cell_coef coef; /* the model's p and q (strides and h unused) */
  int nterm;
  tsr_loss_term term[TSR_PINN_MAX_TERMS];
  int if_start, if_count; /* the interface points (at most one interface term, over them) */
  double wi[3];           /* interface weights: value (XPINN), flux (cPINN), residual (XPINN) */
} tsr_pinn_loss_desc;

/* Channels per point of U and dU: value, nd1 first derivatives, the Laplacian (every model's
 * F reads the second derivatives through the Laplacian alone). */
TSR_HD static inline int tsr_pinn_channels(const tsr_pinn_loss_desc *d) { return 2 + d->nd1; }

/* Values per interface point and component exchanged with the neighbour: value, outward flux,
 * residual. N[(p - if_start) * 3 * ncomp + k * ncomp + c] holds quantity k of component c. */
#define TSR_PINN_IFACE_NV 3

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
 * double, T[c + ncomp * p]: s, g or u0 by term; s at interface points), the neighbours' values
 * N and the interface points' faces F (both NULL without interface points): writes loss[k] for
 * each term k (weighted mean) and dU (all channels; zero where no term reads). lp: scratch of
 * npts doubles (the caller's, allocated once). OpenMP over points, term sums in point order. */
void tsr_pinn_loss_host(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                        const double *N, const int *F, double *lp, double *loss, void *dU);

/* What a subdomain sends its neighbours: at each of d->npts interface points (U and T of those
 * points alone, F their faces) the value, the outward flux and the residual, into
 * out[p * 3 * ncomp + k * ncomp + c] (doubles). OpenMP over points. */
void tsr_pinn_iface_values_host(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                                const int *F, double *out);

/* One Adam step t (>= 1) on host arrays. */
void tsr_pinn_adam_host(const tsr_pinn_adam *a, int64_t t, void *theta, const void *grad,
                        void *m, void *v);

#ifdef TSR_HAVE_CUDA
/* ---- CUDA (kernels/pinn.cu), asynchronous on stream, no allocation: graph-capturable ---- */

/* As tsr_pinn_loss_host with device arrays (N, F too); lp is device scratch of npts doubles. loss is a
 * device array of nterm doubles; when hist is not NULL the losses are also copied to
 * hist[(*it_dev % hist_cap) * nterm + k] (the iteration from device memory, so one captured
 * graph serves every iteration). Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_loss_cuda(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                           const double *N, const int *F, double *lp, double *loss, void *dU,
                           const int64_t *it_dev, double *hist, int hist_cap, void *stream);

/* As tsr_pinn_iface_values_host with device arrays. Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_iface_values_cuda(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                                   const int *F, double *out, void *stream);

/* One Adam step: t = *it_dev + 1 read on the device, which then stores t into *it_dev.
 * Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_adam_cuda(const tsr_pinn_adam *a, int64_t *it_dev, void *theta,
                           const void *grad, void *m, void *v, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
