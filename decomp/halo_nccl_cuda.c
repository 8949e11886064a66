/* Device backend of the split-phase halo exchange: pack kernels and NCCL point-to-point over
 * a halo plan, all on one communication stream (DESIGN.md, Backends and halo exchange).
 *
 * Stream ordering, the whole of it:
 *   producer --ready event--> comm stream: pack (every peer) -> one NCCL group of
 *   recv/send (remote peers) -> ... -> unpack (every peer) --done event--> consumer
 * Buffers are reused across exchanges without extra synchronisation because everything that
 * touches them is on the comm stream, in order. A self peer (a periodic image onto this
 * rank) never goes through NCCL: its receive buffer is its send buffer. */
#include <stdlib.h>

#include "decomp/halo_impl.h"
#include "kernels/cuda_util.h"
#include "kernels/pack.h"

typedef struct {
  tsr_halo base; /* first, so that a tsr_halo * is a halo_nccl * */
  ncclComm_t nccl;     /* borrowed */
  cudaStream_t stream; /* borrowed: the communication stream */
  int device;          /* nccl's device, which every call checks is current */
  cudaEvent_t ready;   /* producer -> comm stream */
  cudaEvent_t done;    /* comm stream -> consumer */
  void **sendbuf, **recvbuf;   /* device, per peer, sized for double values (float fields use
                                  half); a self peer's recvbuf aliases its sendbuf */
  size_t *scap, *rcap;         /* per peer, the bytes of sendbuf and recvbuf (0: none) */
  tsr_pack_seg *segs;          /* device: per peer nseg send segments then nseg receive ones */
  int seg_cap;                 /* segments segs holds */
  int *seg_at;                 /* per peer, the index of its first segment in segs */
  int64_t *most;               /* per peer, the largest segment's cells (sizes the launch) */
} halo_nccl;

static tsr_err nccl_begin(tsr_halo *base, tsr_field *f);
static tsr_err nccl_end(tsr_halo *base, tsr_field *f);
static void nccl_destroy(tsr_halo *base);

static const tsr_halo_ops nccl_ops = {"NCCL", TSR_MEM_DEVICE, nccl_begin, nccl_end,
                                      nccl_destroy};

static tsr_pack_seg seg_of(const tsr_box *b, int64_t off) {
  tsr_pack_seg s;
  for (int d = 0; d < 3; ++d) {
    s.lo[d] = b->lo[d];
    s.n[d] = tsr_box_len(b, d);
  }
  s.off = off;
  return s;
}

/* The segment descriptors of every peer in one host array, uploaded with one copy. */
static tsr_err upload_segments(halo_nccl *h) {
  const tsr_halo_plan *p = h->base.plan;
  int total = 0;
  for (int i = 0; i < p->npeer; ++i) {
    h->most[i] = 0;
    h->seg_at[i] = total;
    total += 2 * p->peers[i].nseg;
  }
  if (total == 0) return TSR_OK;
  tsr_pack_seg *host;
  TSR_ALLOC(host, total, "the halo segment descriptors");
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    tsr_pack_seg *s = host + h->seg_at[i];
    int64_t soff = 0, roff = 0;
    for (int k = 0; k < q->nseg; ++k) {
      s[k] = seg_of(&q->send[k], soff);
      s[q->nseg + k] = seg_of(&q->recv[k], roff);
      soff += tsr_box_cells(&q->send[k]) * h->base.ncomp;
      roff += tsr_box_cells(&q->recv[k]) * h->base.ncomp;
      int64_t c = tsr_box_cells(&q->send[k]), r = tsr_box_cells(&q->recv[k]);
      if (c > h->most[i]) h->most[i] = c;
      if (r > h->most[i]) h->most[i] = r;
    }
  }
  size_t bytes = (size_t)total * sizeof *host;
  cudaError_t e = cudaSuccess;
  if (total > h->seg_cap) {
    if (h->segs) cudaFree(h->segs);
    h->segs = NULL;
    h->seg_cap = 0;
    e = cudaMalloc((void **)&h->segs, bytes);
    if (e == cudaSuccess) h->seg_cap = total;
  }
  if (e == cudaSuccess) e = cudaMemcpy(h->segs, host, bytes, cudaMemcpyHostToDevice);
  /* a copy from pageable memory may return before its DMA lands, and the exchange's streams
   * are non-blocking (they do not order after the legacy stream): wait for it here */
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  free(host);
  TSR_CUDA(e);
  return TSR_OK;
}

/* The communicator must be the one the plan was built for, on the current device. */
static tsr_err check_comm(const tsr_halo_plan *plan, ncclComm_t nccl, int *device) {
  int n = 0, me = -1, dev = -1, cur = -1;
  TSR_NCCL(ncclCommCount(nccl, &n));
  TSR_NCCL(ncclCommUserRank(nccl, &me));
  TSR_NCCL(ncclCommCuDevice(nccl, &dev));
  TSR_CUDA(cudaGetDevice(&cur));
  TSR_CHECK(dev == cur, TSR_ERR_STATE,
            "rank %d: the NCCL communicator is on device %d but the current device is %d; "
            "call cudaSetDevice(%d) first", plan->rank, dev, cur, dev);
  TSR_CHECK(me == plan->rank, TSR_ERR_STATE,
            "the halo plan is for rank %d but this NCCL communicator's rank is %d; build the "
            "plan with the communicator's rank", plan->rank, me);
  for (int i = 0; i < plan->npeer; ++i)
    TSR_CHECK(plan->peers[i].peer >= 0 && plan->peers[i].peer < n, TSR_ERR_STATE,
              "rank %d: halo peer %d is not a rank of the NCCL communicator (%d ranks)",
              plan->rank, plan->peers[i].peer, n);
  *device = dev;
  return TSR_OK;
}

/* Device buffers kept from the exchange of an earlier plan, to be taken again (refit). */
typedef struct {
  void **buf;
  size_t *cap;
  int n;
} spare;

/* A buffer of at least elems doubles into *buf (its bytes into *cap): the smallest spare one
 * that holds them, else a new one. */
static tsr_err device_buffer(spare *sp, void **buf, size_t *cap, int64_t elems, int rank,
                             int peer) {
  size_t bytes = (size_t)elems * sizeof(double);
  if (bytes == 0) bytes = sizeof(double);
  int best = -1;
  for (int k = 0; sp && k < sp->n; ++k)
    if (sp->buf[k] && sp->cap[k] >= bytes && (best < 0 || sp->cap[k] < sp->cap[best])) best = k;
  if (best >= 0) {
    *buf = sp->buf[best];
    *cap = sp->cap[best];
    sp->buf[best] = NULL;
    return TSR_OK;
  }
  cudaError_t e = cudaMalloc(buf, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    *buf = NULL;
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "rank %d: out of GPU memory allocating a %.1f MiB halo buffer for peer %d",
                       rank, bytes / 1048576.0, peer);
  }
  TSR_CUDA(e);
  *cap = bytes;
  return TSR_OK;
}

/* The per-peer arrays and buffers of the plan, taking spare buffers where they fit. */
static tsr_err peer_buffers(halo_nccl *h, spare *sp) {
  const tsr_halo_plan *p = h->base.plan;
  int n = p->npeer;
  h->base.npeer = n;
  TSR_ALLOC(h->sendbuf, n, "halo send buffer pointers");
  TSR_ALLOC(h->recvbuf, n, "halo receive buffer pointers");
  TSR_ALLOC(h->scap, n, "halo buffer sizes");
  TSR_ALLOC(h->rcap, n, "halo buffer sizes");
  TSR_ALLOC(h->seg_at, n, "halo segment offsets");
  TSR_ALLOC(h->most, n, "halo segment sizes");
  for (int i = 0; i < n; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    TSR_CHECK(q->nseg >= 1 && q->nseg <= 65535, TSR_ERR_INTERNAL,
              "rank %d: halo peer %d has %d segments; the pack kernel takes 1 to 65535",
              p->rank, q->peer, q->nseg);
    TSR_CHECK(q->send_cells == q->recv_cells || q->peer != p->rank, TSR_ERR_INTERNAL,
              "rank %d: the periodic self-image sends %lld cells but receives %lld", p->rank,
              (long long)q->send_cells, (long long)q->recv_cells);
    TSR_CALL(device_buffer(sp, &h->sendbuf[i], &h->scap[i], q->send_cells * h->base.ncomp,
                           p->rank, q->peer));
    if (q->peer == p->rank) continue;
    TSR_CALL(device_buffer(sp, &h->recvbuf[i], &h->rcap[i], q->recv_cells * h->base.ncomp,
                           p->rank, q->peer));
  }
  return upload_segments(h);
}

static tsr_err setup(halo_nccl *h) {
  TSR_CUDA(cudaEventCreateWithFlags(&h->ready, cudaEventDisableTiming));
  TSR_CUDA(cudaEventCreateWithFlags(&h->done, cudaEventDisableTiming));
  return peer_buffers(h, NULL);
}

static void free_peer_arrays(halo_nccl *h) {
  free(h->sendbuf);
  free(h->recvbuf);
  free(h->scap);
  free(h->rcap);
  free(h->seg_at);
  free(h->most);
  h->sendbuf = h->recvbuf = NULL;
  h->scap = h->rcap = NULL;
  h->seg_at = NULL;
  h->most = NULL;
}

tsr_err tsr_halo_create_nccl(const tsr_halo_plan *plan, ncclComm_t nccl, int ncomp,
                             cudaStream_t comm_stream, tsr_halo **out) {
  TSR_CHECK(out != NULL, TSR_ERR_INTERNAL, "tsr_halo_create_nccl without an output handle");
  *out = NULL;
  TSR_CHECK(plan != NULL && nccl != NULL, TSR_ERR_STATE,
            "tsr_halo_create_nccl needs a halo plan and an NCCL communicator");
  TSR_CHECK(ncomp >= 1, TSR_ERR_INTERNAL, "a halo exchange needs at least 1 component, not %d",
            ncomp);
  int device = -1;
  TSR_CALL(check_comm(plan, nccl, &device));
  halo_nccl *h;
  TSR_ALLOC(h, 1, "an NCCL halo exchange");
  h->base.ops = &nccl_ops;
  h->base.plan = plan;
  h->base.ncomp = ncomp;
  h->nccl = nccl;
  h->stream = comm_stream;
  h->device = device;
  tsr_err e = setup(h);
  if (e) {
    nccl_destroy(&h->base);
    return e;
  }
  *out = &h->base;
  return TSR_OK;
}

/* Kernels and NCCL calls go to the current device: a wrong one fails obscurely or races. */
static tsr_err check_device(const halo_nccl *h) {
  int cur = -1;
  TSR_CUDA(cudaGetDevice(&cur));
  TSR_CHECK(cur == h->device, TSR_ERR_STATE,
            "rank %d: the NCCL halo exchange lives on device %d but the current device is %d",
            h->base.plan->rank, h->device, cur);
  return TSR_OK;
}

/* One group for every remote peer, so NCCL can progress all of them at once and no
 * send/receive order between ranks can deadlock. The group is always closed, even after a
 * failed call inside it, so that NCCL leaves group mode. */
static tsr_err post_group(halo_nccl *h, const tsr_field *f) {
  const ncclDataType_t type = f->prec == TSR_PREC_SINGLE ? ncclFloat : ncclDouble;
  const tsr_halo_plan *p = h->base.plan;
  int remote = 0;
  for (int i = 0; i < p->npeer; ++i) remote += p->peers[i].peer != p->rank;
  if (remote == 0) return TSR_OK;
  TSR_NCCL(ncclGroupStart());
  ncclResult_t r = ncclSuccess;
  const char *call = "";
  for (int i = 0; i < p->npeer && r == ncclSuccess; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    if (q->peer == p->rank) continue;
    size_t nrecv = (size_t)(q->recv_cells * h->base.ncomp);
    size_t nsend = (size_t)(q->send_cells * h->base.ncomp);
    call = "ncclRecv";
    r = ncclRecv(h->recvbuf[i], nrecv, type, q->peer, h->nccl, h->stream);
    if (r != ncclSuccess) break;
    call = "ncclSend";
    r = ncclSend(h->sendbuf[i], nsend, type, q->peer, h->nccl, h->stream);
  }
  ncclResult_t end = ncclGroupEnd();
  if (r != ncclSuccess) return tsr_nccl_fail((int)r, call, __FILE__, __LINE__);
  if (end != ncclSuccess) return tsr_nccl_fail((int)end, "ncclGroupEnd", __FILE__, __LINE__);
  return TSR_OK;
}

/* Everything begin enqueues on the comm stream, after producer's work so far. */
static tsr_err enqueue_begin(halo_nccl *h, tsr_field *f, cudaStream_t producer) {
  const tsr_halo_plan *p = h->base.plan;
  TSR_CALL(check_device(h));
  if (producer != h->stream) {
    TSR_CUDA(cudaEventRecord(h->ready, producer));
    TSR_CUDA(cudaStreamWaitEvent(h->stream, h->ready, 0));
  }
  tsr_pack_geom g = tsr_pack_geom_of(f);
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    TSR_CALL(tsr_pack_cuda(h->segs + h->seg_at[i], q->nseg, h->most[i], &g, f->data,
                           h->sendbuf[i], h->stream));
  }
  return post_group(h, f);
}

/* Everything end enqueues on the comm stream: unpack every peer, self peers included. */
static tsr_err enqueue_end(halo_nccl *h, tsr_field *f) {
  const tsr_halo_plan *p = h->base.plan;
  TSR_CALL(check_device(h));
  tsr_pack_geom g = tsr_pack_geom_of(f);
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    const void *buf = q->peer == p->rank ? h->sendbuf[i] : h->recvbuf[i];
    TSR_CALL(tsr_unpack_cuda(h->segs + h->seg_at[i] + q->nseg, q->nseg, h->most[i], &g, buf,
                             f->data, h->stream));
  }
  return TSR_OK;
}

/* Waits on the host for the comm stream, polling NCCL: a failed or vanished peer shows as an
 * asynchronous NCCL error instead of a hang in cudaStreamSynchronize. */
static tsr_err wait_stream(halo_nccl *h) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(h->stream);
    if (q == cudaSuccess) return TSR_OK;
    if (q != cudaErrorNotReady) TSR_CUDA(q);
    ncclResult_t async = ncclSuccess;
    TSR_NCCL(ncclCommGetAsyncError(h->nccl, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      return tsr_nccl_fail((int)async, "the halo exchange (asynchronous error)", __FILE__,
                           __LINE__);
  }
}

static tsr_err nccl_begin(tsr_halo *base, tsr_field *f) {
  return enqueue_begin((halo_nccl *)base, f, cudaStreamLegacy);
}

static tsr_err nccl_end(tsr_halo *base, tsr_field *f) {
  halo_nccl *h = (halo_nccl *)base;
  TSR_CALL(enqueue_end(h, f));
  return wait_stream(h);
}

tsr_err tsr_halo_begin_after(tsr_halo *h, tsr_field *field, cudaStream_t producer) {
  TSR_CALL(tsr_halo_check_begin(h, field, "tsr_halo_begin_after"));
  TSR_CHECK(h->ops == &nccl_ops, TSR_ERR_STATE,
            "rank %d: tsr_halo_begin_after needs an NCCL halo exchange; use tsr_halo_begin on "
            "the %s one", h->plan->rank, h->ops->name);
  TSR_CALL(enqueue_begin((halo_nccl *)h, field, producer));
  h->active = field;
  return TSR_OK;
}

tsr_err tsr_halo_end_before(tsr_halo *h, tsr_field *field, cudaStream_t consumer) {
  TSR_CALL(tsr_halo_check_end(h, field, "tsr_halo_end_before"));
  TSR_CHECK(h->ops == &nccl_ops, TSR_ERR_STATE,
            "rank %d: tsr_halo_end_before needs an NCCL halo exchange; use tsr_halo_end on "
            "the %s one", h->plan->rank, h->ops->name);
  halo_nccl *x = (halo_nccl *)h;
  /* idle whatever happens next: like tsr_halo_end, an error abandons the exchange */
  h->active = NULL;
  TSR_CALL(enqueue_end(x, field));
  if (consumer != x->stream) {
    TSR_CUDA(cudaEventRecord(x->done, x->stream));
    TSR_CUDA(cudaStreamWaitEvent(consumer, x->done, 0));
  }
  return TSR_OK;
}

static void nccl_destroy(tsr_halo *base) {
  halo_nccl *h = (halo_nccl *)base;
  /* in-flight packs, NCCL transfers and unpacks may still use the buffers (an idle stream
   * returns at once); an error here leaves nothing better to do than free */
  (void)wait_stream(h);
  for (int i = 0; h->sendbuf && i < base->npeer; ++i)
    if (h->sendbuf[i]) cudaFree(h->sendbuf[i]);
  for (int i = 0; h->recvbuf && i < base->npeer; ++i)
    if (h->recvbuf[i]) cudaFree(h->recvbuf[i]);
  if (h->segs) cudaFree(h->segs);
  if (h->ready) cudaEventDestroy(h->ready);
  if (h->done) cudaEventDestroy(h->done);
  free_peer_arrays(h);
  free(h);
}

tsr_err tsr_halo_refit_nccl(tsr_halo *base) {
  TSR_CHECK(base && base->ops == &nccl_ops, TSR_ERR_STATE,
            "tsr_halo_refit_nccl needs an NCCL halo exchange");
  TSR_CHECK(!base->active, TSR_ERR_STATE,
            "rank %d: tsr_halo_refit_nccl with an exchange in flight", base->plan->rank);
  halo_nccl *h = (halo_nccl *)base;
  TSR_CALL(check_device(h));
  TSR_CALL(wait_stream(h));
  int nold = base->npeer;
  spare sp = {calloc((size_t)2 * nold + 1, sizeof(void *)),
              calloc((size_t)2 * nold + 1, sizeof(size_t)), 0};
  TSR_CHECK(sp.buf && sp.cap, TSR_ERR_MEMORY, "out of memory refitting a halo exchange");
  for (int i = 0; i < nold; ++i) {
    if (h->sendbuf[i]) sp.buf[sp.n] = h->sendbuf[i], sp.cap[sp.n++] = h->scap[i];
    if (h->recvbuf[i]) sp.buf[sp.n] = h->recvbuf[i], sp.cap[sp.n++] = h->rcap[i];
  }
  free_peer_arrays(h);
  base->npeer = 0;
  tsr_err e = peer_buffers(h, &sp);
  for (int k = 0; k < sp.n; ++k)
    if (sp.buf[k]) cudaFree(sp.buf[k]);
  free(sp.buf);
  free(sp.cap);
  return e;
}
