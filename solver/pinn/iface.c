/* The interface exchange's common part and its MPI backend (solver/pinn/iface.h). */
#include "solver/pinn/iface.h"

#include <stdlib.h>
#include <string.h>

#include "solver/pinn/iface_impl.h"
#include "solver/watchdog.h"

enum { IFACE_TAG = 0x5049 };

tsr_err tsr_pinn_iface_init(tsr_pinn_iface *x, const tsr_pinn_peers *peers, int nv) {
  x->npeer = peers ? peers->npeer : 0;
  x->nv = nv;
  TSR_ALLOC(x->peer, x->npeer, "the interface exchange's neighbours");
  TSR_ALLOC(x->start, x->npeer, "the interface exchange's neighbours");
  TSR_ALLOC(x->count, x->npeer, "the interface exchange's neighbours");
  for (int i = 0; i < x->npeer; ++i) {
    x->peer[i] = peers->peer[i];
    x->start[i] = peers->start[i];
    x->count[i] = peers->count[i];
  }
  return TSR_OK;
}

int tsr_pinn_iface_device(const tsr_pinn_iface *x) { return x->ops->device; }

int tsr_pinn_iface_npeer(const tsr_pinn_iface *x) { return x->npeer; }

tsr_err tsr_pinn_iface_begin(tsr_pinn_iface *x, const double *send, double *recv, void *stream) {
  TSR_CHECK(!x->in_flight, TSR_ERR_STATE, "tsr_pinn_iface_begin: an interface exchange is "
            "already in flight; end it (tsr_pinn_iface_end) first");
  TSR_CALL(x->ops->begin(x, send, recv, stream));
  x->in_flight = 1;
  return TSR_OK;
}

tsr_err tsr_pinn_iface_end(tsr_pinn_iface *x, void *stream) {
  TSR_CHECK(x->in_flight, TSR_ERR_STATE, "tsr_pinn_iface_end: no interface exchange in flight; "
            "begin one (tsr_pinn_iface_begin) first");
  x->in_flight = 0;
  return x->ops->end(x, stream);
}

void tsr_pinn_iface_destroy(tsr_pinn_iface **px) {
  if (!px || !*px) return;
  tsr_pinn_iface *x = *px;
  if (x->in_flight) x->ops->end(x, NULL);
  x->ops->destroy(x);
  free(x->peer);
  free(x->start);
  free(x->count);
  free(x);
  *px = NULL;
}

/* ---- MPI ---- */

typedef struct {
  MPI_Comm comm;
  MPI_Request *req; /* 2 per neighbour */
  int rank;
} iface_mpi;

static tsr_err mpi_fail(int rc, const char *call, int peer, int rank) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "%s with neighbour %d failed on rank %d: "
                     "%s", call, peer, rank, text);
}

static tsr_err mpi_begin(tsr_pinn_iface *x, const double *send, double *recv, void *stream) {
  (void)stream;
  iface_mpi *m = x->impl;
  /* receives first, so a neighbour's send finds its buffer posted */
  for (int i = 0; i < x->npeer; ++i) {
    size_t off = (size_t)x->start[i] * (size_t)x->nv;
    int n = x->count[i] * x->nv;
    int rc = MPI_Irecv(recv + off, n, MPI_DOUBLE, x->peer[i], IFACE_TAG, m->comm, &m->req[i]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Irecv", x->peer[i], m->rank);
  }
  for (int i = 0; i < x->npeer; ++i) {
    size_t off = (size_t)x->start[i] * (size_t)x->nv;
    int n = x->count[i] * x->nv;
    int rc = MPI_Isend(send + off, n, MPI_DOUBLE, x->peer[i], IFACE_TAG, m->comm,
                       &m->req[x->npeer + i]);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Isend", x->peer[i], m->rank);
  }
  return TSR_OK;
}

static tsr_err mpi_end(tsr_pinn_iface *x, void *stream) {
  (void)stream;
  iface_mpi *m = x->impl;
  if (!x->npeer) return TSR_OK;
  /* the watchdog (solver/watchdog.h; started by the trainer on CPU ranks): entering and leaving
   * this wait is the iteration's progress, and a wait that never ends names the neighbours */
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  int rc = MPI_Waitall(2 * x->npeer, m->req, MPI_STATUSES_IGNORE);
  tsr_watchdog_waiting(0);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall", -1, m->rank);
  return TSR_OK;
}

static void mpi_destroy(tsr_pinn_iface *x) {
  iface_mpi *m = x->impl;
  if (!m) return;
  if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
  free(m->req);
  free(m);
  x->impl = NULL;
}

static const tsr_pinn_iface_ops mpi_ops = {mpi_begin, mpi_end, mpi_destroy, 0};

tsr_err tsr_pinn_iface_create_mpi(MPI_Comm comm, const tsr_pinn_peers *peers, int nv,
                                  tsr_pinn_iface **out) {
  *out = NULL;
  tsr_pinn_iface *x;
  TSR_ALLOC(x, 1, "an interface exchange");
  x->ops = &mpi_ops;
  iface_mpi *m = calloc(1, sizeof *m);
  x->impl = m;
  tsr_err err = m ? tsr_pinn_iface_init(x, peers, nv)
                  : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  if (m) m->comm = MPI_COMM_NULL;
  if (!err) {
    m->req = calloc((size_t)(2 * x->npeer + 1), sizeof *m->req);
    if (!m->req) err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  }
  /* collective: every rank duplicates, also after a failure above (then the error is agreed
   * by the caller) */
  MPI_Comm dup = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(comm, &dup);
  if (m) {
    m->comm = dup;
    MPI_Comm_rank(comm, &m->rank);
  } else if (dup != MPI_COMM_NULL) {
    MPI_Comm_free(&dup);
  }
  if (!err && rc != MPI_SUCCESS) err = mpi_fail(rc, "MPI_Comm_dup", -1, -1);
  if (err) {
    tsr_pinn_iface_destroy(&x);
    return err;
  }
  *out = x;
  return TSR_OK;
}
