/* Private to solver/pinn/engine*.c: the engine handle of both backends. */
#ifndef TSR_PINN_ENGINE_IMPL_H
#define TSR_PINN_ENGINE_IMPL_H

#include <stddef.h>

#include "solver/pinn/engine.h"

struct tsr_pinn_engine {
  tsr_pinn_engine_opts o;
  size_t nparam, esize;   /* parameters; bytes per value (4 or 8) */
  int nin, ncomp, K;
  tsr_net *net;           /* the batch's network, every derivative channel */
  tsr_net *eval;          /* the same parameters, value channel only, for eval_cap points */
  int64_t it;             /* iterations done */
  /* interface points (o.loss.if_count of them): the network over them alone, with every
   * derivative channel (what is sent is computed from it before the batch's forward pass) */
  int nif, nv;            /* points; doubles exchanged per point */
  tsr_net *xnet;
  tsr_pinn_loss_desc xd;  /* the loss desc over the interface points alone */
  tsr_pinn_iface *xch;    /* borrowed, or NULL */
  int *Fh;                /* host copy of the faces */
  double *Sh, *Nh;        /* host copies of the last values sent and received (device: filled
                             on request) */
  /* host backend: arrays in the network's precision (T and the losses in double) */
  void *theta, *grad, *m, *v, *X, *U, *dU, *Xe, *Ue, *Ui;
  double *T, *lp;         /* lp: the loss's per-point scratch, allocated once */
  void *dev;              /* the CUDA backend's (solver/pinn/engine_cuda.c) */
};

/* Host doubles into the precision's values (dst of n values). */
void tsr_pinn_to_prec(int single, const double *src, size_t n, void *dst);
/* And back. */
void tsr_pinn_from_prec(int single, const void *src, size_t n, double *dst);

#ifdef TSR_HAVE_CUDA
tsr_err tsr_pinn_engine_cuda_create(struct tsr_pinn_engine *e);
void tsr_pinn_engine_cuda_destroy(struct tsr_pinn_engine *e);
/* The stream every call of the engine is issued on (the networks' too). */
void *tsr_pinn_engine_cuda_stream(struct tsr_pinn_engine *e);
tsr_err tsr_pinn_engine_cuda_set_batch(struct tsr_pinn_engine *e, const double *X,
                                       const double *T);
tsr_err tsr_pinn_engine_cuda_set_state(struct tsr_pinn_engine *e, const double *theta,
                                       const double *m, const double *v);
tsr_err tsr_pinn_engine_cuda_set_theta(struct tsr_pinn_engine *e, const double *theta);
tsr_err tsr_pinn_engine_cuda_get_state(struct tsr_pinn_engine *e, double *theta, double *m,
                                       double *v);
tsr_err tsr_pinn_engine_cuda_profile(struct tsr_pinn_engine *e, int n, double *phase);
tsr_err tsr_pinn_engine_cuda_run(struct tsr_pinn_engine *e, int n, double *hist);
const char *tsr_pinn_engine_cuda_graph_mode(const struct tsr_pinn_engine *e, int64_t *replays);
tsr_err tsr_pinn_engine_cuda_loss_grad(struct tsr_pinn_engine *e, double *loss, double *grad,
                                       int exchange);
tsr_err tsr_pinn_engine_cuda_eval(struct tsr_pinn_engine *e, const double *X, int npts,
                                  double *u);
/* Faces and neighbours' values into the device arrays. */
tsr_err tsr_pinn_engine_cuda_set_interface(struct tsr_pinn_engine *e);
tsr_err tsr_pinn_engine_cuda_set_neighbours(struct tsr_pinn_engine *e);
/* One exchange alone; the values sent and received into e->Sh, e->Nh. */
tsr_err tsr_pinn_engine_cuda_exchange(struct tsr_pinn_engine *e);
/* The last values sent and received into e->Sh, e->Nh. */
tsr_err tsr_pinn_engine_cuda_get_iface(struct tsr_pinn_engine *e);
#endif

#endif
