/* The engine's host backend and the dispatch to the CUDA one. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "solver/pinn/engine_impl.h"

void tsr_pinn_to_prec(int single, const double *src, size_t n, void *dst) {
  if (single)
    for (size_t i = 0; i < n; ++i) ((float *)dst)[i] = (float)src[i];
  else
    memcpy(dst, src, n * sizeof(double));
}

void tsr_pinn_from_prec(int single, const void *src, size_t n, double *dst) {
  if (single)
    for (size_t i = 0; i < n; ++i) dst[i] = (double)((const float *)src)[i];
  else
    memcpy(dst, src, n * sizeof(double));
}

void tsr_pinn_engine_opts_of(const tsr_case *c, const tsr_pinn_sub *sub, const tsr_pinn_batch *b,
                             int device, tsr_pinn_engine_opts *o) {
  memset(o, 0, sizeof *o);
  int nin;
  tsr_pinn_shape(c, sub, &nin, o->in_scale, o->in_shift);
  o->shape = (tsr_net_shape){.nin = nin, .nout = c->ncomp, .width = c->pinn.width,
                             .depth = c->pinn.depth,
                             .act = c->pinn.act == TSR_PINN_SIN ? TSR_NET_SIN : TSR_NET_TANH,
                             .nd1 = nin, .nd2 = c->dim, .lap = 1};
  o->single = c->precision == TSR_PRECISION_SINGLE;
  o->device = device;
  tsr_pinn_loss_desc *d = &o->loss;
  d->model = c->model;
  d->ncomp = c->ncomp;
  d->nspace = c->dim;
  d->timed = b->timed;
  d->nd1 = nin;
  d->npts = b->npts;
  d->coef.dim = c->dim;
  for (int i = 0; i < tsr_models[c->model].nparam; ++i) d->coef.p[i] = c->param_value[i];
  tsr_model_coef_derived(c->model, d->coef.p, d->coef.q);
  d->nterm = b->nterm;
  memcpy(d->term, b->term, sizeof d->term);
  d->if_start = b->if_start;
  d->if_count = b->if_count;
  for (int k = 0; k < 3; ++k) d->wi[k] = c->pinn.w_iface[k];
  o->adam = (tsr_pinn_adam){.lr = c->pinn.lr, .decay = c->pinn.decay,
                            .decay_every = (double)c->pinn.decay_every, .beta1 = 0.9,
                            .beta2 = 0.999, .eps = 1e-8};
  o->hist_cap = (int)(c->pinn.log_every < 4096 ? c->pinn.log_every : 4096);
  o->graphs = c->gpu.graphs != TSR_GRAPHS_OFF;
  o->comm = MPI_COMM_NULL;
}

static tsr_net_opts net_opts(const tsr_pinn_engine_opts *o, int derivs, int npts) {
  tsr_net_opts n = {.shape = o->shape, .single = o->single, .device = o->device,
                    .npts = npts};
  if (!derivs) n.shape.nd1 = n.shape.nd2 = 0;
  memcpy(n.in_scale, o->in_scale, sizeof n.in_scale);
  memcpy(n.in_shift, o->in_shift, sizeof n.in_shift);
  return n;
}

size_t tsr_pinn_engine_bytes(const tsr_pinn_engine_opts *o) {
  tsr_net_opts a = net_opts(o, 1, o->loss.npts), b = net_opts(o, 0, o->eval_cap);
  size_t es = o->single ? 4 : 8, np = tsr_net_nparam(&o->shape);
  size_t K = (size_t)tsr_net_channels(&o->shape), n = (size_t)o->loss.npts;
  size_t batch = n * ((size_t)o->shape.nin * es + 2 * K * (size_t)o->shape.nout * es +
                      (size_t)o->shape.nout * 8 + 8);
  size_t ev = (size_t)o->eval_cap * (size_t)(o->shape.nin + o->shape.nout) * es;
  size_t ni = (size_t)o->loss.if_count, xb = 0;
  if (ni) {
    tsr_net_opts x = net_opts(o, 1, (int)ni);
    xb = tsr_net_workspace_bytes(&x) +
         ni * (K * (size_t)o->shape.nout * es + 2 * TSR_PINN_IFACE_NV * (size_t)o->shape.nout * 8 + 4);
  }
  return tsr_net_workspace_bytes(&a) + tsr_net_workspace_bytes(&b) + 4 * np * es + batch + ev +
         xb + (size_t)o->hist_cap * TSR_PINN_MAX_TERMS * 8;
}

void tsr_pinn_engine_destroy(tsr_pinn_engine **pe) {
  if (!pe || !*pe) return;
  tsr_pinn_engine *e = *pe;
  /* the networks first: they wait for their work on the engine's stream */
  tsr_net_destroy(&e->net);
  tsr_net_destroy(&e->eval);
  tsr_net_destroy(&e->xnet);
#ifdef TSR_HAVE_CUDA
  if (e->o.device) tsr_pinn_engine_cuda_destroy(e);
#endif
  void *arr[] = {e->theta, e->grad, e->m, e->v, e->X,  e->U,  e->dU, e->Xe,
                 e->Ue,    e->T,    e->lp, e->Ui, e->Fh, e->Sh, e->Nh};
  for (size_t i = 0; i < sizeof arr / sizeof *arr; ++i) free(arr[i]);
  free(e);
  *pe = NULL;
}

static tsr_err host_alloc(tsr_pinn_engine *e) {
  size_t n = (size_t)e->o.loss.npts, es = e->esize, ne = (size_t)e->o.eval_cap;
  size_t KU = (size_t)e->K * (size_t)e->ncomp * n;
  struct { void **p; size_t bytes; } a[] = {
      {&e->theta, e->nparam * es}, {&e->grad, e->nparam * es}, {&e->m, e->nparam * es},
      {&e->v, e->nparam * es},     {&e->X, (size_t)e->nin * n * es}, {&e->U, KU * es},
      {&e->dU, KU * es},           {&e->Xe, (size_t)e->nin * ne * es},
      {&e->Ue, (size_t)e->ncomp * ne * es}, {(void **)&e->T, (size_t)e->ncomp * n * 8},
      {(void **)&e->lp, n * 8}, {&e->Ui, (size_t)e->K * (size_t)e->ncomp * (size_t)e->nif * es}};
  for (size_t i = 0; i < sizeof a / sizeof *a; ++i) {
    *a[i].p = calloc(1, a[i].bytes ? a[i].bytes : 1);
    TSR_CHECK(*a[i].p, TSR_ERR_MEMORY,
              "the PINN's arrays need %zu more bytes; use fewer points or a "
              "smaller network", a[i].bytes);
  }
  return TSR_OK;
}

tsr_err tsr_pinn_engine_create(const tsr_pinn_engine_opts *o, tsr_pinn_engine **out) {
  *out = NULL;
  tsr_pinn_engine *e = calloc(1, sizeof *e);
  TSR_CHECK(e, TSR_ERR_MEMORY, "out of memory creating the PINN engine");
  e->o = *o;
  e->nparam = tsr_net_nparam(&o->shape);
  e->esize = o->single ? 4 : 8;
  e->nin = o->shape.nin;
  e->ncomp = o->shape.nout;
  e->K = tsr_net_channels(&o->shape);
  e->o.adam.n = e->nparam;
  e->o.adam.single = o->single;
  e->o.loss.single = o->single;
  e->nif = o->loss.if_count;
  e->nv = TSR_PINN_IFACE_NV * e->ncomp;
  e->xd = e->o.loss;
  e->xd.npts = e->nif;
  e->xd.nterm = 0;
  tsr_net_opts a = net_opts(o, 1, o->loss.npts), b = net_opts(o, 0, o->eval_cap);
  tsr_net_opts xo = net_opts(o, 1, e->nif);
  size_t ni = (size_t)(e->nif ? e->nif : 1);
  e->Fh = calloc(ni, sizeof *e->Fh);
  e->Sh = calloc(ni * (size_t)e->nv, sizeof *e->Sh);
  e->Nh = calloc(ni * (size_t)e->nv, sizeof *e->Nh);
  tsr_err err = e->Fh && e->Sh && e->Nh
                    ? TSR_OK
                    : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                  "out of memory for %d interface points", e->nif);
  if (err) {
  } else if (o->device) {
#ifdef TSR_HAVE_CUDA
    err = tsr_pinn_engine_cuda_create(e);
    a.stream = b.stream = xo.stream = tsr_pinn_engine_cuda_stream(e);
#endif
  } else {
    err = host_alloc(e);
  }
  if (!err) err = tsr_net_create(&a, &e->net);
  if (!err) err = tsr_net_create(&b, &e->eval);
  if (!err && e->nif) err = tsr_net_create(&xo, &e->xnet);
  if (err) {
    tsr_pinn_engine_destroy(&e);
    return err;
  }
  *out = e;
  return TSR_OK;
}

tsr_err tsr_pinn_engine_set_batch(tsr_pinn_engine *e, const double *X, const double *T) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_set_batch(e, X, T);
#endif
  size_t n = (size_t)e->o.loss.npts;
  tsr_pinn_to_prec(e->o.single, X, (size_t)e->nin * n, e->X);
  memcpy(e->T, T, (size_t)e->ncomp * n * sizeof *T);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_set_state(tsr_pinn_engine *e, const double *theta, const double *m,
                                  const double *v, int64_t iteration) {
  e->it = iteration;
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_set_state(e, theta, m, v);
#endif
  tsr_pinn_to_prec(e->o.single, theta, e->nparam, e->theta);
  if (m) tsr_pinn_to_prec(e->o.single, m, e->nparam, e->m);
  else memset(e->m, 0, e->nparam * e->esize);
  if (v) tsr_pinn_to_prec(e->o.single, v, e->nparam, e->v);
  else memset(e->v, 0, e->nparam * e->esize);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_set_theta(tsr_pinn_engine *e, const double *theta) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_set_theta(e, theta);
#endif
  tsr_pinn_to_prec(e->o.single, theta, e->nparam, e->theta);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_get_state(tsr_pinn_engine *e, double *theta, double *m, double *v) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_get_state(e, theta, m, v);
#endif
  if (theta) tsr_pinn_from_prec(e->o.single, e->theta, e->nparam, theta);
  if (m) tsr_pinn_from_prec(e->o.single, e->m, e->nparam, m);
  if (v) tsr_pinn_from_prec(e->o.single, e->v, e->nparam, v);
  return TSR_OK;
}

/* The interface points' values from the network (what is sent), and the exchange posted. */
static tsr_err host_iface_begin(tsr_pinn_engine *e, int exchange) {
  if (!e->nif) return TSR_OK;
  const void *Xi = (const char *)e->X + (size_t)e->esize * (size_t)e->nin * (size_t)e->o.loss.if_start;
  TSR_CALL(tsr_net_forward(e->xnet, e->theta, Xi, e->nif, e->Ui));
  tsr_pinn_iface_values_host(&e->xd, e->Ui, e->T + (size_t)e->ncomp * e->o.loss.if_start, e->Fh,
                             e->Sh);
  if (exchange && e->xch) TSR_CALL(tsr_pinn_iface_begin(e->xch, e->Sh, e->Nh, NULL));
  return TSR_OK;
}

static tsr_err host_iface_end(tsr_pinn_engine *e, int exchange) {
  if (e->nif && exchange && e->xch) TSR_CALL(tsr_pinn_iface_end(e->xch, NULL));
  return TSR_OK;
}

/* One evaluation of the loss and its gradient; with exchange, the interface exchange runs
 * beside the batch's forward pass. */
static tsr_err host_loss_grad(tsr_pinn_engine *e, double *loss, int exchange) {
  if (exchange) TSR_CALL(host_iface_begin(e, exchange));
  tsr_err err = tsr_net_forward(e->net, e->theta, e->X, e->o.loss.npts, e->U);
  /* ended also after a failed forward pass: the neighbours' messages are matched */
  tsr_err e2 = exchange ? host_iface_end(e, exchange) : TSR_OK;
  TSR_CALL(err);
  TSR_CALL(e2);
  tsr_pinn_loss_host(&e->o.loss, e->U, e->T, e->Nh, e->Fh, e->lp, loss, e->dU);
  return tsr_net_backward(e->net, e->theta, e->dU, e->grad);
}

tsr_err tsr_pinn_engine_set_interface(tsr_pinn_engine *e, const int *F, tsr_pinn_iface *x) {
  TSR_CHECK(!x || !tsr_pinn_iface_device(x) || e->o.device, TSR_ERR_INPUT,
            "the PINN engine is on the host and its interface exchange moves device arrays");
  if (e->nif && F) memcpy(e->Fh, F, (size_t)e->nif * sizeof *F);
  e->xch = x;
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_set_interface(e);
#endif
  return TSR_OK;
}

tsr_err tsr_pinn_engine_set_neighbours(tsr_pinn_engine *e, const double *N) {
  memcpy(e->Nh, N, (size_t)e->nif * (size_t)e->nv * sizeof *N);
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_set_neighbours(e);
#endif
  return TSR_OK;
}

tsr_err tsr_pinn_engine_exchange(tsr_pinn_engine *e, double *send, double *recv) {
  size_t n = (size_t)e->nif * (size_t)e->nv;
#ifdef TSR_HAVE_CUDA
  if (e->o.device) TSR_CALL(tsr_pinn_engine_cuda_exchange(e));
  else
#endif
  {
    TSR_CALL(host_iface_begin(e, 1));
    TSR_CALL(host_iface_end(e, 1));
  }
  if (send) memcpy(send, e->Sh, n * sizeof *send);
  if (recv) memcpy(recv, e->Nh, n * sizeof *recv);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_mismatch(tsr_pinn_engine *e, double *mismatch) {
  *mismatch = 0.0;
#ifdef TSR_HAVE_CUDA
  if (e->o.device) TSR_CALL(tsr_pinn_engine_cuda_get_iface(e));
#endif
  int nc = e->ncomp;
  for (int p = 0; p < e->nif; ++p)
    for (int c = 0; c < nc; ++c) {
      double d = fabs(e->Sh[(size_t)p * e->nv + c] - e->Nh[(size_t)p * e->nv + c]);
      if (d > *mismatch || d != d) *mismatch = d;
    }
  return TSR_OK;
}

tsr_err tsr_pinn_engine_iface_host(tsr_pinn_engine *e, const double **send,
                                   const double **recv, size_t *n) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) TSR_CALL(tsr_pinn_engine_cuda_get_iface(e));
#endif
  *send = e->Sh;
  *recv = e->Nh;
  *n = (size_t)e->nif * (size_t)e->nv;
  return TSR_OK;
}

tsr_err tsr_pinn_engine_run(tsr_pinn_engine *e, int n, double *hist) {
  TSR_CHECK(n >= 0 && n <= e->o.hist_cap, TSR_ERR_INTERNAL,
            "tsr_pinn_engine_run: %d iterations, at most %d", n, e->o.hist_cap);
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_run(e, n, hist);
#endif
  for (int i = 0; i < n; ++i) {
    TSR_CALL(host_loss_grad(e, hist + (size_t)i * e->o.loss.nterm, 1));
    tsr_pinn_adam_host(&e->o.adam, e->it + 1, e->theta, e->grad, e->m, e->v);
    ++e->it;
  }
  return TSR_OK;
}

const char *tsr_pinn_engine_net_path(const tsr_pinn_engine *e) {
  return tsr_net_backend(e->net);
}

const char *tsr_pinn_engine_graph_mode(const tsr_pinn_engine *e, int64_t *replays) {
  if (replays) *replays = 0;
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_graph_mode(e, replays);
#endif
  return "off";
}

static tsr_err loss_grad(tsr_pinn_engine *e, double *loss, double *grad, int exchange) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_loss_grad(e, loss, grad, exchange);
#endif
  TSR_CALL(host_loss_grad(e, loss, exchange));
  tsr_pinn_from_prec(e->o.single, e->grad, e->nparam, grad);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_loss_grad(tsr_pinn_engine *e, double *loss, double *grad) {
  return loss_grad(e, loss, grad, 0);
}

tsr_err tsr_pinn_engine_loss_grad_exchange(tsr_pinn_engine *e, double *loss, double *grad) {
  return loss_grad(e, loss, grad, 1);
}

tsr_err tsr_pinn_engine_eval(tsr_pinn_engine *e, const double *X, int npts, double *u) {
  TSR_CHECK(npts >= 0 && npts <= e->o.eval_cap, TSR_ERR_INTERNAL,
            "tsr_pinn_engine_eval: %d points, at most %d", npts, e->o.eval_cap);
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_eval(e, X, npts, u);
#endif
  tsr_pinn_to_prec(e->o.single, X, (size_t)e->nin * (size_t)npts, e->Xe);
  TSR_CALL(tsr_net_forward(e->eval, e->theta, e->Xe, npts, e->Ue));
  tsr_pinn_from_prec(e->o.single, e->Ue, (size_t)e->ncomp * (size_t)npts, u);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_profile(tsr_pinn_engine *e, int n, double *phase) {
#ifdef TSR_HAVE_CUDA
  if (e->o.device) return tsr_pinn_engine_cuda_profile(e, n, phase);
#endif
  for (int k = 0; k < 6; ++k) phase[k] = 0.0;
  int xch = e->nif && e->xch;
  size_t nx = (size_t)e->nif * (size_t)e->nv;
  double *loss = malloc(TSR_PINN_MAX_TERMS * sizeof *loss);
  double *keep = xch ? malloc(2 * nx * sizeof *keep) : NULL;
  if (!loss || (xch && !keep)) {
    free(loss);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  }
  if (xch) {
    memcpy(keep, e->Sh, nx * sizeof *keep);
    memcpy(keep + nx, e->Nh, nx * sizeof *keep);
  }
  tsr_err err = TSR_OK;
  for (int i = 0; i < n && !err; ++i) {
    if (xch) {
      /* the values alone, then the exchange alone (host_iface_begin does both) */
      const void *Xi = (const char *)e->X + e->esize * (size_t)e->nin * (size_t)e->o.loss.if_start;
      double x0 = MPI_Wtime();
      err = tsr_net_forward(e->xnet, e->theta, Xi, e->nif, e->Ui);
      if (!err)
        tsr_pinn_iface_values_host(&e->xd, e->Ui, e->T + (size_t)e->ncomp * e->o.loss.if_start,
                                   e->Fh, e->Sh);
      double x1 = MPI_Wtime();
      /* exchanged also after a failure: the neighbours' messages are matched */
      tsr_err e2 = tsr_pinn_iface_begin(e->xch, e->Sh, e->Nh, NULL);
      if (!e2) e2 = tsr_pinn_iface_end(e->xch, NULL);
      phase[4] += x1 - x0;
      phase[5] += MPI_Wtime() - x1;
      if (!err) err = e2;
      if (err) break;
    }
    double t0 = MPI_Wtime();
    err = tsr_net_forward(e->net, e->theta, e->X, e->o.loss.npts, e->U);
    double t1 = MPI_Wtime();
    if (!err) tsr_pinn_loss_host(&e->o.loss, e->U, e->T, e->Nh, e->Fh, e->lp, loss, e->dU);
    double t2 = MPI_Wtime();
    if (!err) err = tsr_net_backward(e->net, e->theta, e->dU, e->grad);
    double t3 = MPI_Wtime();
    if (!err) tsr_pinn_adam_host(&e->o.adam, e->it + 1, e->theta, e->grad, e->m, e->v);
    ++e->it;
    double t4 = MPI_Wtime();
    phase[0] += t1 - t0;
    phase[1] += t2 - t1;
    phase[2] += t3 - t2;
    phase[3] += t4 - t3;
  }
  if (xch) {
    memcpy(e->Sh, keep, nx * sizeof *keep);
    memcpy(e->Nh, keep + nx, nx * sizeof *keep);
  }
  free(keep);
  free(loss);
  return err;
}

double tsr_pinn_engine_gemm_flops(const tsr_pinn_engine *e) {
  const tsr_net_shape *s = &e->o.shape;
  double cols = (double)e->K * (double)e->o.loss.npts, f = 0.0;
  /* layer 0 (inputs) is elementwise work, not a product; every later layer is one product
   * forward and two backward (the weights' gradient and the previous layer's) */
  for (int l = 1; l <= s->depth; ++l) {
    int no, ni;
    size_t wo, bo;
    tsr_net_layer(s, l, &no, &ni, &wo, &bo);
    f += 3.0 * 2.0 * no * ni * cols;
  }
  return f;
}
