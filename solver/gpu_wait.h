/* Host waits for GPU work that cannot hang: polling instead of a blocking synchronize, with the
 * NCCL communicator's asynchronous errors and the watchdog checked between polls, so a peer
 * that failed or vanished mid-exchange ends the wait with an error (DESIGN.md, State on disk:
 * recovery). CUDA builds only; for solver/backend_cuda.c. */
#ifndef TSR_GPU_WAIT_H
#define TSR_GPU_WAIT_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "io/error.h"

/* Waits until the work issued so far to stream is done (cudaStreamQuery polling). Between
 * polls: an asynchronous error of nccl (may be NULL) returns TSR_ERR_NCCL, a fired watchdog
 * (solver/watchdog.h) TSR_ERR_NCCL too; what names the wait in the message ("the monitor's
 * reduction"). Errors: TSR_ERR_CUDA for a failed stream. */
tsr_err tsr_gpu_wait(cudaStream_t stream, ncclComm_t nccl, const char *what);

/* Makes ncclCommAbort(nccl) the watchdog's abort hook, so that a hang aborts the communicator
 * (and unblocks its kernels) before MPI_Abort; NULL removes it. The watchdog clears it when
 * it stops; call it again with NULL before destroying nccl otherwise. */
void tsr_gpu_watch_nccl(ncclComm_t nccl);

#endif
