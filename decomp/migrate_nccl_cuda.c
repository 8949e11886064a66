/* Device execution of a migration plan (decomp/migrate.h): the halo exchange's pack kernels
 * (kernels/pack.h) and NCCL point-to-point, all on one stream, as decomp/halo_nccl_cuda.c.
 *
 * One send buffer holds every peer's box and, last, the cells that stay (so one pack launch
 * covers them all); one receive buffer holds every peer's box. Order on the stream: pack ->
 * one NCCL group of receives and sends -> unpack of the received boxes and of the kept cells.
 * A migration is rare (a rebalance), so buffers and segment lists live for one call. */
#include <limits.h>
#include <stdlib.h>

#include "decomp/migrate.h"
#include "kernels/cuda_util.h"
#include "kernels/pack.h"

typedef struct {
  tsr_pack_seg *host;       /* send segments (peers, then keep), then receive segments */
  tsr_pack_seg *dev;        /* the same on the device */
  void *sendbuf, *recvbuf;  /* device */
  int nsendseg, nrecvseg;
  int64_t most_send, most_recv, send_elems, recv_elems;
} mig_bufs;

static void bufs_free(mig_bufs *b) {
  if (b->dev) cudaFree(b->dev);
  if (b->sendbuf) cudaFree(b->sendbuf);
  if (b->recvbuf) cudaFree(b->recvbuf);
  free(b->host);
}

static tsr_pack_seg seg_of(const tsr_box *b, int64_t off) {
  tsr_pack_seg s;
  for (int d = 0; d < 3; ++d) {
    s.lo[d] = b->lo[d];
    s.n[d] = tsr_box_len(b, d);
  }
  s.off = off;
  return s;
}

/* Segment lists with their offsets (elements) into the two buffers, uploaded at once. */
static tsr_err bufs_setup(const tsr_migrate_plan *p, const tsr_field *f, mig_bufs *b) {
  int keep = !tsr_box_empty(&p->keep);
  b->nsendseg = p->nsend + keep;
  b->nrecvseg = p->nrecv;
  int total = b->nsendseg + b->nrecvseg;
  TSR_ALLOC(b->host, total > 0 ? total : 1, "a migration's segment list");
  int64_t off = 0;
  for (int i = 0; i < b->nsendseg; ++i) {
    const tsr_box *x = i < p->nsend ? &p->send[i].box : &p->keep;
    b->host[i] = seg_of(x, off);
    off += tsr_box_cells(x) * f->ncomp;
    if (tsr_box_cells(x) > b->most_send) b->most_send = tsr_box_cells(x);
  }
  b->send_elems = off;
  off = 0;
  for (int i = 0; i < b->nrecvseg; ++i) {
    b->host[b->nsendseg + i] = seg_of(&p->recv[i].box, off);
    off += tsr_box_cells(&p->recv[i].box) * f->ncomp;
    if (tsr_box_cells(&p->recv[i].box) > b->most_recv)
      b->most_recv = tsr_box_cells(&p->recv[i].box);
  }
  b->recv_elems = off;
  size_t es = tsr_prec_size(f->prec), bytes = (size_t)(total > 0 ? total : 1) * sizeof *b->host;
  TSR_CUDA(cudaMalloc((void **)&b->dev, bytes));
  TSR_CUDA(cudaMemcpy(b->dev, b->host, bytes, cudaMemcpyHostToDevice));
  cudaError_t e = cudaMalloc(&b->sendbuf, (size_t)(b->send_elems ? b->send_elems : 1) * es);
  if (e == cudaSuccess)
    e = cudaMalloc(&b->recvbuf, (size_t)(b->recv_elems ? b->recv_elems : 1) * es);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "rank %d: out of GPU memory for %.1f MiB of migration buffers", p->rank,
                       (double)(b->send_elems + b->recv_elems) * es / 1048576.0);
  }
  TSR_CUDA(e);
  return TSR_OK;
}

static tsr_pack_geom geom_of(const tsr_field *f) {
  tsr_pack_geom g;
  for (int d = 0; d < 3; ++d) g.glo[d] = f->gbox.lo[d];
  g.sy = f->sy;
  g.sz = f->sz;
  g.scomp = f->scomp;
  g.ncomp = f->ncomp;
  g.esize = (int)tsr_prec_size(f->prec);
  return g;
}

/* One group for every peer; always closed, even after a failed call inside it. */
static tsr_err post_group(const tsr_migrate_plan *p, const mig_bufs *b, const tsr_field *f,
                          ncclComm_t nccl, cudaStream_t stream) {
  if (p->nsend + p->nrecv == 0) return TSR_OK;
  const ncclDataType_t type = f->prec == TSR_PREC_SINGLE ? ncclFloat : ncclDouble;
  const size_t es = tsr_prec_size(f->prec);
  TSR_NCCL(ncclGroupStart());
  ncclResult_t r = ncclSuccess;
  const char *call = "ncclRecv";
  for (int i = 0; i < p->nrecv && r == ncclSuccess; ++i) {
    const tsr_pack_seg *s = &b->host[b->nsendseg + i];
    r = ncclRecv((char *)b->recvbuf + s->off * es, (size_t)tsr_box_cells(&p->recv[i].box) *
                 f->ncomp, type, p->recv[i].peer, nccl, stream);
  }
  for (int i = 0; i < p->nsend && r == ncclSuccess; ++i) {
    call = "ncclSend";
    r = ncclSend((const char *)b->sendbuf + b->host[i].off * es,
                 (size_t)tsr_box_cells(&p->send[i].box) * f->ncomp, type, p->send[i].peer,
                 nccl, stream);
  }
  ncclResult_t end = ncclGroupEnd();
  if (r != ncclSuccess) return tsr_nccl_fail((int)r, call, __FILE__, __LINE__);
  if (end != ncclSuccess) return tsr_nccl_fail((int)end, "ncclGroupEnd", __FILE__, __LINE__);
  return TSR_OK;
}

/* Waits on the host for stream, polling NCCL: a vanished peer shows as an asynchronous NCCL
 * error instead of a hang. */
static tsr_err wait_stream(ncclComm_t nccl, cudaStream_t stream) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return TSR_OK;
    if (q != cudaErrorNotReady) TSR_CUDA(q);
    ncclResult_t async = ncclSuccess;
    TSR_NCCL(ncclCommGetAsyncError(nccl, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      return tsr_nccl_fail((int)async, "a migration (asynchronous error)", __FILE__, __LINE__);
  }
}

static tsr_err check_comm(const tsr_migrate_plan *p, ncclComm_t nccl) {
  int me = -1, dev = -1, cur = -1;
  TSR_NCCL(ncclCommUserRank(nccl, &me));
  TSR_NCCL(ncclCommCuDevice(nccl, &dev));
  TSR_CUDA(cudaGetDevice(&cur));
  TSR_CHECK(dev == cur, TSR_ERR_STATE,
            "rank %d: the NCCL communicator is on device %d but the current device is %d",
            p->rank, dev, cur);
  TSR_CHECK(me == p->rank, TSR_ERR_STATE,
            "the migration plan is for rank %d but this NCCL communicator's rank is %d",
            p->rank, me);
  return TSR_OK;
}

static tsr_err migrate(const tsr_migrate_plan *p, ncclComm_t nccl, cudaStream_t stream,
                       const tsr_field *src, tsr_field *dst, mig_bufs *b) {
  TSR_CALL(bufs_setup(p, src, b));
  /* the new field was zeroed on the legacy stream, which a non-blocking stream does not wait
   * for; the wait also orders writes to src issued there or on blocking streams */
  TSR_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
  tsr_pack_geom gs = geom_of(src), gd = geom_of(dst);
  if (b->nsendseg > 0)
    TSR_CALL(tsr_pack_cuda(b->dev, b->nsendseg, b->most_send, &gs, src->data, b->sendbuf,
                           stream));
  TSR_CALL(post_group(p, b, src, nccl, stream));
  if (b->nrecvseg > 0)
    TSR_CALL(tsr_unpack_cuda(b->dev + b->nsendseg, b->nrecvseg, b->most_recv, &gd, b->recvbuf,
                             dst->data, stream));
  if (!tsr_box_empty(&p->keep)) /* the last send segment: the cells that stay */
    TSR_CALL(tsr_unpack_cuda(b->dev + p->nsend, 1, tsr_box_cells(&p->keep), &gd, b->sendbuf,
                             dst->data, stream));
  return wait_stream(nccl, stream);
}

tsr_err tsr_migrate_field_nccl(const tsr_migrate_plan *plan, ncclComm_t nccl,
                               cudaStream_t stream, const tsr_field *src, tsr_field **dst) {
  *dst = NULL;
  TSR_CHECK(src && src->mem == TSR_MEM_DEVICE, TSR_ERR_STATE,
            "rank %d: tsr_migrate_field_nccl takes a device field; use tsr_migrate_field for a "
            "host field", plan->rank);
  TSR_CHECK(tsr_box_equal(&src->box, &plan->old_box), TSR_ERR_STATE,
            "rank %d: the field's box is not the migration plan's old box", plan->rank);
  TSR_CHECK(plan->nsend < 65535 && plan->nrecv < 65535, TSR_ERR_UNSUPPORTED,
            "rank %d: a migration with more than 65534 peers", plan->rank);
  TSR_CALL(check_comm(plan, nccl));
  tsr_field *out = NULL;
  TSR_CALL(tsr_field_create_as(src->dim, &plan->new_box, src->ghost, src->ncomp,
                               TSR_MEM_DEVICE, src->prec, &out));
  mig_bufs b = {0};
  tsr_err e = migrate(plan, nccl, stream, src, out, &b);
  if (e) {
    (void)wait_stream(nccl, stream); /* nothing may still use the buffers */
    tsr_field_destroy(&out);
  }
  bufs_free(&b);
  *dst = out;
  return e;
}
