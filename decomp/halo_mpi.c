/* Host backend of the split-phase halo exchange: MPI point-to-point over a halo plan.
 *
 * One contiguous send and one receive buffer per peer, laid out as the plan says (segments in
 * order; per segment each component; cells x-fastest), so one message per peer and direction.
 * Receives are posted before any send is packed, so a peer's data never waits for a buffer.
 *
 * The misuse checks and the in-flight state live in halo.c; this file only moves data. The
 * NCCL backend (halo_nccl_cuda.c) mirrors it with pack/unpack kernels (kernels/pack.cu) and
 * ncclSend/ncclRecv inside one ncclGroupStart/End. */
#include "decomp/halo_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* One tag for every halo message: a rank pair exchanges at most one message per direction
 * per exchange, and MPI keeps messages of a pair in order. */
#define TSR_HALO_TAG 7301

typedef struct {
  tsr_halo base;               /* first, so that a tsr_halo * is a halo_mpi * */
  MPI_Comm comm;               /* borrowed */
  char **sendbuf, **recvbuf;   /* per peer, sized for double values (float fields use half);
                                  self peers use only sendbuf */
  MPI_Request *reqs;           /* receives first, then sends */
  int nreq;
} halo_mpi;

static tsr_err mpi_begin(tsr_halo *base, tsr_field *f);
static tsr_err mpi_end(tsr_halo *base, tsr_field *f);
static void mpi_destroy(tsr_halo *base);

static const tsr_halo_ops mpi_ops = {"MPI", TSR_MEM_HOST, mpi_begin, mpi_end, mpi_destroy};

/* Turns a failed MPI call into TSR_ERR_MPI naming the call, the peer and this rank. */
static tsr_err mpi_fail(int rc, const char *call, int peer, int rank) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                     "rank %d: %s with peer %d failed in the halo exchange: %s", rank, call, peer,
                     text);
}

/* Copies the cells of segs (each component, x-fastest) from f into buf (host memory). */
static void pack_peer(const tsr_field *f, const tsr_box *segs, int nseg, char *buf) {
  const size_t es = tsr_prec_size(f->prec);
  for (int s = 0; s < nseg; ++s) {
    const tsr_box *b = &segs[s];
    size_t nx = (size_t)tsr_box_len(b, 0);
    for (int c = 0; c < f->ncomp; ++c)
      for (int k = b->lo[2]; k < b->hi[2]; ++k)
        for (int j = b->lo[1]; j < b->hi[1]; ++j) {
          memcpy(buf, (const char *)f->data + es * tsr_field_at(f, c, b->lo[0], j, k), nx * es);
          buf += nx * es;
        }
  }
}

/* The inverse of pack_peer: buf into the cells of segs of f. */
static void unpack_peer(tsr_field *f, const tsr_box *segs, int nseg, const char *buf) {
  const size_t es = tsr_prec_size(f->prec);
  for (int s = 0; s < nseg; ++s) {
    const tsr_box *b = &segs[s];
    size_t nx = (size_t)tsr_box_len(b, 0);
    for (int c = 0; c < f->ncomp; ++c)
      for (int k = b->lo[2]; k < b->hi[2]; ++k)
        for (int j = b->lo[1]; j < b->hi[1]; ++j) {
          memcpy((char *)f->data + es * tsr_field_at(f, c, b->lo[0], j, k), buf, nx * es);
          buf += nx * es;
        }
  }
}

static MPI_Datatype mpi_type(const tsr_field *f) {
  return f->prec == TSR_PREC_SINGLE ? MPI_FLOAT : MPI_DOUBLE;
}

tsr_err tsr_halo_create(const tsr_halo_plan *plan, MPI_Comm comm, int ncomp, tsr_halo **out) {
  *out = NULL;
  TSR_CHECK(ncomp >= 1, TSR_ERR_INTERNAL, "a halo exchange needs at least 1 component, not %d",
            ncomp);
  /* MPI counts are int: one message per peer must stay below 2^31 elements */
  for (int i = 0; i < plan->npeer; ++i) {
    const tsr_halo_peer *p = &plan->peers[i];
    int64_t most = p->send_cells > p->recv_cells ? p->send_cells : p->recv_cells;
    TSR_CHECK(most * ncomp <= INT_MAX, TSR_ERR_UNSUPPORTED,
              "rank %d: the halo message to rank %d has %lld values, more than MPI's int count; "
              "use more ranks", plan->rank, p->peer, (long long)(most * ncomp));
  }
  halo_mpi *h;
  TSR_ALLOC(h, 1, "a halo exchange");
  h->base.ops = &mpi_ops;
  h->base.plan = plan;
  h->base.ncomp = ncomp;
  h->base.npeer = plan->npeer;
  h->comm = comm;
  int n = plan->npeer;
  h->sendbuf = calloc((size_t)n + 1, sizeof *h->sendbuf);
  h->recvbuf = calloc((size_t)n + 1, sizeof *h->recvbuf);
  h->reqs = calloc(2 * (size_t)n + 1, sizeof *h->reqs);
  int ok = h->sendbuf && h->recvbuf && h->reqs;
  for (int i = 0; i < n && ok; ++i) {
    const tsr_halo_peer *p = &plan->peers[i];
    h->sendbuf[i] = malloc((size_t)(p->send_cells * ncomp) * sizeof(double) + 1);
    ok = h->sendbuf[i] != NULL;
    if (ok && p->peer != plan->rank) {
      h->recvbuf[i] = malloc((size_t)(p->recv_cells * ncomp) * sizeof(double) + 1);
      ok = h->recvbuf[i] != NULL;
    }
  }
  if (!ok) {
    mpi_destroy(&h->base);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory allocating halo buffers for %d peers", n);
  }
  *out = &h->base;
  return TSR_OK;
}

/* Drops requests already posted when begin fails half-way, so nothing refers to the buffers. */
static void abandon(halo_mpi *h) {
  for (int i = 0; i < h->nreq; ++i) {
    if (h->reqs[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&h->reqs[i]);
    MPI_Request_free(&h->reqs[i]);
  }
  h->nreq = 0;
}

static tsr_err post_recvs(halo_mpi *h, const tsr_field *f) {
  const tsr_halo_plan *p = h->base.plan;
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    if (q->peer == p->rank) continue;
    int count = (int)(q->recv_cells * h->base.ncomp);
    int rc = MPI_Irecv(h->recvbuf[i], count, mpi_type(f), q->peer, TSR_HALO_TAG, h->comm,
                       &h->reqs[h->nreq]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Irecv", q->peer, p->rank);
    ++h->nreq;
  }
  return TSR_OK;
}

/* Packs and sends to every other peer; self peers are copied straight into the ghosts. */
static tsr_err post_sends(halo_mpi *h, tsr_field *f) {
  const tsr_halo_plan *p = h->base.plan;
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    pack_peer(f, q->send, q->nseg, h->sendbuf[i]);
    if (q->peer == p->rank) {
      unpack_peer(f, q->recv, q->nseg, h->sendbuf[i]);
      continue;
    }
    int count = (int)(q->send_cells * h->base.ncomp);
    int rc = MPI_Isend(h->sendbuf[i], count, mpi_type(f), q->peer, TSR_HALO_TAG, h->comm,
                       &h->reqs[h->nreq]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Isend", q->peer, p->rank);
    ++h->nreq;
  }
  return TSR_OK;
}

static tsr_err wait_all(halo_mpi *h) {
  int rc = MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall", -1, h->base.plan->rank);
  h->nreq = 0;
  return TSR_OK;
}

static tsr_err mpi_begin(tsr_halo *base, tsr_field *field) {
  halo_mpi *h = (halo_mpi *)base;
  tsr_err e = post_recvs(h, field);
  if (!e) e = post_sends(h, field);
  if (e) abandon(h);
  return e;
}

static tsr_err mpi_end(tsr_halo *base, tsr_field *field) {
  halo_mpi *h = (halo_mpi *)base;
  tsr_err e = wait_all(h);
  if (e) {
    abandon(h);
    return e;
  }
  const tsr_halo_plan *p = base->plan;
  for (int i = 0; i < p->npeer; ++i)
    if (p->peers[i].peer != p->rank)
      unpack_peer(field, p->peers[i].recv, p->peers[i].nseg, h->recvbuf[i]);
  return TSR_OK;
}

static void mpi_destroy(tsr_halo *base) {
  halo_mpi *h = (halo_mpi *)base;
  if (h->nreq > 0) MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE);
  for (int i = 0; h->sendbuf && i < base->npeer; ++i) free(h->sendbuf[i]);
  for (int i = 0; h->recvbuf && i < base->npeer; ++i) free(h->recvbuf[i]);
  free(h->sendbuf);
  free(h->recvbuf);
  free(h->reqs);
  free(h);
}
