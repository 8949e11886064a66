/* Parareal's link between time-slice groups (parareal.h): each iteration a group's end state,
 * with its change that iteration, goes to the same space rank of the next group, box to box
 * (every group has the same spatial decomposition, so the two boxes are one). Two ways:
 * - NCCL (CUDA backend): one communicator over the run's world; the owned cells are packed on
 *   the device into a buffer (kernels/pack.h) with the change as its last 8 bytes, sent with
 *   ncclSend on a high-priority stream of the link, received with ncclRecv and unpacked on the
 *   device; only the 8 bytes of the change come back to the host. link_cuda.c.
 * - MPI (CPU ranks, or TESSERA_PARAREAL_LINK=mpi): the owned cells through host memory, as
 *   doubles with the change as the last one, MPI_Isend / MPI_Recv. link.c.
 * The send completes in the background and the sender goes on; the next send waits for it.
 * Both give the same bits (the values move unchanged: single fields as floats, or as doubles
 * converted back exactly). Private to solver/parareal/. */
#ifndef TSR_PARAREAL_LINK_H
#define TSR_PARAREAL_LINK_H

#include <mpi.h>

#include "kernels/field.h"

struct tsr_run_ctx;
typedef struct tsr_pr_link tsr_pr_link;

/* A link for the fields of x (borrowed: it must outlive the link; its backend, box, component
 * count and, on GPUs, its compute stream and device) between this rank and world ranks prev
 * (it receives from; -1: none) and next (it sends to; -1: none). The way: NCCL on the CUDA
 * backend, MPI on the host backend; the environment's TESSERA_PARAREAL_LINK (mpi, nccl, auto or
 * unset) may force MPI. Where no rank has a peer (one group) nothing is made for either.
 * Collective over world (an NCCL communicator is created over it); every rank returns the same
 * code. The caller owns *out (tsr_pr_link_destroy). Errors: TSR_ERR_INPUT (a bad
 * TESSERA_PARAREAL_LINK, or nccl without the CUDA backend), TSR_ERR_MEMORY, TSR_ERR_MPI,
 * TSR_ERR_NCCL, TSR_ERR_CUDA. */
tsr_err tsr_pr_link_create(struct tsr_run_ctx *x, MPI_Comm world, int prev, int next,
                           tsr_pr_link **out);

/* "nccl", "mpi", or "none" (one group: nothing moves), for report.json. */
const char *tsr_pr_link_name(const tsr_pr_link *l);

/* Sends f's owned cells and change to next. Waits first for the previous send (its buffer is
 * reused). GPU: ordered after the work issued so far on x's compute stream (what wrote f), and
 * anything issued there after this call may overwrite f; the send itself runs in the
 * background until next receives. CPU: f is copied before this returns. Errors: TSR_ERR_STATE
 * (no next), TSR_ERR_MPI, TSR_ERR_NCCL, TSR_ERR_CUDA. */
tsr_err tsr_pr_link_send(tsr_pr_link *l, const tsr_field *f, double change);

/* Receives prev's send into f's owned cells and *change; returns once *change is on the host.
 * GPU: f is written on x's compute stream (work issued there after this call sees it; other
 * streams wait for that stream, as for every write of the fine run), after the work issued
 * there so far. CPU: f is complete on return. Errors: TSR_ERR_STATE (no prev), TSR_ERR_MPI,
 * TSR_ERR_NCCL (also a peer's failure seen while waiting), TSR_ERR_CUDA. */
tsr_err tsr_pr_link_recv(tsr_pr_link *l, tsr_field *f, double *change);

/* Waits for the send in flight, if any (before the end of a run). Errors: TSR_ERR_MPI,
 * TSR_ERR_NCCL, TSR_ERR_CUDA. */
tsr_err tsr_pr_link_wait(tsr_pr_link *l);

/* Frees the link and sets *l to NULL; accepts NULL. A send that has not completed is waited
 * for on MPI and abandoned on NCCL (the communicator is aborted: a run that failed must not
 * hang on a receiver that stopped). Collective over the world on NCCL (the communicator's
 * destruction). */
void tsr_pr_link_destroy(tsr_pr_link **l);

#ifdef TSR_HAVE_CUDA
/* The NCCL half (link_cuda.c), for link.c: the same calls on the link's device state. */
typedef struct tsr_pr_link_gpu tsr_pr_link_gpu;
tsr_err tsr_pr_link_gpu_create(struct tsr_run_ctx *x, MPI_Comm world, int prev, int next,
                               tsr_pr_link_gpu **out);
tsr_err tsr_pr_link_gpu_send(tsr_pr_link_gpu *g, const tsr_field *f, double change);
tsr_err tsr_pr_link_gpu_recv(tsr_pr_link_gpu *g, tsr_field *f, double *change);
tsr_err tsr_pr_link_gpu_wait(tsr_pr_link_gpu *g);
void tsr_pr_link_gpu_destroy(tsr_pr_link_gpu **g);
#endif

#endif
