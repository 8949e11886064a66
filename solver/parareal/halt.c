/* A stop inside a parareal iteration (parareal_impl.h). An iteration's fine solves can take
 * minutes, far longer than a batch system's warning before its kill, so a stop signal (or the
 * wall time) is acted on between fine steps rather than after the iteration:
 * - the ranks of a group poll their flags with the step loop's nonblocking allreduce
 *   (solver/stop.h) on the group's communicator, every few fine steps, so they stop stepping
 *   together (their steps exchange halos with one another);
 * - a group that stops sends a notice to the same space rank of every other group, whose next
 *   poll counts it as a signal of its own: a signal that reached one rank stops the fine
 *   solves of all of them, not only of its group;
 * - every group still makes the iteration's transfers and collectives (parareal.c), and the
 *   gather drops the iteration: in[] goes back to keep[], the states of the last iteration
 *   that ended, which is what a checkpoint needs.
 * Notices are counted, not probed for: in the gather every rank knows which groups stopped,
 * so it receives exactly the notices sent to it and no message is left unmatched. */
#include <stdlib.h>

#include "solver/parareal/ops.h"
#include "solver/parareal/parareal_impl.h"

enum { NOTICE_TAG = 11 };

/* Fine steps between polls: about 2^18 cell updates of a rank, at most 16 steps (a step of
 * 64^2 cells on one core is ~25 us; 512^3 split over 64 ranks is ~0.1 s, polled every step) */
#define POLL_CELLS (1 << 18)
#define POLL_MOST 16


static tsr_err mpi_fail(const char *what) {
  return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "parareal's stop: %s failed", what);
}

tsr_err tsr_pr_halt_begin(pr *p) {
  pr_halt *h = &p->h;
  /* the group's ranks share the global grid, so they agree on the spacing */
  const double cells = (double)tsr_box_cells(&p->fx[0].layout.global) / p->nspace;
  const double every = cells > 0.0 ? POLL_CELLS / cells : POLL_MOST;
  h->every = every >= POLL_MOST ? POLL_MOST : (every < 1.0 ? 1 : (int)every);
  if (p->ngroup == 1) return TSR_OK;
  if (MPI_Comm_dup(p->world, &h->comm) != MPI_SUCCESS) {
    h->comm = MPI_COMM_NULL;
    return mpi_fail("MPI_Comm_dup");
  }
  TSR_ALLOC(h->out, (size_t)p->ngroup - 1, "parareal's stop notices");
  if (MPI_Irecv(&h->in_why, 1, MPI_INT, MPI_ANY_SOURCE, NOTICE_TAG, h->comm, &h->in) !=
      MPI_SUCCESS)
    return mpi_fail("MPI_Irecv of a notice");
  return TSR_OK;
}

/* To the same space rank of every other group: this group stopped, and why. */
static tsr_err tell(pr *p) {
  pr_halt *h = &p->h;
  h->out_why = h->why;
  for (int g = 0; g < p->ngroup && h->comm != MPI_COMM_NULL; ++g) {
    if (g == p->group) continue;
    if (MPI_Isend(&h->out_why, 1, MPI_INT, g * p->nspace + p->srank, NOTICE_TAG, h->comm,
                  &h->out[h->nout++]) != MPI_SUCCESS)
      return mpi_fail("MPI_Isend of a notice");
  }
  return TSR_OK;
}

tsr_err tsr_pr_halt_poll(pr *p, int now) {
  pr_halt *h = &p->h;
  tsr_run_ctx *x = &p->fx[0];
  if (h->why) return TSR_OK;
  if (x->stop.comm == MPI_COMM_NULL) TSR_CALL(tsr_stop_begin(&x->stop, x->comm));
  if (h->in != MPI_REQUEST_NULL) { /* another group stopped: as a signal of this rank's */
    int done = 0;
    if (MPI_Test(&h->in, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return mpi_fail("MPI_Test");
    if (done) {
      h->got = 1;
      tsr_stop_ask(&x->stop, h->in_why);
    }
  }
  const double t = MPI_Wtime();
  if (!now && h->last > 0.0 && t - h->last > h->gap) h->gap = t - h->last;
  h->last = t;
  if (x->rank == 0) { /* the group's rank 0 decides on the wall time */
    const tsr_case *c = p->c;
    const double bytes = (double)tsr_box_cells(&x->layout.global) * c->ncomp * (p->P + 1) *
                         (c->precision == TSR_PRECISION_SINGLE ? 4.0 : 8.0);
    tsr_stop_margin(&x->stop, h->write_longest, bytes, h->gap);
  }
  int why = 0;
  TSR_CALL(tsr_stop_poll(&x->stop, now, &why));
  if (!why) return TSR_OK;
  h->why = why;
  return tell(p);
}

tsr_err tsr_pr_halt_steps(pr *p, int64_t steps, int64_t *since) {
  *since += steps;
  if (*since < p->h.every) return TSR_OK;
  *since = 0;
  return tsr_pr_halt_poll(p, 0);
}

void tsr_pr_halt_settle(pr *p) {
  if (p->fx[0].stop.comm != MPI_COMM_NULL) tsr_stop_settle(&p->fx[0].stop);
  p->h.last = 0.0; /* the time between iterations is no gap between fine steps */
}

tsr_err tsr_pr_halt_drain(pr *p, const double *all, int stride, int at) {
  pr_halt *h = &p->h;
  if (h->comm == MPI_COMM_NULL) return TSR_OK;
  int left = 0;
  for (int g = 0; g < p->ngroup; ++g)
    if (g != p->group && all[(size_t)(g * p->nspace + p->srank) * (size_t)stride + at] != 0.0)
      ++left;
  if (left && !h->got) {
    if (MPI_Wait(&h->in, MPI_STATUS_IGNORE) != MPI_SUCCESS) return mpi_fail("MPI_Wait");
    h->got = 1;
  }
  for (int i = 1; i < left; ++i) {
    int why;
    if (MPI_Recv(&why, 1, MPI_INT, MPI_ANY_SOURCE, NOTICE_TAG, h->comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return mpi_fail("MPI_Recv of a notice");
  }
  if (h->nout && MPI_Waitall(h->nout, h->out, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
    return mpi_fail("MPI_Waitall of the notices");
  h->nout = 0;
  return TSR_OK;
}

void tsr_pr_halt_end(pr *p) {
  pr_halt *h = &p->h;
  if (h->in != MPI_REQUEST_NULL) {
    MPI_Cancel(&h->in);
    MPI_Wait(&h->in, MPI_STATUS_IGNORE);
  }
  for (int i = 0; i < h->nout; ++i) MPI_Request_free(&h->out[i]); /* after a failure only */
  h->nout = 0;
  free(h->out);
  h->out = NULL;
  if (h->comm != MPI_COMM_NULL) MPI_Comm_free(&h->comm);
}

tsr_err tsr_pr_keep(pr *p) {
  for (int j = 0; j <= p->m; ++j) TSR_CALL(tsr_parareal_copy(&p->fx[0], p->keep[j], p->in[j]));
  return TSR_OK;
}

tsr_err tsr_pr_restore(pr *p) {
  for (int j = 0; j <= p->m; ++j) TSR_CALL(tsr_parareal_copy(&p->fx[0], p->in[j], p->keep[j]));
  return p->fx[0].be->sync(&p->fx[0]);
}
