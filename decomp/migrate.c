/* Migration plans (pure) and their host execution over MPI (decomp/migrate.h). The device
 * execution (migrate_nccl_cuda.c) uses the same plan and the same packing order. */
#include "decomp/migrate.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* One tag for migration messages, apart from the halo exchange's: a pair exchanges at most
 * one message per direction per migrated field. */
#define TSR_MIGRATE_TAG 7302

static tsr_box box_of_rank(const tsr_layout *L, int rank) {
  int b = tsr_layout_box_of(L, rank);
  tsr_box none = {{0, 0, 0}, {0, 0, 0}};
  return b < 0 ? none : L->boxes[b];
}

/* The peers whose `theirs` box meets `mine`, sorted by rank (owners are visited in rank
 * order), written to *out. */
static tsr_err list_peers(const tsr_layout *theirs, const tsr_box *mine, int rank,
                          tsr_migrate_peer **out, int *n, int64_t *cells) {
  *out = NULL;
  *n = 0;
  *cells = 0;
  int nranks = theirs->nbox;
  TSR_ALLOC(*out, nranks > 0 ? nranks : 1, "a migration plan's peers");
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    tsr_box b = box_of_rank(theirs, r), o = tsr_box_intersect(mine, &b);
    if (tsr_box_empty(&o)) continue;
    (*out)[*n].peer = r;
    (*out)[*n].box = o;
    ++*n;
    *cells += tsr_box_cells(&o);
  }
  return TSR_OK;
}

tsr_err tsr_migrate_plan_build(const tsr_layout *old_layout, const tsr_layout *new_layout,
                               int rank, tsr_migrate_plan *plan) {
  memset(plan, 0, sizeof *plan);
  TSR_CHECK(old_layout->dim == new_layout->dim &&
                tsr_box_equal(&old_layout->global, &new_layout->global),
            TSR_ERR_INPUT, "cannot migrate between layouts of different grids");
  TSR_CHECK(old_layout->nbox == new_layout->nbox, TSR_ERR_INPUT,
            "cannot migrate from a layout of %d ranks to one of %d", old_layout->nbox,
            new_layout->nbox);
  TSR_CHECK(rank >= 0 && rank < new_layout->nbox, TSR_ERR_INPUT,
            "rank %d is not one of the layout's %d ranks", rank, new_layout->nbox);
  plan->rank = rank;
  plan->old_box = box_of_rank(old_layout, rank);
  plan->new_box = box_of_rank(new_layout, rank);
  plan->keep = tsr_box_intersect(&plan->old_box, &plan->new_box);
  tsr_err e = list_peers(new_layout, &plan->old_box, rank, &plan->send, &plan->nsend,
                         &plan->send_cells);
  if (!e)
    e = list_peers(old_layout, &plan->new_box, rank, &plan->recv, &plan->nrecv,
                   &plan->recv_cells);
  if (e) tsr_migrate_plan_free(plan);
  return e;
}

void tsr_migrate_plan_free(tsr_migrate_plan *plan) {
  if (!plan) return;
  free(plan->send);
  free(plan->recv);
  plan->send = plan->recv = NULL;
  plan->nsend = plan->nrecv = 0;
}

/* Copies box b of every component of f to buf (dir 0) or buf to f (dir 1), x rows at a time. */
static void pack_box(const tsr_field *f, const tsr_box *b, char *buf, int dir) {
  const size_t es = tsr_prec_size(f->prec), nx = (size_t)tsr_box_len(b, 0) * es;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j, buf += nx) {
        char *p = (char *)f->data + es * (size_t)tsr_field_at(f, c, b->lo[0], j, k);
        if (dir) memcpy(p, buf, nx);
        else memcpy(buf, p, nx);
      }
}

static tsr_err mpi_fail(int rc, const char *call, int peer, int rank) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                     "rank %d: %s with peer %d failed in a migration: %s", rank, call, peer,
                     text);
}

/* Buffers of one migration: receives first, then sends, in the plan's peer order. */
typedef struct {
  char **buf;
  MPI_Request *req;
  int nreq;
} moves;

static void moves_free(moves *m, int n) {
  if (m->nreq > 0) MPI_Waitall(m->nreq, m->req, MPI_STATUSES_IGNORE);
  for (int i = 0; m->buf && i < n; ++i) free(m->buf[i]);
  free(m->buf);
  free(m->req);
}

static tsr_err post(const tsr_migrate_plan *p, MPI_Comm comm, const tsr_field *src, moves *m) {
  const size_t es = tsr_prec_size(src->prec);
  MPI_Datatype type = src->prec == TSR_PREC_SINGLE ? MPI_FLOAT : MPI_DOUBLE;
  int n = p->nrecv + p->nsend;
  for (int i = 0; i < n; ++i) {
    int recv = i < p->nrecv;
    const tsr_migrate_peer *q = recv ? &p->recv[i] : &p->send[i - p->nrecv];
    int64_t count = tsr_box_cells(&q->box) * src->ncomp;
    TSR_CHECK(count <= INT_MAX, TSR_ERR_UNSUPPORTED,
              "rank %d: migrating %lld values with rank %d is more than MPI's int count; use "
              "more ranks", p->rank, (long long)count, q->peer);
    m->buf[i] = malloc((size_t)count * es);
    TSR_CHECK(m->buf[i], TSR_ERR_MEMORY, "rank %d: out of memory for a %.1f MiB migration "
              "buffer", p->rank, (double)count * es / 1048576.0);
    int rc;
    if (recv) {
      rc = MPI_Irecv(m->buf[i], (int)count, type, q->peer, TSR_MIGRATE_TAG, comm,
                     &m->req[m->nreq]);
    } else {
      pack_box(src, &q->box, m->buf[i], 0);
      rc = MPI_Isend(m->buf[i], (int)count, type, q->peer, TSR_MIGRATE_TAG, comm,
                     &m->req[m->nreq]);
    }
    if (rc != MPI_SUCCESS)
      return mpi_fail(rc, recv ? "MPI_Irecv" : "MPI_Isend", q->peer, p->rank);
    ++m->nreq;
  }
  return TSR_OK;
}

tsr_err tsr_migrate_field(const tsr_migrate_plan *plan, MPI_Comm comm, const tsr_field *src,
                          tsr_field **dst) {
  *dst = NULL;
  TSR_CHECK(src && src->mem == TSR_MEM_HOST, TSR_ERR_STATE,
            "rank %d: tsr_migrate_field takes a host field; use tsr_migrate_field_nccl for a "
            "device field", plan->rank);
  TSR_CHECK(tsr_box_equal(&src->box, &plan->old_box), TSR_ERR_STATE,
            "rank %d: the field's box is not the migration plan's old box", plan->rank);
  tsr_field *out = NULL;
  TSR_CALL(tsr_field_create_as(src->dim, &plan->new_box, src->ghost, src->ncomp, TSR_MEM_HOST,
                               src->prec, &out));
  tsr_err e = tsr_migrate_field_into(plan, comm, src, out);
  if (e) tsr_field_destroy(&out);
  *dst = out;
  return e;
}

tsr_err tsr_migrate_field_into(const tsr_migrate_plan *plan, MPI_Comm comm, const tsr_field *src,
                               tsr_field *out) {
  TSR_CHECK(src && src->mem == TSR_MEM_HOST, TSR_ERR_STATE,
            "rank %d: tsr_migrate_field takes a host field; use tsr_migrate_field_nccl for a "
            "device field", plan->rank);
  TSR_CHECK(tsr_box_equal(&src->box, &plan->old_box), TSR_ERR_STATE,
            "rank %d: the field's box is not the migration plan's old box", plan->rank);
  TSR_CHECK(out && out != src && out->mem == TSR_MEM_HOST && out->dim == src->dim &&
                out->ghost == src->ghost && out->ncomp == src->ncomp &&
                out->prec == src->prec && tsr_box_equal(&out->box, &plan->new_box),
            TSR_ERR_STATE, "rank %d: a migration's destination is not a host field on the "
            "plan's new box shaped like its source", plan->rank);
  tsr_field_zero(out, NULL);
  int n = plan->nrecv + plan->nsend;
  moves m = {calloc((size_t)n + 1, sizeof(char *)), calloc((size_t)n + 1, sizeof(MPI_Request)),
             0};
  tsr_err e = TSR_OK;
  if (!m.buf || !m.req)
    e = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                    "rank %d: out of memory for a migration of %d messages", plan->rank, n);
  if (!e) e = post(plan, comm, src, &m);
  /* the cells that stay are copied while the messages travel */
  if (!e && !tsr_box_empty(&plan->keep)) tsr_field_copy_box(out, src, &plan->keep);
  if (!e && m.nreq > 0) {
    int rc = MPI_Waitall(m.nreq, m.req, MPI_STATUSES_IGNORE);
    m.nreq = 0;
    if (rc != MPI_SUCCESS) e = mpi_fail(rc, "MPI_Waitall", -1, plan->rank);
  }
  for (int i = 0; !e && i < plan->nrecv; ++i) pack_box(out, &plan->recv[i].box, m.buf[i], 1);
  if (e) {
    /* what was posted is cancelled before its buffers go */
    for (int i = 0; i < m.nreq; ++i) {
      MPI_Cancel(&m.req[i]);
      MPI_Request_free(&m.req[i]);
    }
    m.nreq = 0;
  }
  moves_free(&m, n);
  return e;
}
