/* Parareal's link between time-slice groups (link.h): the choice of the way, and the MPI way. */
#include "solver/parareal/link.h"

#include <stdlib.h>
#include <string.h>

#include "solver/run_internal.h"

enum { LINK_NONE, LINK_MPI, LINK_NCCL };
enum { LINK_TAG = 7 };

struct tsr_pr_link {
  int kind;
  tsr_run_ctx *x; /* borrowed */
  MPI_Comm world;
  int prev, next;
  /* MPI: a state on the wire, ncomp x cells doubles (x fastest, component by component), then
   * its change */
  double *sbuf, *rbuf;
  int64_t cells, nbuf;
  MPI_Request sreq;
#ifdef TSR_HAVE_CUDA
  tsr_pr_link_gpu *gpu;
#endif
};

/* TESSERA_PARAREAL_LINK: *want LINK_MPI, LINK_NCCL, or 0 (the backend's way). */
static tsr_err wanted(const tsr_run_ctx *x, int *want) {
  const char *env = getenv("TESSERA_PARAREAL_LINK");
  *want = 0;
  if (!env || !*env || !strcmp(env, "auto")) return TSR_OK;
  if (!strcmp(env, "mpi")) *want = LINK_MPI;
  else if (!strcmp(env, "nccl")) *want = LINK_NCCL;
  TSR_CHECK(*want, TSR_ERR_INPUT,
            "TESSERA_PARAREAL_LINK=%s: not a way between parareal's rank groups; give mpi "
            "(through host memory), nccl (GPU to GPU, the CUDA backend's default) or auto, or "
            "unset it", env);
  TSR_CHECK(*want != LINK_NCCL || x->be->mem == TSR_MEM_DEVICE, TSR_ERR_INPUT,
            "TESSERA_PARAREAL_LINK=nccl: the run is on the %s backend, and NCCL moves device "
            "memory only; unset it, or run with --backend cuda", x->be->name);
  return TSR_OK;
}

static tsr_err choose(tsr_pr_link *l) {
  int want;
  TSR_CALL(wanted(l->x, &want));
  int any = l->prev >= 0 || l->next >= 0, kind;
  if (!any) kind = LINK_NONE;
  else if (want) kind = want;
  else kind = l->x->be->mem == TSR_MEM_DEVICE ? LINK_NCCL : LINK_MPI;
  l->kind = kind;
  return TSR_OK;
}

static tsr_err mpi_setup(tsr_pr_link *l) {
  l->cells = tsr_box_cells(&l->x->box);
  l->nbuf = (int64_t)l->x->c->ncomp * l->cells + 1;
  TSR_CHECK(l->nbuf <= 2147483647, TSR_ERR_INPUT,
            "%s: parareal's link moves a rank's box in one MPI message, and %lld values are "
            "too many: use more space ranks per group", l->x->c->path, (long long)l->nbuf);
  if (l->next >= 0) TSR_ALLOC(l->sbuf, (size_t)l->nbuf, "parareal's link");
  if (l->prev >= 0) TSR_ALLOC(l->rbuf, (size_t)l->nbuf, "parareal's link");
  return TSR_OK;
}

tsr_err tsr_pr_link_create(tsr_run_ctx *x, MPI_Comm world, int prev, int next,
                           tsr_pr_link **out) {
  *out = NULL;
  tsr_pr_link *l = calloc(1, sizeof *l);
  tsr_err err = l ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  if (l) {
    l->x = x;
    l->world = world;
    l->prev = prev;
    l->next = next;
    l->sreq = MPI_REQUEST_NULL;
    err = choose(l);
  }
  /* one way for all: the ranks' environments could differ, and NCCL's set-up is collective
   * (a rank that failed above has its own message, and counts as -1) */
  int kind[2] = {err ? -1 : l->kind, err ? -1 : -l->kind}, lo[2];
  MPI_Allreduce(kind, lo, 2, MPI_INT, MPI_MIN, world);
  if (!err && lo[0] >= 0 && lo[0] != -lo[1])
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "TESSERA_PARAREAL_LINK: the ranks chose different ways between their "
                      "groups (mpi and nccl); give every rank the same environment");
  err = tsr_run_agree(world, err);
  if (!err && l->kind == LINK_MPI) err = mpi_setup(l);
#ifdef TSR_HAVE_CUDA
  if (!err && l->kind == LINK_NCCL) err = tsr_pr_link_gpu_create(x, world, prev, next, &l->gpu);
#endif
  err = tsr_run_agree(world, err);
  if (err) {
    tsr_pr_link_destroy(&l);
    return err;
  }
  *out = l;
  return TSR_OK;
}

const char *tsr_pr_link_name(const tsr_pr_link *l) {
  static const char *const names[] = {"none", "mpi", "nccl"};
  return l ? names[l->kind] : "none";
}

tsr_err tsr_pr_link_send(tsr_pr_link *l, const tsr_field *f, double change) {
  TSR_CHECK(l && l->next >= 0, TSR_ERR_STATE, "parareal's link: a send from the last group");
#ifdef TSR_HAVE_CUDA
  if (l->gpu) return tsr_pr_link_gpu_send(l->gpu, f, change);
#endif
  tsr_run_ctx *x = l->x;
  if (l->sreq != MPI_REQUEST_NULL) MPI_Wait(&l->sreq, MPI_STATUS_IGNORE);
  for (int q = 0; q < x->c->ncomp; ++q) TSR_CALL(x->be->download(x, f, q, l->sbuf + q * l->cells));
  l->sbuf[l->nbuf - 1] = change;
  if (MPI_Isend(l->sbuf, (int)l->nbuf, MPI_DOUBLE, l->next, LINK_TAG, l->world, &l->sreq) !=
      MPI_SUCCESS)
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Isend of a slice's end state");
  return TSR_OK;
}

tsr_err tsr_pr_link_recv(tsr_pr_link *l, tsr_field *f, double *change) {
  TSR_CHECK(l && l->prev >= 0, TSR_ERR_STATE, "parareal's link: a receive in the first group");
#ifdef TSR_HAVE_CUDA
  if (l->gpu) return tsr_pr_link_gpu_recv(l->gpu, f, change);
#endif
  tsr_run_ctx *x = l->x;
  if (MPI_Recv(l->rbuf, (int)l->nbuf, MPI_DOUBLE, l->prev, LINK_TAG, l->world,
               MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Recv of a slice's start state");
  for (int q = 0; q < x->c->ncomp; ++q) TSR_CALL(x->be->upload(x, f, q, l->rbuf + q * l->cells));
  *change = l->rbuf[l->nbuf - 1];
  return TSR_OK;
}

tsr_err tsr_pr_link_wait(tsr_pr_link *l) {
  if (!l) return TSR_OK;
#ifdef TSR_HAVE_CUDA
  if (l->gpu) return tsr_pr_link_gpu_wait(l->gpu);
#endif
  if (l->sreq != MPI_REQUEST_NULL && MPI_Wait(&l->sreq, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Wait for a slice's end state");
  return TSR_OK;
}

void tsr_pr_link_destroy(tsr_pr_link **pl) {
  if (!pl || !*pl) return;
  tsr_pr_link *l = *pl;
#ifdef TSR_HAVE_CUDA
  tsr_pr_link_gpu_destroy(&l->gpu);
#endif
  if (l->sreq != MPI_REQUEST_NULL) MPI_Wait(&l->sreq, MPI_STATUS_IGNORE);
  free(l->sbuf);
  free(l->rbuf);
  free(l);
  *pl = NULL;
}
