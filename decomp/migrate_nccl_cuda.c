/* Device execution of a migration plan (decomp/migrate.h): box copies (kernels/pack.h) and
 * NCCL point-to-point, as decomp/halo_nccl_cuda.c.
 *
 * Each peer's box is packed into its place in one send buffer and unpacked from one receive
 * buffer, in the order of the host's execution (per component, x fastest). The cells that stay
 * go straight from the old field to the new one, on a second stream while the others travel.
 * Order: stream: pack -> one NCCL group of receives and sends -> unpack -> wait for aux;
 * aux: the new field's ghosts zeroed -> the kept cells copied. Nothing is allocated on the
 * device when the caller keeps the buffers (tsr_migrate_bufs) and moves no more than before. */
#include <stdlib.h>

#include "decomp/migrate.h"
#include "kernels/cuda_util.h"
#include "kernels/pack.h"

struct tsr_migrate_bufs {
  void *send, *recv;           /* device */
  size_t send_cap, recv_cap;   /* bytes */
  void *zeros;                 /* device: a row of zeros, the source of the ghosts' zeroing */
  size_t zeros_cap;
  cudaEvent_t start, done;     /* stream -> aux, aux -> stream */
};

void tsr_migrate_bufs_free(tsr_migrate_bufs **bp) {
  if (!bp || !*bp) return;
  tsr_migrate_bufs *b = *bp;
  if (b->send) cudaFree(b->send);
  if (b->recv) cudaFree(b->recv);
  if (b->zeros) cudaFree(b->zeros);
  if (b->start) cudaEventDestroy(b->start);
  if (b->done) cudaEventDestroy(b->done);
  free(b);
  *bp = NULL;
}

/* *buf holds at least bytes (grow-only). */
static tsr_err grow(void **buf, size_t *cap, size_t bytes, int rank) {
  if (bytes <= *cap && *buf) return TSR_OK;
  if (*buf) cudaFree(*buf);
  *buf = NULL;
  *cap = 0;
  cudaError_t e = cudaMalloc(buf, bytes ? bytes : 8);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    *buf = NULL;
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "rank %d: out of GPU memory for a %.1f MiB migration buffer", rank,
                       (double)bytes / 1048576.0);
  }
  TSR_CUDA(e);
  *cap = bytes ? bytes : 8;
  return TSR_OK;
}

static tsr_err bufs_setup(const tsr_migrate_plan *p, const tsr_field *f, tsr_migrate_bufs *b) {
  const size_t es = tsr_prec_size(f->prec);
  TSR_CALL(grow(&b->send, &b->send_cap, (size_t)p->send_cells * f->ncomp * es, p->rank));
  TSR_CALL(grow(&b->recv, &b->recv_cap, (size_t)p->recv_cells * f->ncomp * es, p->rank));
  const size_t row = (size_t)tsr_box_len(&f->gbox, 0) * es, had = b->zeros_cap;
  TSR_CALL(grow(&b->zeros, &b->zeros_cap, row, p->rank));
  if (b->zeros_cap != had) TSR_CUDA(cudaMemset(b->zeros, 0, b->zeros_cap));
  if (!b->start) TSR_CUDA(cudaEventCreateWithFlags(&b->start, cudaEventDisableTiming));
  if (!b->done) TSR_CUDA(cudaEventCreateWithFlags(&b->done, cudaEventDisableTiming));
  return TSR_OK;
}

static tsr_err copy_box(const tsr_box *b, const tsr_pack_geom *gs, const void *src,
                        const tsr_pack_geom *gd, void *dst, cudaStream_t stream) {
  int n[3] = {tsr_box_len(b, 0), tsr_box_len(b, 1), tsr_box_len(b, 2)};
  return tsr_copy_box_cuda(b->lo, n, gs, src, gd, dst, stream);
}

/* The ghost layers of f zeroed, the owned cells left: per active axis d, the two slabs beyond
 * the box along d, spanning the allocated extent along the axes before d and the owned range
 * along those after it (together they tile the extent minus the box). Each slab is a box copy
 * from a row of zeros read with strides 0: cudaMemset3D of the slabs across x, rows one value
 * wide, took 4-9 ms at 512^2 x 700 cells (a whole migration's critical path on 2 H100s). */
static tsr_err zero_ghosts(const tsr_field *f, const void *zeros, cudaStream_t stream) {
  const tsr_pack_geom gd = tsr_pack_geom_of(f);
  for (int d = 0; d < f->dim; ++d)
    for (int side = 0; side < 2; ++side) {
      tsr_box s = f->gbox;
      for (int e = d + 1; e < 3; ++e) {
        s.lo[e] = f->box.lo[e];
        s.hi[e] = f->box.hi[e];
      }
      if (side == 0) s.hi[d] = f->box.lo[d];
      else s.lo[d] = f->box.hi[d];
      if (tsr_box_empty(&s)) continue;
      tsr_pack_geom gz = gd;
      for (int e = 0; e < 3; ++e) gz.glo[e] = s.lo[e];
      gz.sy = gz.sz = gz.scomp = 0;
      TSR_CALL(copy_box(&s, &gz, zeros, &gd, f->data, stream));
    }
  return TSR_OK;
}

/* One group for every peer; always closed, even after a failed call inside it. */
static tsr_err post_group(const tsr_migrate_plan *p, const tsr_migrate_bufs *b,
                          const tsr_field *f, ncclComm_t nccl, cudaStream_t stream) {
  if (p->nsend + p->nrecv == 0) return TSR_OK;
  const ncclDataType_t type = f->prec == TSR_PREC_SINGLE ? ncclFloat : ncclDouble;
  const size_t es = tsr_prec_size(f->prec);
  TSR_NCCL(ncclGroupStart());
  ncclResult_t r = ncclSuccess;
  const char *call = "ncclRecv";
  size_t off = 0;
  for (int i = 0; i < p->nrecv && r == ncclSuccess; ++i) {
    size_t n = (size_t)tsr_box_cells(&p->recv[i].box) * f->ncomp;
    r = ncclRecv((char *)b->recv + off * es, n, type, p->recv[i].peer, nccl, stream);
    off += n;
  }
  off = 0;
  for (int i = 0; i < p->nsend && r == ncclSuccess; ++i) {
    call = "ncclSend";
    size_t n = (size_t)tsr_box_cells(&p->send[i].box) * f->ncomp;
    r = ncclSend((const char *)b->send + off * es, n, type, p->send[i].peer, nccl, stream);
    off += n;
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
                       cudaStream_t aux, const tsr_field *src, tsr_field *dst,
                       tsr_migrate_bufs *b) {
  TSR_CALL(bufs_setup(p, src, b));
  /* writes to src issued on the legacy stream or on blocking streams come first */
  TSR_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
  tsr_pack_geom gs = tsr_pack_geom_of(src), gd = tsr_pack_geom_of(dst);
  if (aux != stream) {
    TSR_CUDA(cudaEventRecord(b->start, stream));
    TSR_CUDA(cudaStreamWaitEvent(aux, b->start, 0));
  }
  TSR_CALL(zero_ghosts(dst, b->zeros, aux));
  if (!tsr_box_empty(&p->keep)) TSR_CALL(copy_box(&p->keep, &gs, src->data, &gd, dst->data, aux));
  const size_t es = tsr_prec_size(src->prec);
  size_t off = 0;
  for (int i = 0; i < p->nsend; ++i) {
    tsr_pack_geom gb = tsr_pack_geom_packed(&p->send[i].box, src);
    TSR_CALL(copy_box(&p->send[i].box, &gs, src->data, &gb, (char *)b->send + off * es, stream));
    off += (size_t)tsr_box_cells(&p->send[i].box) * src->ncomp;
  }
  TSR_CALL(post_group(p, b, src, nccl, stream));
  off = 0;
  for (int i = 0; i < p->nrecv; ++i) {
    tsr_pack_geom gb = tsr_pack_geom_packed(&p->recv[i].box, src);
    TSR_CALL(copy_box(&p->recv[i].box, &gb, (const char *)b->recv + off * es, &gd, dst->data,
                      stream));
    off += (size_t)tsr_box_cells(&p->recv[i].box) * src->ncomp;
  }
  if (aux != stream) {
    TSR_CUDA(cudaEventRecord(b->done, aux));
    TSR_CUDA(cudaStreamWaitEvent(stream, b->done, 0));
  }
  return wait_stream(nccl, stream);
}

static tsr_err check_src(const tsr_migrate_plan *plan, const tsr_field *src) {
  TSR_CHECK(src && src->mem == TSR_MEM_DEVICE, TSR_ERR_STATE,
            "rank %d: tsr_migrate_field_nccl takes a device field; use tsr_migrate_field for a "
            "host field", plan->rank);
  TSR_CHECK(tsr_box_equal(&src->box, &plan->old_box), TSR_ERR_STATE,
            "rank %d: the field's box is not the migration plan's old box", plan->rank);
  return TSR_OK;
}

tsr_err tsr_migrate_field_nccl_into(const tsr_migrate_plan *plan, ncclComm_t nccl,
                                    cudaStream_t stream, cudaStream_t aux, const tsr_field *src,
                                    tsr_field *dst, tsr_migrate_bufs **bufs) {
  TSR_CALL(check_src(plan, src));
  TSR_CHECK(dst && dst != src && dst->mem == TSR_MEM_DEVICE && dst->dim == src->dim &&
                dst->ghost == src->ghost && dst->ncomp == src->ncomp &&
                dst->prec == src->prec && tsr_box_equal(&dst->box, &plan->new_box),
            TSR_ERR_STATE, "rank %d: a migration's destination is not a device field on the "
            "plan's new box shaped like its source", plan->rank);
  TSR_CALL(check_comm(plan, nccl));
  if (!aux) aux = stream;
  tsr_migrate_bufs *b = bufs ? *bufs : NULL;
  if (!b) {
    TSR_ALLOC(b, 1, "a migration's buffers");
    if (bufs) *bufs = b;
  }
  tsr_err e = migrate(plan, nccl, stream, aux, src, dst, b);
  if (e) { /* nothing may still use the buffers */
    (void)wait_stream(nccl, stream);
    (void)cudaStreamSynchronize(aux);
  }
  if (!bufs) tsr_migrate_bufs_free(&b);
  return e;
}

tsr_err tsr_migrate_field_nccl(const tsr_migrate_plan *plan, ncclComm_t nccl,
                               cudaStream_t stream, const tsr_field *src, tsr_field **dst) {
  *dst = NULL;
  TSR_CALL(check_src(plan, src));
  tsr_field *out = NULL;
  TSR_CALL(tsr_field_create_as(src->dim, &plan->new_box, src->ghost, src->ncomp,
                               TSR_MEM_DEVICE, src->prec, &out));
  tsr_err e = tsr_migrate_field_nccl_into(plan, nccl, stream, NULL, src, out, NULL);
  if (e) tsr_field_destroy(&out);
  *dst = out;
  return e;
}
