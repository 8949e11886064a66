/* The PINN's training engine on one backend: the network (kernels/net.h), the batch of points
 * with their targets, the loss (kernels/pinn.h) and Adam's state, on the host or on the GPU
 * (where one iteration is a CUDA graph). The trainer (solver/pinn/train.c) drives it with
 * host arrays of doubles; the engine keeps everything in the network's precision. Private to
 * solver/pinn/. */
#ifndef TSR_PINN_ENGINE_H
#define TSR_PINN_ENGINE_H

#include <stdint.h>

#include "kernels/net.h"
#include "kernels/pinn.h"

typedef struct {
  tsr_net_shape shape;     /* nd1 = inputs, nd2 = space axes */
  int single, device;
  double in_scale[4], in_shift[4];
  tsr_pinn_loss_desc loss; /* npts: the batch */
  tsr_pinn_adam adam;      /* n and single are set by the engine */
  int hist_cap;            /* most iterations of one tsr_pinn_engine_run */
  int eval_cap;            /* most points of one tsr_pinn_engine_eval */
  int graphs;              /* device: capture an iteration in a CUDA graph (1) or not (0) */
} tsr_pinn_engine_opts;

typedef struct tsr_pinn_engine tsr_pinn_engine;

/* Errors: TSR_ERR_INPUT (shape), TSR_ERR_MEMORY (the message names the bytes and what to
 * reduce), TSR_ERR_CUDA, TSR_ERR_UNSUPPORTED (device without CUDA). */
tsr_err tsr_pinn_engine_create(const tsr_pinn_engine_opts *o, tsr_pinn_engine **out);
void tsr_pinn_engine_destroy(tsr_pinn_engine **e);

/* Bytes the engine allocates for these options (networks and batch). */
size_t tsr_pinn_engine_bytes(const tsr_pinn_engine_opts *o);

/* The batch: X (nin x npts, host doubles) and the targets T (ncomp x npts). */
tsr_err tsr_pinn_engine_set_batch(tsr_pinn_engine *e, const double *X, const double *T);

/* Parameters and Adam's moments (nparam host doubles each; m, v NULL: zeros) and the
 * iterations done so far. */
tsr_err tsr_pinn_engine_set_state(tsr_pinn_engine *e, const double *theta, const double *m,
                                  const double *v, int64_t iteration);
/* The parameters alone (Adam's moments and the iteration kept): L-BFGS's trial points. */
tsr_err tsr_pinn_engine_set_theta(tsr_pinn_engine *e, const double *theta);
tsr_err tsr_pinn_engine_get_state(tsr_pinn_engine *e, double *theta, double *m, double *v);

/* n <= hist_cap iterations (forward, loss, backward, Adam); hist gets each iteration's term
 * losses (n x nterm, the loss before that iteration's update). */
tsr_err tsr_pinn_engine_run(tsr_pinn_engine *e, int n, double *hist);

/* n iterations issued one phase at a time, each timed (device: CUDA events; host: the
 * clock): phase[0..3] get the seconds in forward, loss, backward and Adam, summed. The
 * parameters move as in tsr_pinn_engine_run (benchmarks: the iteration's breakdown). */
tsr_err tsr_pinn_engine_profile(tsr_pinn_engine *e, int n, double *phase);

/* Floating-point operations of the matrix products of one iteration (forward and backward),
 * counting 2 per multiply-add: the share of the GEMMs' peak a run reaches. */
double tsr_pinn_engine_gemm_flops(const tsr_pinn_engine *e);

/* The loss terms and the gradient at the current parameters, without an update (tests). */
tsr_err tsr_pinn_engine_loss_grad(tsr_pinn_engine *e, double *loss, double *grad);

/* The solution at npts <= eval_cap points X (nin x npts): u (ncomp x npts, host). */
tsr_err tsr_pinn_engine_eval(tsr_pinn_engine *e, const double *X, int npts, double *u);

#endif
