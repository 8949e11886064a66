/* GPUs for the ranks: how many this process sees, which one each rank drives (one rank per
 * GPU, picked by the rank's index on its node; DESIGN.md, Backends), and the NCCL
 * communicator over the ranks' GPUs, bootstrapped over MPI. */
#ifndef TSR_DEVICE_H
#define TSR_DEVICE_H

#include <mpi.h>

#include "io/error.h"

#ifdef TSR_HAVE_CUDA
#include <nccl.h>
#endif

/* Number of CUDA GPUs this process can use (after CUDA_VISIBLE_DEVICES). No driver or no GPU
 * is not an error: *n = 0. Always 0 in a build without CUDA. Not collective.
 * Errors: TSR_ERR_CUDA (the runtime failed some other way, e.g. a driver/runtime mismatch). */
tsr_err tsr_device_count(int *n);

/* As tsr_device_count, and when *n is 0 sets *why (may be NULL) to a one-line reason: the
 * CUDA runtime's text ("no CUDA-capable device is detected", ...) or "this build has no CUDA".
 * *why is static storage; set to "" when *n > 0. */
tsr_err tsr_device_count_why(int *n, const char **why);

/* Of the GPUs this process sees (*seen), how many work (*usable): each in turn is made
 * current, given a context, an allocation and a memset that completes, then reset. A GPU
 * that fails is named on stderr with the runtime's reason, prefixed with host. Not
 * collective; call it from one process per node, before any other CUDA work in the process
 * (it resets the devices). Always 0 and 0 in a build without CUDA. */
void tsr_device_usable(const char *host, int *usable, int *seen);

/* Picks this rank's GPU: local rank r of the ranks of comm on the same node
 * (MPI_Comm_split_type SHARED) gets device r, made current with cudaSetDevice; *device = r.
 * Collective over comm; every rank returns the same code (the message of the lowest failing
 * rank). Errors: TSR_ERR_INPUT (more ranks on a node than GPUs there: the message names the
 * node, the counts, CUDA_VISIBLE_DEVICES and how many ranks to start; a GPU this build has no
 * code for, tsr_cuda_check_arch), TSR_ERR_CUDA,
 * TSR_ERR_UNSUPPORTED (a build without CUDA). */
tsr_err tsr_device_select(MPI_Comm comm, int *device);

#ifdef TSR_HAVE_CUDA
/* Creates an NCCL communicator over the ranks of comm, rank for rank (NCCL rank = MPI rank in
 * comm), on each rank's current device: call tsr_device_select first. Rank 0 makes the
 * unique id and broadcasts it over MPI. Collective over comm; every rank returns the same
 * code. The caller owns *nccl and frees it with tsr_nccl_destroy. Errors: TSR_ERR_NCCL. */
tsr_err tsr_nccl_create(MPI_Comm comm, ncclComm_t *nccl);

/* Destroys the communicator (after its pending work completes) and sets *nccl to NULL;
 * accepts NULL and a NULL communicator. Collective over the communicator's ranks.
 * Errors: TSR_ERR_NCCL. */
tsr_err tsr_nccl_destroy(ncclComm_t *nccl);
#endif

#endif
