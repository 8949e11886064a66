/* The PINN's training engine on one backend: the network (kernels/net.h), the batch of points
 * with their targets, the loss (kernels/pinn.h) and Adam's state, on the host or on the GPU
 * (where one iteration is a CUDA graph). The trainer (solver/pinn/train.c) drives it with
 * host arrays of doubles; the engine keeps everything in the network's precision. Private to
 * solver/pinn/. */
#ifndef TSR_PINN_ENGINE_H
#define TSR_PINN_ENGINE_H

#include <mpi.h>
#include <stdint.h>

#include "io/case.h"
#include "kernels/net.h"
#include "kernels/pinn.h"
#include "solver/pinn/iface.h"
#include "solver/pinn/points.h"

typedef struct {
  tsr_net_shape shape;     /* nd1 = inputs, nd2 = space axes, lap = 1 (the loss reads the
                              Laplacian alone, kernels/pinn.h) */
  /* loss.if_count > 0: the batch's last points are interface points; each iteration the
   * engine evaluates its network there (value, flux, residual), sends that to the neighbours
   * through the exchange of tsr_pinn_engine_set_interface, overlapped with the forward pass over
   * the batch, and the loss compares with what they send back */
  int single, device;
  double in_scale[4], in_shift[4];
  tsr_pinn_loss_desc loss; /* npts: the batch */
  tsr_pinn_adam adam;      /* n and single are set by the engine */
  int hist_cap;            /* most iterations of one tsr_pinn_engine_run */
  int eval_cap;            /* most points of one tsr_pinn_engine_eval */
  int graphs;              /* device: capture an iteration in a CUDA graph (1) or not (0) */
  MPI_Comm comm;           /* with an exchange: the ranks that train together (each runs as
                              many iterations), over which the capture of an iteration with
                              the exchange in it is agreed; MPI_COMM_NULL (opts_of's): each
                              engine decides alone (tests) */
} tsr_pinn_engine_opts;

typedef struct tsr_pinn_engine tsr_pinn_engine;

/* The engine's options for the case on subdomain sub (NULL: the whole grid) with batch b (its
 * terms, the network normalised over the subdomain's box): the one construction the trainer
 * and the tests share. eval_cap is left 0 (the caller's), hist_cap from pinn.log_every. */
void tsr_pinn_engine_opts_of(const tsr_case *c, const tsr_pinn_sub *sub, const tsr_pinn_batch *b,
                             int device, tsr_pinn_engine_opts *o);

/* Errors: TSR_ERR_INPUT (shape), TSR_ERR_MEMORY (the message names the bytes and what to
 * reduce), TSR_ERR_CUDA, TSR_ERR_UNSUPPORTED (device without CUDA). */
tsr_err tsr_pinn_engine_create(const tsr_pinn_engine_opts *o, tsr_pinn_engine **out);
void tsr_pinn_engine_destroy(tsr_pinn_engine **e);

/* Bytes the engine allocates for these options (networks and batch). */
size_t tsr_pinn_engine_bytes(const tsr_pinn_engine_opts *o);

/* The batch: X (nin x npts, host doubles) and the targets T (ncomp x npts). */
tsr_err tsr_pinn_engine_set_batch(tsr_pinn_engine *e, const double *X, const double *T);

/* The interface points' faces (loss.if_count ints: 2 axis + side; host) and the exchange
 * with the neighbours (borrowed, NULL: none): MPI for the host; NCCL for the device, or MPI
 * there too where ranks share a GPU (NCCL takes one rank per GPU): the values then go through
 * host memory, the host waiting for them each iteration, and the iteration is not captured
 * into a CUDA graph. Without an exchange the neighbours' values stay those of
 * tsr_pinn_engine_set_neighbours (zeros at first). Errors: TSR_ERR_INPUT (an NCCL exchange on
 * the host), TSR_ERR_CUDA. */
tsr_err tsr_pinn_engine_set_interface(tsr_pinn_engine *e, const int *F, tsr_pinn_iface *x);

/* The neighbours' values at the interface points (if_count x TSR_PINN_IFACE_NV x ncomp host
 * doubles, kernels/pinn.h's layout): held fixed (tests: the gradient with the neighbours'
 * values constant). Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_engine_set_neighbours(tsr_pinn_engine *e, const double *N);

/* One exchange alone at the current parameters (collective with the neighbours): the values
 * this subdomain sends (send) and those it received (recv), host doubles as above; either may
 * be NULL. Without an exchange, recv gets the values held. Errors: the exchange's, the
 * network's. */
tsr_err tsr_pinn_engine_exchange(tsr_pinn_engine *e, double *send, double *recv);

/* The interface mismatch of the last exchange: max over interface points and components of
 * |u - u_nb| (this subdomain's value sent against the neighbour's received); 0 without
 * interface points. */
tsr_err tsr_pinn_engine_mismatch(tsr_pinn_engine *e, double *mismatch);

/* The last values sent and received at the interface points (device: read back first), host
 * doubles as above, borrowed until the engine's next call: *n of each (if_count x nv).
 * Diagnostics (TSR_PINN_TRACE). Errors: TSR_ERR_CUDA. */
tsr_err tsr_pinn_engine_iface_host(tsr_pinn_engine *e, const double **send, const double **recv,
                                   size_t *n);

/* Parameters and Adam's moments (nparam host doubles each; m, v NULL: zeros) and the
 * iterations done so far. */
tsr_err tsr_pinn_engine_set_state(tsr_pinn_engine *e, const double *theta, const double *m,
                                  const double *v, int64_t iteration);
/* The parameters alone (Adam's moments and the iteration kept): L-BFGS's trial points. */
tsr_err tsr_pinn_engine_set_theta(tsr_pinn_engine *e, const double *theta);
tsr_err tsr_pinn_engine_get_state(tsr_pinn_engine *e, double *theta, double *m, double *v);

/* n <= hist_cap iterations (interface exchange begun, forward, exchange ended, loss, backward,
 * Adam); hist gets each iteration's term losses (n x nterm, the loss before that iteration's
 * update). With an exchange: collective with the neighbours, which must run as many. Device,
 * o.graphs: the iteration is captured into a CUDA graph once and replayed (the same bits as
 * plain launches); with an exchange, after one iteration issued plainly (NCCL connects its
 * peers outside any capture) and with the NCCL group inside the graph (NCCL >= 2.9), the
 * capture agreed over o.comm (collective there, once). A capture that fails leaves plain
 * launches for the rest of the engine's life, with one warning on stderr. */
tsr_err tsr_pinn_engine_run(tsr_pinn_engine *e, int n, double *hist);

/* Which way the batch's network runs its passes: "host" (BLAS), or on the GPU "layers",
 * "cublas" or "fused" (kernels/net.h says when each is taken). A static string. */
const char *tsr_pinn_engine_net_path(const tsr_pinn_engine *e);

/* "on" (iterations replayed from a CUDA graph), "fallback" (its capture failed), or "off"
 * (host, o.graphs 0, or none run yet). *replays: iterations replayed (may be NULL). */
const char *tsr_pinn_engine_graph_mode(const tsr_pinn_engine *e, int64_t *replays);

/* n iterations issued one phase at a time, each timed (device: CUDA events; host: the
 * clock): phase[0..3] get the seconds in forward, loss, backward and Adam, summed; with an
 * exchange, each iteration first evaluates the interface values and exchanges them alone,
 * phase[4] the seconds of the values (the interface points' forward pass) and phase[5] of the
 * exchange (posted to completed, nothing beside it: what the iteration has to hide; collective
 * with the neighbours, which must profile as many), else both 0. The values sent and received
 * before the call are put back after it. The parameters move as in tsr_pinn_engine_run
 * (benchmarks: the iteration's breakdown). */
tsr_err tsr_pinn_engine_profile(tsr_pinn_engine *e, int n, double *phase);

/* Floating-point operations of the matrix products of one iteration (forward and backward),
 * counting 2 per multiply-add: the share of the GEMMs' peak a run reaches. */
double tsr_pinn_engine_gemm_flops(const tsr_pinn_engine *e);

/* The loss terms and the gradient at the current parameters, without an update and without an
 * exchange (the neighbours' values held: L-BFGS's line search, tests). */
tsr_err tsr_pinn_engine_loss_grad(tsr_pinn_engine *e, double *loss, double *grad);

/* The same with the interface exchange at the current parameters first (beside the forward
 * pass, as in an iteration): the neighbours' values are theirs now, and stay held after it
 * (L-BFGS on several ranks). Collective with the neighbours. Without an exchange as
 * tsr_pinn_engine_loss_grad. */
tsr_err tsr_pinn_engine_loss_grad_exchange(tsr_pinn_engine *e, double *loss, double *grad);

/* The solution at npts <= eval_cap points X (nin x npts): u (ncomp x npts, host). */
tsr_err tsr_pinn_engine_eval(tsr_pinn_engine *e, const double *X, int npts, double *u);

#endif
