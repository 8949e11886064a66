/* The interface exchange's NCCL backend (solver/pinn/iface.h): on a high-priority
 * communication stream of its own,
 *   caller's stream --ready event--> comm stream: one NCCL group of recv/send per neighbour
 *   --done event--> caller's stream (at end)
 * The arrays are the caller's device arrays: each neighbour's run is sent and received in
 * place, so there is nothing to pack. */
#include <stdlib.h>

#include "kernels/cuda_util.h"
#include "solver/pinn/iface_impl.h"

typedef struct {
  ncclComm_t nccl; /* borrowed */
  cudaStream_t stream;
  cudaEvent_t ready, done;
} iface_nccl;

static tsr_err nccl_begin(tsr_pinn_iface *x, const double *send, double *recv, void *stream) {
  iface_nccl *g = x->impl;
  TSR_CUDA(cudaEventRecord(g->ready, (cudaStream_t)stream));
  TSR_CUDA(cudaStreamWaitEvent(g->stream, g->ready, 0));
  if (x->npeer) {
    TSR_NCCL(ncclGroupStart());
    for (int i = 0; i < x->npeer; ++i) {
      size_t off = (size_t)x->start[i] * (size_t)x->nv, n = (size_t)x->count[i] * (size_t)x->nv;
      ncclResult_t r = ncclRecv(recv + off, n, ncclDouble, x->peer[i], g->nccl, g->stream);
      if (r == ncclSuccess) r = ncclSend(send + off, n, ncclDouble, x->peer[i], g->nccl, g->stream);
      if (r != ncclSuccess) {
        ncclGroupEnd();
        return tsr_nccl_fail((int)r, "ncclRecv/ncclSend(interface values)", __FILE__, __LINE__);
      }
    }
    TSR_NCCL(ncclGroupEnd());
  }
  TSR_CUDA(cudaEventRecord(g->done, g->stream));
  return TSR_OK;
}

static tsr_err nccl_end(tsr_pinn_iface *x, void *stream) {
  iface_nccl *g = x->impl;
  if (!stream) { /* teardown: wait for it on the host */
    TSR_CUDA(cudaEventSynchronize(g->done));
    return TSR_OK;
  }
  TSR_CUDA(cudaStreamWaitEvent((cudaStream_t)stream, g->done, 0));
  return TSR_OK;
}

static void nccl_destroy(tsr_pinn_iface *x) {
  iface_nccl *g = x->impl;
  if (!g) return;
  if (g->stream) cudaStreamSynchronize(g->stream);
  if (g->ready) cudaEventDestroy(g->ready);
  if (g->done) cudaEventDestroy(g->done);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
  x->impl = NULL;
}

static const tsr_pinn_iface_ops nccl_ops = {nccl_begin, nccl_end, nccl_destroy, 1};

static tsr_err setup(tsr_pinn_iface *x, ncclComm_t nccl) {
  iface_nccl *g;
  TSR_ALLOC(g, 1, "an NCCL interface exchange");
  x->impl = g;
  g->nccl = nccl;
  int lo = 0, hi = 0;
  TSR_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  TSR_CUDA(cudaStreamCreateWithPriority(&g->stream, cudaStreamNonBlocking, hi));
  TSR_CUDA(cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming));
  TSR_CUDA(cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming));
  return TSR_OK;
}

tsr_err tsr_pinn_iface_create_nccl(ncclComm_t nccl, const tsr_pinn_peers *peers, int nv,
                                   tsr_pinn_iface **out) {
  *out = NULL;
  TSR_CHECK(nccl != NULL, TSR_ERR_STATE, "tsr_pinn_iface_create_nccl needs an NCCL communicator");
  tsr_pinn_iface *x;
  TSR_ALLOC(x, 1, "an interface exchange");
  x->ops = &nccl_ops;
  tsr_err err = tsr_pinn_iface_init(x, peers, nv);
  if (!err) err = setup(x, nccl);
  if (err) {
    tsr_pinn_iface_destroy(&x);
    return err;
  }
  *out = x;
  return TSR_OK;
}
