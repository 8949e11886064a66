/* Host backend of the split-phase halo exchange: MPI point-to-point over a halo plan.
 *
 * One contiguous send and one receive buffer per peer, laid out as the plan says (segments in
 * order; per segment each component; cells x-fastest), so one message per peer and direction.
 * Receives are posted before any send is packed, so a peer's data never waits for a buffer.
 *
 * Seam for the GPU backend: moving data between a field and a peer buffer is done only by
 * pack_peer and unpack_peer, and the message traffic only by post_recvs / post_sends /
 * wait_all. The NCCL backend (a .cu) keeps this state machine and replaces those with pack
 * and unpack kernels and ncclSend/ncclRecv inside one ncclGroupStart/End. */
#include "decomp/halo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* One tag for every halo message: a rank pair exchanges at most one message per direction
 * per exchange, and MPI keeps messages of a pair in order. */
#define TSR_HALO_TAG 7301

struct tsr_halo {
  const tsr_halo_plan *plan; /* borrowed */
  MPI_Comm comm;             /* borrowed */
  int ncomp;
  double **sendbuf, **recvbuf; /* per peer; self peers use only sendbuf */
  MPI_Request *reqs;           /* receives first, then sends */
  int nreq;
  tsr_field *active; /* the field of the exchange in flight, NULL when idle */
};

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
static void pack_peer(const tsr_field *f, const tsr_box *segs, int nseg, double *buf) {
  for (int s = 0; s < nseg; ++s) {
    const tsr_box *b = &segs[s];
    size_t nx = (size_t)tsr_box_len(b, 0);
    for (int c = 0; c < f->ncomp; ++c)
      for (int k = b->lo[2]; k < b->hi[2]; ++k)
        for (int j = b->lo[1]; j < b->hi[1]; ++j) {
          memcpy(buf, f->data + tsr_field_at(f, c, b->lo[0], j, k), nx * sizeof *buf);
          buf += nx;
        }
  }
}

/* The inverse of pack_peer: buf into the cells of segs of f. */
static void unpack_peer(tsr_field *f, const tsr_box *segs, int nseg, const double *buf) {
  for (int s = 0; s < nseg; ++s) {
    const tsr_box *b = &segs[s];
    size_t nx = (size_t)tsr_box_len(b, 0);
    for (int c = 0; c < f->ncomp; ++c)
      for (int k = b->lo[2]; k < b->hi[2]; ++k)
        for (int j = b->lo[1]; j < b->hi[1]; ++j) {
          memcpy(f->data + tsr_field_at(f, c, b->lo[0], j, k), buf, nx * sizeof *buf);
          buf += nx;
        }
  }
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
  tsr_halo *h;
  TSR_ALLOC(h, 1, "a halo exchange");
  h->plan = plan;
  h->comm = comm;
  h->ncomp = ncomp;
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
    tsr_halo_destroy(&h);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory allocating halo buffers for %d peers", n);
  }
  *out = h;
  return TSR_OK;
}

static tsr_err check_field(const tsr_halo *h, const tsr_field *f) {
  const tsr_halo_plan *p = h->plan;
  TSR_CHECK(f != NULL, TSR_ERR_STATE, "rank %d: halo exchange on a NULL field", p->rank);
  TSR_CHECK(tsr_box_equal(&f->box, &p->owned) && f->ghost == p->ghost && f->ncomp == h->ncomp,
            TSR_ERR_STATE,
            "rank %d: the field (box [%d,%d)x[%d,%d)x[%d,%d), ghost %d, %d components) does "
            "not match the halo exchange (box [%d,%d)x[%d,%d)x[%d,%d), ghost %d, %d components)",
            p->rank, f->box.lo[0], f->box.hi[0], f->box.lo[1], f->box.hi[1], f->box.lo[2],
            f->box.hi[2], f->ghost, f->ncomp, p->owned.lo[0], p->owned.hi[0], p->owned.lo[1],
            p->owned.hi[1], p->owned.lo[2], p->owned.hi[2], p->ghost, h->ncomp);
  TSR_CHECK(f->mem == TSR_MEM_HOST, TSR_ERR_STATE,
            "rank %d: the MPI halo exchange needs a host field", p->rank);
  return TSR_OK;
}

/* Drops requests already posted when begin fails half-way, so nothing refers to the buffers. */
static void abandon(tsr_halo *h) {
  for (int i = 0; i < h->nreq; ++i) {
    if (h->reqs[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&h->reqs[i]);
    MPI_Request_free(&h->reqs[i]);
  }
  h->nreq = 0;
}

static tsr_err post_recvs(tsr_halo *h) {
  const tsr_halo_plan *p = h->plan;
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    if (q->peer == p->rank) continue;
    int count = (int)(q->recv_cells * h->ncomp);
    int rc = MPI_Irecv(h->recvbuf[i], count, MPI_DOUBLE, q->peer, TSR_HALO_TAG, h->comm,
                       &h->reqs[h->nreq]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Irecv", q->peer, p->rank);
    ++h->nreq;
  }
  return TSR_OK;
}

/* Packs and sends to every other peer; self peers are copied straight into the ghosts. */
static tsr_err post_sends(tsr_halo *h, tsr_field *f) {
  const tsr_halo_plan *p = h->plan;
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    pack_peer(f, q->send, q->nseg, h->sendbuf[i]);
    if (q->peer == p->rank) {
      unpack_peer(f, q->recv, q->nseg, h->sendbuf[i]);
      continue;
    }
    int count = (int)(q->send_cells * h->ncomp);
    int rc = MPI_Isend(h->sendbuf[i], count, MPI_DOUBLE, q->peer, TSR_HALO_TAG, h->comm,
                       &h->reqs[h->nreq]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Isend", q->peer, p->rank);
    ++h->nreq;
  }
  return TSR_OK;
}

static tsr_err wait_all(tsr_halo *h) {
  int rc = MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall", -1, h->plan->rank);
  h->nreq = 0;
  return TSR_OK;
}

tsr_err tsr_halo_begin(tsr_halo *h, tsr_field *field) {
  TSR_CHECK(h != NULL, TSR_ERR_STATE, "tsr_halo_begin on a NULL halo exchange");
  TSR_CHECK(h->active == NULL, TSR_ERR_STATE,
            "rank %d: tsr_halo_begin while an exchange is in flight; call tsr_halo_end first",
            h->plan->rank);
  TSR_CALL(check_field(h, field));
  tsr_err e = post_recvs(h);
  if (!e) e = post_sends(h, field);
  if (e) {
    abandon(h);
    return e;
  }
  h->active = field;
  return TSR_OK;
}

tsr_err tsr_halo_end(tsr_halo *h, tsr_field *field) {
  TSR_CHECK(h != NULL, TSR_ERR_STATE, "tsr_halo_end on a NULL halo exchange");
  TSR_CHECK(h->active != NULL, TSR_ERR_STATE,
            "rank %d: tsr_halo_end without tsr_halo_begin", h->plan->rank);
  TSR_CHECK(h->active == field, TSR_ERR_STATE,
            "rank %d: tsr_halo_end on a different field than its tsr_halo_begin",
            h->plan->rank);
  tsr_err e = wait_all(h);
  if (e) {
    abandon(h);
    h->active = NULL;
    return e;
  }
  const tsr_halo_plan *p = h->plan;
  for (int i = 0; i < p->npeer; ++i)
    if (p->peers[i].peer != p->rank)
      unpack_peer(field, p->peers[i].recv, p->peers[i].nseg, h->recvbuf[i]);
  h->active = NULL;
  return TSR_OK;
}

void tsr_halo_destroy(tsr_halo **hp) {
  if (!hp || !*hp) return;
  tsr_halo *h = *hp;
  if (h->nreq > 0) MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE);
  for (int i = 0; h->sendbuf && i < h->plan->npeer; ++i) free(h->sendbuf[i]);
  for (int i = 0; h->recvbuf && i < h->plan->npeer; ++i) free(h->recvbuf[i]);
  free(h->sendbuf);
  free(h->recvbuf);
  free(h->reqs);
  free(h);
  *hp = NULL;
}
