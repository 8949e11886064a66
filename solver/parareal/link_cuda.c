/* Parareal's link between time-slice groups over NCCL (link.h), GPU to GPU:
 *
 *   sender:   compute stream: pack f's owned cells into sbuf --packed--> link stream: the
 *             change (8 bytes from pinned host memory) into sbuf's tail, ncclSend(sbuf)
 *   receiver: compute stream --free--> link stream: ncclRecv(rbuf), rbuf's tail (the change)
 *             to pinned host memory --arrived--> compute stream: unpack rbuf into f
 *
 * The buffer holds the values in the field's precision (ncomp x cells, x fastest, component
 * by component), padded to 8 bytes, then the change as a double: one message of bytes. The
 * pack and unpack run on the compute stream of x, where every write of the fine run's fields
 * is issued, so they are ordered with the writes before them and the reads after them as any
 * other operation of parareal.c is (coarse_solve and fine_solves wait for that stream before
 * other streams read in[0]).
 *
 * Why it cannot deadlock. ncclSend completes only once the peer's ncclRecv runs, so a send
 * can be pending on the GPU for a while; the link stream and the communicator then serve that
 * rank's link operations strictly in the order issued (assume the worst: NCCL serialises a
 * communicator's operations whatever the stream). Each rank of group g issues, iteration
 * after iteration, recv(k) from g - 1 (g > 0) and then send(k) to g + 1 (g < last); the
 * sweep is pipelined, so g's host waits only for (a) its recv(k) (it needs the change) and (b)
 * at its next send, its own send(k - 1). Call {send(k) of g, recv(k) of g + 1} the pair (k, g):
 * it completes once both ends reach the head of their ranks' orders, which needs only the
 * operations issued before them: on g, recv(k) of g (part of pair (k, g - 1)) and send(k - 1)
 * (pair (k - 1, g)); on g + 1, send(k - 1) of g + 1 (pair (k - 1, g + 1)). Every pair waits
 * only on pairs of an earlier iteration or, in the same iteration, an earlier group, so
 * ordered by (k, g) none waits on itself, and pair (0, 0) waits on nothing. A host wait is a
 * wait for such a pair ((a) is pair (k, g - 1), (b) pair (k - 1, g)), and every host issues
 * its operations without waiting for a later pair: by the time g waits in (b), g + 1 has
 * issued recv(k - 1) (both passed iteration k - 1's MPI_Allgather in parareal.c, which
 * g + 1 reaches only after that receive). Nothing on the compute streams waits for a send;
 * the compute stream waits only for a recv the host itself waits for. Nor does a link kernel
 * wait on the GPU beside another communicator's (the groups' halo exchanges): a rank's recv(k)
 * is issued after its fine solves were waited for and is waited for before its coarse solves;
 * after send(k) the rank's host goes to the iteration's MPI_Allgather, past which its next
 * exchanges come only once g + 1 has its recv(k), that is once send(k) is done. */
#include <stdlib.h>

#include "kernels/cuda_util.h"
#include "kernels/pack.h"
#include "solver/backend.h"
#include "solver/device.h"
#include "solver/gpu_wait.h"
#include "solver/parareal/link.h"
#include "solver/run_internal.h"

struct tsr_pr_link_gpu {
  tsr_run_ctx *x;           /* borrowed: its compute stream and box */
  ncclComm_t nccl;          /* over the world, NCCL rank = world rank */
  int prev, next;
  cudaStream_t stream;      /* the link's: sends and receives in the order issued */
  cudaEvent_t packed, free, arrived;
  void *sbuf, *rbuf;        /* device: values, padding, the change */
  size_t vbytes, bytes;     /* the values' bytes; the message's (vbytes + padding + 8) */
  double *hsend, *hrecv;    /* pinned host: the change sent (read by a copy on the stream), and
                               the change received */
  int sending;              /* a send was issued (the next one waits for it) */
};

/* NCCL connects a pair of ranks at their first send and receive, which took about 0.5 s of
 * the first iteration's sweep on nvidia-h100-x2 (256^2, 2 groups: communication 0.69 s over
 * the run against 0.11 s over MPI). One byte each way now, in one NCCL group on every rank at
 * once (a chain: g receives from g - 1 and sends to g + 1), so the sweeps start connected. */
static tsr_err connect(tsr_pr_link_gpu *g) {
  if (g->prev < 0 && g->next < 0) return TSR_OK;
  if (g->next >= 0) TSR_CUDA(cudaMemsetAsync(g->sbuf, 0, 1, g->stream));
  TSR_NCCL(ncclGroupStart());
  ncclResult_t r = ncclSuccess;
  if (g->prev >= 0) r = ncclRecv(g->rbuf, 1, ncclUint8, g->prev, g->nccl, g->stream);
  if (r == ncclSuccess && g->next >= 0)
    r = ncclSend(g->sbuf, 1, ncclUint8, g->next, g->nccl, g->stream);
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  if (r != ncclSuccess)
    return tsr_nccl_fail((int)r, "ncclRecv/ncclSend(one byte, to connect the groups)", __FILE__,
                         __LINE__);
  return tsr_gpu_wait(g->stream, g->nccl, "parareal's link connecting the groups");
}

tsr_err tsr_pr_link_gpu_create(tsr_run_ctx *x, MPI_Comm world, int prev, int next,
                               tsr_pr_link_gpu **out) {
  *out = NULL;
  tsr_pr_link_gpu *g = calloc(1, sizeof *g);
  tsr_err err = g ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  int lo = 0, hi = 0;
  cudaError_t e = cudaSuccess;
  const char *call = "";
  if (g) {
    g->x = x;
    g->prev = prev;
    g->next = next;
    g->vbytes = (size_t)x->c->ncomp * (size_t)tsr_box_cells(&x->box) *
                (x->c->precision == TSR_PRECISION_SINGLE ? 4 : 8);
    g->bytes = (g->vbytes + 7) / 8 * 8 + sizeof(double);
#define TRY(c) (e == cudaSuccess ? (call = #c, e = (c)) : e)
    TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    TRY(cudaStreamCreateWithPriority(&g->stream, cudaStreamNonBlocking, hi));
    TRY(cudaEventCreateWithFlags(&g->packed, cudaEventDisableTiming));
    TRY(cudaEventCreateWithFlags(&g->free, cudaEventDisableTiming));
    TRY(cudaEventCreateWithFlags(&g->arrived, cudaEventDisableTiming));
    if (next >= 0) TRY(cudaMalloc(&g->sbuf, g->bytes));
    if (prev >= 0) TRY(cudaMalloc(&g->rbuf, g->bytes));
    TRY(cudaMallocHost((void **)&g->hsend, sizeof(double)));
    TRY(cudaMallocHost((void **)&g->hrecv, sizeof(double)));
#undef TRY
    if (e != cudaSuccess) err = tsr_cuda_fail((int)e, call, __FILE__, __LINE__);
  }
  /* every rank enters NCCL's collective set-up, or none */
  err = tsr_run_agree(world, err);
  if (!err) err = tsr_nccl_create(world, &g->nccl);
  if (!err) err = tsr_run_agree(world, connect(g));
  if (err) {
    tsr_pr_link_gpu_destroy(&g);
    return err;
  }
  *out = g;
  return TSR_OK;
}

/* The host's wait for everything issued to the link stream, with the communicator's
 * asynchronous errors and the watchdog checked while it waits (a peer that failed). */
static tsr_err wait_link(tsr_pr_link_gpu *g, const char *what) {
  return tsr_gpu_wait(g->stream, g->nccl, what);
}

/* f is a field of the link's box and precision. */
static tsr_err check_shape(const tsr_pr_link_gpu *g, const tsr_field *f) {
  const size_t bytes = (size_t)f->ncomp * (size_t)tsr_box_cells(&f->box) * tsr_prec_size(f->prec);
  TSR_CHECK(f->mem == TSR_MEM_DEVICE && bytes == g->vbytes, TSR_ERR_INTERNAL,
            "parareal's link moves %zu bytes of device values, and the field has %zu%s",
            g->vbytes, bytes, f->mem == TSR_MEM_DEVICE ? "" : " in host memory");
  return TSR_OK;
}

tsr_err tsr_pr_link_gpu_send(tsr_pr_link_gpu *g, const tsr_field *f, double change) {
  TSR_CALL(check_shape(g, f));
  cudaStream_t compute = tsr_backend_cuda_stream(g->x);
  /* sbuf and *hsend are the previous send's until it completed (the MPI way's MPI_Wait);
   * the stream then holds nothing else that could be pending (the order at the top) */
  if (g->sending) TSR_CALL(wait_link(g, "parareal's wait for its previous send to the next group"));
  g->sending = 0;
  const tsr_pack_geom gf = tsr_pack_geom_of(f), gb = tsr_pack_geom_packed(&f->box, f);
  const int n[3] = {tsr_box_len(&f->box, 0), tsr_box_len(&f->box, 1), tsr_box_len(&f->box, 2)};
  TSR_CALL(tsr_copy_box_cuda(f->box.lo, n, &gf, f->data, &gb, g->sbuf, compute));
  TSR_CUDA(cudaEventRecord(g->packed, compute));
  TSR_CUDA(cudaStreamWaitEvent(g->stream, g->packed, 0));
  *g->hsend = change;
  TSR_CUDA(cudaMemcpyAsync((char *)g->sbuf + g->bytes - sizeof(double), g->hsend,
                           sizeof(double), cudaMemcpyHostToDevice, g->stream));
  ncclResult_t r = ncclSend(g->sbuf, g->bytes, ncclUint8, g->next, g->nccl, g->stream);
  if (r != ncclSuccess)
    return tsr_nccl_fail((int)r, "ncclSend(a slice's end state to the next group)", __FILE__,
                         __LINE__);
  g->sending = 1;
  return TSR_OK;
}

tsr_err tsr_pr_link_gpu_recv(tsr_pr_link_gpu *g, tsr_field *f, double *change) {
  TSR_CALL(check_shape(g, f));
  cudaStream_t compute = tsr_backend_cuda_stream(g->x);
  /* rbuf is free once the previous unpack (on the compute stream) has run */
  TSR_CUDA(cudaEventRecord(g->free, compute));
  TSR_CUDA(cudaStreamWaitEvent(g->stream, g->free, 0));
  ncclResult_t r = ncclRecv(g->rbuf, g->bytes, ncclUint8, g->prev, g->nccl, g->stream);
  if (r != ncclSuccess)
    return tsr_nccl_fail((int)r, "ncclRecv(a slice's start state from the previous group)",
                         __FILE__, __LINE__);
  TSR_CUDA(cudaMemcpyAsync(g->hrecv, (const char *)g->rbuf + g->bytes - sizeof(double),
                           sizeof(double), cudaMemcpyDeviceToHost, g->stream));
  TSR_CUDA(cudaEventRecord(g->arrived, g->stream));
  TSR_CUDA(cudaStreamWaitEvent(compute, g->arrived, 0));
  const tsr_pack_geom gf = tsr_pack_geom_of(f), gb = tsr_pack_geom_packed(&f->box, f);
  const int n[3] = {tsr_box_len(&f->box, 0), tsr_box_len(&f->box, 1), tsr_box_len(&f->box, 2)};
  TSR_CALL(tsr_copy_box_cuda(f->box.lo, n, &gb, g->rbuf, &gf, f->data, compute));
  /* the host waits only for the 8 bytes of the change (the unpack stays on the GPU): the
   * stream's send before them, pair (k - 1, g) of the order at the top, is done already */
  TSR_CALL(wait_link(g, "parareal's wait for the start state from the previous group"));
  *change = *g->hrecv;
  return TSR_OK;
}

tsr_err tsr_pr_link_gpu_wait(tsr_pr_link_gpu *g) {
  if (!g || !g->sending) return TSR_OK;
  TSR_CALL(wait_link(g, "parareal's wait for its last send to the next group"));
  g->sending = 0;
  return TSR_OK;
}

void tsr_pr_link_gpu_destroy(tsr_pr_link_gpu **pg) {
  if (!pg || !*pg) return;
  tsr_pr_link_gpu *g = *pg;
  /* a send the receiver never took (a run that failed): abort rather than hang */
  int pending = g->stream && cudaStreamQuery(g->stream) == cudaErrorNotReady;
  cudaGetLastError();
  if (g->nccl && pending) ncclCommAbort(g->nccl);
  else if (g->nccl) tsr_nccl_destroy(&g->nccl);
  if (g->stream && !pending) cudaStreamSynchronize(g->stream);
  if (g->stream) cudaStreamDestroy(g->stream);
  if (g->packed) cudaEventDestroy(g->packed);
  if (g->free) cudaEventDestroy(g->free);
  if (g->arrived) cudaEventDestroy(g->arrived);
  cudaFree(g->sbuf);
  cudaFree(g->rbuf);
  cudaFreeHost(g->hsend);
  cudaFreeHost(g->hrecv);
  free(g);
  *pg = NULL;
}
