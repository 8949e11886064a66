/* The engine's CUDA backend: device arrays, one iteration (forward, loss, backward, Adam) as
 * a CUDA graph replayed n times, the losses of every iteration kept on the device and read
 * back once per run call. With an interface exchange the graph holds the NCCL group too: the
 * comm stream forks from the compute stream at an event and joins it at another
 * (solver/pinn/iface_nccl_cuda.c), which stream capture records as the graph's edges. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_util.h"
#include "solver/pinn/engine_impl.h"
#include "solver/run.h"

typedef struct {
  cudaStream_t stream;
  void *theta, *grad, *m, *v, *X, *U, *dU, *Xe, *Ue, *Ui;
  double *T, *lp, *loss, *hist;
  double *S, *N;         /* interface values sent and received (nif x nv) */
  int *F;                /* interface points' faces */
  int64_t *it;
  void *stage;           /* pinned host staging of the largest upload or download */
  size_t stage_bytes;
  cudaGraphExec_t graph; /* one iteration, captured at the first run (with an exchange: after
                            the first iteration, issued plainly) */
  int plain_done;        /* an iteration was issued plainly */
  int fallback;          /* the capture failed: plain launches from then on */
  int64_t replays;       /* iterations replayed from the graph */
} cuda_engine;

static tsr_err dalloc(void **p, size_t bytes) {
  cudaError_t r = cudaMalloc(p, bytes ? bytes : 1);
  if (r != cudaSuccess) {
    cudaGetLastError();
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of GPU memory: the PINN needs %zu more bytes (%s); use fewer points "
                       "or a smaller network", bytes, cudaGetErrorString(r));
  }
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_create(tsr_pinn_engine *e) {
  cuda_engine *g = calloc(1, sizeof *g);
  TSR_CHECK(g, TSR_ERR_MEMORY, "out of memory creating the PINN's CUDA engine");
  e->dev = g;
  /* refuse before any allocation: a failure half-way through set-up says less */
  /* beyond the host's arrays (tsr_pinn_engine_bytes) the CUDA networks keep two gradient
   * buffers and a copy of X per network, and a 32 MiB cuBLAS workspace each */
  size_t cols = (size_t)e->K * (size_t)e->o.loss.npts, ecols = (size_t)e->o.eval_cap;
  size_t extra = (2 * (size_t)e->o.shape.width * (cols + ecols) +
                  (size_t)e->nin * ((size_t)e->o.loss.npts + ecols)) * e->esize +
                 ((size_t)64 << 20);
  size_t free_b = 0, total_b = 0, need = tsr_pinn_engine_bytes(&e->o) + extra;
  TSR_CUDA(cudaMemGetInfo(&free_b, &total_b));
  TSR_CHECK(need <= free_b, TSR_ERR_INPUT,
            "the PINN needs %.2f GiB of GPU memory (network %d x %d over %d points with %d "
            "channels each) and the GPU has %.2f GiB free of %.2f; give fewer points "
            "(pinn.points) or a smaller network (pinn.network)", need / 1073741824.0,
            e->o.shape.depth, e->o.shape.width, e->o.loss.npts, e->K, free_b / 1073741824.0,
            total_b / 1073741824.0);
  TSR_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  size_t n = (size_t)e->o.loss.npts, es = e->esize, ne = (size_t)e->o.eval_cap;
  size_t KU = (size_t)e->K * (size_t)e->ncomp * n;
  struct { void **p; size_t bytes; } a[] = {
      {&g->theta, e->nparam * es}, {&g->grad, e->nparam * es}, {&g->m, e->nparam * es},
      {&g->v, e->nparam * es},     {&g->X, (size_t)e->nin * n * es}, {&g->U, KU * es},
      {&g->dU, KU * es},           {&g->Xe, (size_t)e->nin * ne * es},
      {&g->Ue, (size_t)e->ncomp * ne * es}, {(void **)&g->T, (size_t)e->ncomp * n * 8},
      {(void **)&g->lp, n * 8},    {(void **)&g->loss, TSR_PINN_MAX_TERMS * 8},
      {(void **)&g->hist, (size_t)e->o.hist_cap * TSR_PINN_MAX_TERMS * 8},
      {(void **)&g->it, sizeof(int64_t)},
      {&g->Ui, (size_t)e->K * (size_t)e->ncomp * (size_t)e->nif * es},
      {(void **)&g->S, (size_t)e->nif * (size_t)e->nv * 8},
      {(void **)&g->N, (size_t)e->nif * (size_t)e->nv * 8},
      {(void **)&g->F, (size_t)e->nif * sizeof(int)}};
  for (size_t i = 0; i < sizeof a / sizeof *a; ++i) TSR_CALL(dalloc(a[i].p, a[i].bytes));
  size_t big = (size_t)e->nin * (n > ne ? n : ne) * 8;
  if ((size_t)e->ncomp * n * 8 > big) big = (size_t)e->ncomp * n * 8;
  if (e->nparam * 8 > big) big = e->nparam * 8;
  if ((size_t)e->o.hist_cap * TSR_PINN_MAX_TERMS * 8 > big)
    big = (size_t)e->o.hist_cap * TSR_PINN_MAX_TERMS * 8;
  if ((size_t)e->nif * (size_t)e->nv * 8 > big) big = (size_t)e->nif * (size_t)e->nv * 8;
  g->stage_bytes = big;
  TSR_CUDA(cudaMallocHost(&g->stage, big));
  return TSR_OK;
}

void *tsr_pinn_engine_cuda_stream(tsr_pinn_engine *e) {
  return e->dev ? (void *)((cuda_engine *)e->dev)->stream : NULL;
}

void tsr_pinn_engine_cuda_destroy(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (!g) return;
  if (g->graph) cudaGraphExecDestroy(g->graph);
  void *arr[] = {g->theta, g->grad, g->m,  g->v,    g->X,    g->U,  g->dU, g->Xe, g->Ue,
                 g->T,     g->lp,   g->loss, g->hist, g->it, g->Ui, g->S,  g->N,  g->F};
  for (size_t i = 0; i < sizeof arr / sizeof *arr; ++i) cudaFree(arr[i]);
  if (g->stage) cudaFreeHost(g->stage);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
  e->dev = NULL;
}

/* n host doubles as precision values (single: float) into the device array dst. */
static tsr_err upload(tsr_pinn_engine *e, const double *src, size_t n, int as_prec, void *dst) {
  cuda_engine *g = e->dev;
  size_t bytes = as_prec ? n * e->esize : n * 8;
  if (as_prec) tsr_pinn_to_prec(e->o.single, src, n, g->stage);
  else memcpy(g->stage, src, bytes);
  TSR_CUDA(cudaMemcpyAsync(dst, g->stage, bytes, cudaMemcpyHostToDevice, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  return TSR_OK;
}

static tsr_err download(tsr_pinn_engine *e, const void *src, size_t n, double *dst) {
  cuda_engine *g = e->dev;
  TSR_CUDA(cudaMemcpyAsync(g->stage, src, n * e->esize, cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  tsr_pinn_from_prec(e->o.single, g->stage, n, dst);
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_set_batch(tsr_pinn_engine *e, const double *X, const double *T) {
  cuda_engine *g = e->dev;
  size_t n = (size_t)e->o.loss.npts;
  TSR_CALL(upload(e, X, (size_t)e->nin * n, 1, g->X));
  return upload(e, T, (size_t)e->ncomp * n, 0, g->T);
}

tsr_err tsr_pinn_engine_cuda_set_state(tsr_pinn_engine *e, const double *theta, const double *m,
                                       const double *v) {
  cuda_engine *g = e->dev;
  TSR_CALL(upload(e, theta, e->nparam, 1, g->theta));
  if (m) TSR_CALL(upload(e, m, e->nparam, 1, g->m));
  else TSR_CUDA(cudaMemsetAsync(g->m, 0, e->nparam * e->esize, g->stream));
  if (v) TSR_CALL(upload(e, v, e->nparam, 1, g->v));
  else TSR_CUDA(cudaMemsetAsync(g->v, 0, e->nparam * e->esize, g->stream));
  TSR_CUDA(cudaMemcpyAsync(g->it, &e->it, sizeof e->it, cudaMemcpyHostToDevice, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_set_theta(tsr_pinn_engine *e, const double *theta) {
  return upload(e, theta, e->nparam, 1, ((cuda_engine *)e->dev)->theta);
}

tsr_err tsr_pinn_engine_cuda_get_state(tsr_pinn_engine *e, double *theta, double *m, double *v) {
  cuda_engine *g = e->dev;
  if (theta) TSR_CALL(download(e, g->theta, e->nparam, theta));
  if (m) TSR_CALL(download(e, g->m, e->nparam, m));
  if (v) TSR_CALL(download(e, g->v, e->nparam, v));
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_set_interface(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (!e->nif) return TSR_OK;
  memcpy(g->stage, e->Fh, (size_t)e->nif * sizeof(int));
  TSR_CUDA(cudaMemcpyAsync(g->F, g->stage, (size_t)e->nif * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_set_neighbours(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (!e->nif) return TSR_OK;
  return upload(e, e->Nh, (size_t)e->nif * (size_t)e->nv, 0, g->N);
}

/* An exchange over MPI on a GPU (ranks sharing a GPU; solver/pinn/engine.h): its values go
 * through host memory. One with no neighbours is no exchange. */
static int staged(const tsr_pinn_engine *e) {
  return e->xch && !tsr_pinn_iface_device(e->xch) && tsr_pinn_iface_npeer(e->xch) > 0;
}

/* The exchange of S into N posted: NCCL on its own stream after the compute stream's work so
 * far; MPI (staged) from the host copy of S, which the host waits for. */
static tsr_err xbegin(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (tsr_pinn_iface_device(e->xch)) return tsr_pinn_iface_begin(e->xch, g->S, g->N, g->stream);
  if (!staged(e)) return TSR_OK;
  size_t n = (size_t)e->nif * (size_t)e->nv * 8;
  TSR_CUDA(cudaMemcpyAsync(g->stage, g->S, n, cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  memcpy(e->Sh, g->stage, n);
  return tsr_pinn_iface_begin(e->xch, e->Sh, e->Nh, NULL);
}

/* Its end: NCCL: the compute stream waits for it; MPI: the host waits (the forward pass goes
 * on on the GPU meanwhile), then N is copied up on the compute stream. Ended also after a
 * failure before it (the neighbours' messages are matched). */
static tsr_err xend(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (tsr_pinn_iface_device(e->xch)) return tsr_pinn_iface_end(e->xch, g->stream);
  if (!staged(e)) return TSR_OK;
  TSR_CALL(tsr_pinn_iface_end(e->xch, NULL));
  /* from pageable memory: the call returns once it has read Nh */
  TSR_CUDA(cudaMemcpyAsync(g->N, e->Nh, (size_t)e->nif * (size_t)e->nv * 8,
                           cudaMemcpyHostToDevice, g->stream));
  return TSR_OK;
}

/* The interface points' values from the network into S (what is sent) and the exchange
 * posted after them: the NCCL group runs on the exchange's stream beside the batch's forward
 * pass (over MPI, the host's wait for the neighbours does). */
static tsr_err issue_iface_begin(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (!e->nif) return TSR_OK;
  const void *Xi = (const char *)g->X + e->esize * (size_t)e->nin * (size_t)e->o.loss.if_start;
  TSR_CALL(tsr_net_forward(e->xnet, g->theta, Xi, e->nif, g->Ui));
  TSR_CALL(tsr_pinn_iface_values_cuda(&e->xd, g->Ui, g->T + (size_t)e->ncomp * e->o.loss.if_start,
                                      g->F, g->S, g->stream));
  if (e->xch) TSR_CALL(xbegin(e));
  return TSR_OK;
}

/* [exchange begun], forward, [exchange ended], loss (its terms also into the history row of
 * the device's iteration), backward. */
static tsr_err issue_loss_grad(tsr_pinn_engine *e, int hist, int exchange) {
  cuda_engine *g = e->dev;
  if (exchange) TSR_CALL(issue_iface_begin(e));
  tsr_err err = tsr_net_forward(e->net, g->theta, g->X, e->o.loss.npts, g->U);
  if (exchange && e->nif && e->xch) {
    tsr_err e2 = xend(e);
    if (!err) err = e2;
  }
  TSR_CALL(err);
  TSR_CALL(tsr_pinn_loss_cuda(&e->o.loss, g->U, g->T, g->N, g->F, g->lp, g->loss, g->dU, g->it,
                              hist ? g->hist : NULL, e->o.hist_cap, g->stream));
  return tsr_net_backward(e->net, g->theta, g->dU, g->grad);
}

tsr_err tsr_pinn_engine_cuda_exchange(tsr_pinn_engine *e) {
  if (!e->nif) return TSR_OK;
  TSR_CALL(issue_iface_begin(e));
  if (e->xch) TSR_CALL(xend(e));
  return tsr_pinn_engine_cuda_get_iface(e);
}

tsr_err tsr_pinn_engine_cuda_get_iface(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  size_t n = (size_t)e->nif * (size_t)e->nv * 8;
  if (!n) return TSR_OK;
  TSR_CUDA(cudaMemcpyAsync(g->stage, g->S, n, cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  memcpy(e->Sh, g->stage, n);
  TSR_CUDA(cudaMemcpyAsync(g->stage, g->N, n, cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  memcpy(e->Nh, g->stage, n);
  return TSR_OK;
}

static tsr_err issue_iteration(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  TSR_CALL(issue_loss_grad(e, 1, 1));
  return tsr_pinn_adam_cuda(&e->o.adam, g->it, g->theta, g->grad, g->m, g->v, g->stream);
}

/* One iteration recorded into g->graph, nothing of it run. On failure the stream has left
 * capture and g->graph is NULL. */
static tsr_err capture(tsr_pinn_engine *e) {
  cuda_engine *g = e->dev;
  if (e->xch) {
    /* NCCL captures its calls from 2.9 on (codes before 2.9: 1000 major + 100 minor + patch) */
    int v = 0;
    TSR_NCCL(ncclGetVersion(&v));
    TSR_CHECK(v >= 20900, TSR_ERR_UNSUPPORTED, "this NCCL (%d.%d) cannot be captured into CUDA "
              "graphs (2.9 or newer can)", v / 1000, v / 100 % 10);
  }
  cudaGraph_t graph = NULL;
  TSR_CUDA(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
  tsr_err err = issue_iteration(e);
  cudaError_t r = cudaStreamEndCapture(g->stream, &graph);
  if (!err && r != cudaSuccess) err = tsr_cuda_fail((int)r, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (!err) {
    /* the NCCL kernels keep the comm stream's high priority (a property of each captured
     * node); with one stream, as on one rank, every node has the same */
    r = cudaGraphInstantiate(&g->graph, graph, cudaGraphInstantiateFlagUseNodePriority);
    if (r != cudaSuccess) {
      g->graph = NULL;
      err = tsr_cuda_fail((int)r, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  if (err) (void)cudaGetLastError(); /* a failed capture's error is not the next launch's */
  return err;
}

/* Whether the next iteration is replayed (*use), capturing it first where it is time to: at
 * once without an exchange; with one, after an iteration issued plainly, and agreed over
 * o.comm, since the ranks' NCCL calls must match (all replay, or all go on plainly). */
static tsr_err ready_graph(tsr_pinn_engine *e, int *use) {
  cuda_engine *g = e->dev;
  *use = g->graph != NULL;
  /* an exchange over MPI (ranks sharing a GPU) has the host in the iteration: plain launches */
  if (*use || !e->o.graphs || g->fallback || staged(e) || (e->xch && !g->plain_done))
    return TSR_OK;
  tsr_err err = capture(e);
  if (e->xch && e->o.comm != MPI_COMM_NULL) err = tsr_run_agree(e->o.comm, err);
  if (err) {
    if (g->graph) cudaGraphExecDestroy(g->graph);
    g->graph = NULL;
    g->fallback = 1;
    int rank = 0;
    if (e->xch && e->o.comm != MPI_COMM_NULL) MPI_Comm_rank(e->o.comm, &rank);
    if (rank == 0)
      fprintf(stderr, "tessera: warning: gpu.graphs: capturing the PINN's iteration into a CUDA "
                      "graph failed; plain launches from here on (gpu.graphs: off skips the "
                      "attempt): %s\n", tsr_err_message());
    return TSR_OK;
  }
  *use = 1;
  return TSR_OK;
}

const char *tsr_pinn_engine_cuda_graph_mode(const tsr_pinn_engine *e, int64_t *replays) {
  const cuda_engine *g = e->dev;
  if (replays) *replays = g->replays;
  return g->fallback ? "fallback" : g->replays > 0 ? "on" : "off";
}

tsr_err tsr_pinn_engine_cuda_run(tsr_pinn_engine *e, int n, double *hist) {
  cuda_engine *g = e->dev;
  for (int i = 0; i < n; ++i) {
    int use;
    TSR_CALL(ready_graph(e, &use));
    if (use) {
      TSR_CUDA(cudaGraphLaunch(g->graph, g->stream));
      ++g->replays;
    } else {
      TSR_CALL(issue_iteration(e));
      g->plain_done = 1;
    }
  }
  int nt = e->o.loss.nterm, cap = e->o.hist_cap;
  /* the rows of iterations it .. it + n - 1, a ring of cap rows */
  double *h = g->stage;
  int at = (int)(e->it % cap), first = n < cap - at ? n : cap - at;
  TSR_CUDA(cudaMemcpyAsync(h, g->hist + (size_t)at * nt, (size_t)first * nt * 8,
                           cudaMemcpyDeviceToHost, g->stream));
  if (first < n)
    TSR_CUDA(cudaMemcpyAsync(h + (size_t)first * nt, g->hist, (size_t)(n - first) * nt * 8,
                             cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  memcpy(hist, h, (size_t)n * nt * 8);
  e->it += n;
  return TSR_OK;
}

tsr_err tsr_pinn_engine_cuda_loss_grad(tsr_pinn_engine *e, double *loss, double *grad,
                                       int exchange) {
  cuda_engine *g = e->dev;
  TSR_CALL(issue_loss_grad(e, 0, exchange));
  TSR_CUDA(cudaMemcpyAsync(loss, g->loss, (size_t)e->o.loss.nterm * 8, cudaMemcpyDeviceToHost,
                           g->stream));
  return download(e, g->grad, e->nparam, grad);
}

tsr_err tsr_pinn_engine_cuda_eval(tsr_pinn_engine *e, const double *X, int npts, double *u) {
  cuda_engine *g = e->dev;
  TSR_CALL(upload(e, X, (size_t)e->nin * (size_t)npts, 1, g->Xe));
  TSR_CALL(tsr_net_forward(e->eval, g->theta, g->Xe, npts, g->Ue));
  return download(e, g->Ue, (size_t)e->ncomp * (size_t)npts, u);
}

tsr_err tsr_pinn_engine_cuda_profile(tsr_pinn_engine *e, int n, double *phase) {
  cuda_engine *g = e->dev;
  cudaEvent_t ev[7];
  for (int k = 0; k < 7; ++k) TSR_CUDA(cudaEventCreate(&ev[k]));
  for (int k = 0; k < 6; ++k) phase[k] = 0.0;
  int xch = e->nif && e->xch;
  size_t nx = (size_t)e->nif * (size_t)e->nv * 8;
  double *keep = NULL; /* the values sent and received before, put back at the end */
  if (xch) {
    TSR_CALL(dalloc((void **)&keep, 2 * nx));
    TSR_CUDA(cudaMemcpyAsync(keep, g->S, nx, cudaMemcpyDeviceToDevice, g->stream));
    TSR_CUDA(cudaMemcpyAsync(keep + nx / 8, g->N, nx, cudaMemcpyDeviceToDevice, g->stream));
  }
  tsr_err err = TSR_OK;
  for (int i = 0; i < n && !err; ++i) {
    if (xch) {
      /* the values alone (ev 5 to 6), then the exchange alone (6 to 0) */
      const void *Xi = (const char *)g->X + e->esize * (size_t)e->nin * (size_t)e->o.loss.if_start;
      cudaEventRecord(ev[5], g->stream);
      err = tsr_net_forward(e->xnet, g->theta, Xi, e->nif, g->Ui);
      if (!err)
        err = tsr_pinn_iface_values_cuda(&e->xd, g->Ui, g->T + (size_t)e->ncomp * e->o.loss.if_start,
                                         g->F, g->S, g->stream);
      cudaEventRecord(ev[6], g->stream);
      /* exchanged also after a failure: the neighbours' calls are matched */
      tsr_err e2 = xbegin(e);
      if (!e2) e2 = xend(e);
      if (!err) err = e2;
      if (err) break;
    }
    cudaEventRecord(ev[0], g->stream);
    err = tsr_net_forward(e->net, g->theta, g->X, e->o.loss.npts, g->U);
    cudaEventRecord(ev[1], g->stream);
    if (!err)
      err = tsr_pinn_loss_cuda(&e->o.loss, g->U, g->T, g->N, g->F, g->lp, g->loss, g->dU, g->it,
                               NULL, 1, g->stream);
    cudaEventRecord(ev[2], g->stream);
    if (!err) err = tsr_net_backward(e->net, g->theta, g->dU, g->grad);
    cudaEventRecord(ev[3], g->stream);
    if (!err) err = tsr_pinn_adam_cuda(&e->o.adam, g->it, g->theta, g->grad, g->m, g->v, g->stream);
    cudaEventRecord(ev[4], g->stream);
    if (!err && cudaEventSynchronize(ev[4]) != cudaSuccess)
      err = tsr_err_set(TSR_ERR_CUDA, __FILE__, __LINE__, "profiling the PINN's iteration failed");
    for (int k = 0; k < 4 && !err; ++k) {
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, ev[k], ev[k + 1]);
      phase[k] += 1e-3 * ms;
    }
    for (int k = 0; k < 2 && !err && xch; ++k) {
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, ev[5 + k], ev[k ? 0 : 6]);
      phase[4 + k] += 1e-3 * ms;
    }
  }
  if (keep) {
    if (!err && cudaMemcpyAsync(g->S, keep, nx, cudaMemcpyDeviceToDevice, g->stream) == cudaSuccess)
      cudaMemcpyAsync(g->N, keep + nx / 8, nx, cudaMemcpyDeviceToDevice, g->stream);
    cudaStreamSynchronize(g->stream);
    cudaFree(keep);
  }
  for (int k = 0; k < 7; ++k) cudaEventDestroy(ev[k]);
  e->it += n;
  return err;
}
