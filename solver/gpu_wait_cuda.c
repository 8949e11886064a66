/* Polling host waits for GPU work (solver/gpu_wait.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/gpu_wait.h"

#include <sched.h>

#include "kernels/cuda_util.h"
#include "solver/watchdog.h"

tsr_err tsr_gpu_wait(cudaStream_t stream, ncclComm_t nccl, const char *what) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return TSR_OK;
    if (q != cudaErrorNotReady) return tsr_cuda_fail((int)q, what, __FILE__, __LINE__);
    if (nccl) {
      ncclResult_t async = ncclSuccess;
      TSR_NCCL(ncclCommGetAsyncError(nccl, &async));
      if (async != ncclSuccess && async != ncclInProgress)
        return tsr_nccl_fail((int)async, what, __FILE__, __LINE__);
    }
    TSR_CHECK(!tsr_watchdog_fired(), TSR_ERR_NCCL,
              "%s: the watchdog found no progress within comm.timeout and aborts the job", what);
    sched_yield(); /* a core per rank spins here; let the rank's other threads in */
  }
}

static void abort_nccl(void *comm) { ncclCommAbort((ncclComm_t)comm); }

void tsr_gpu_watch_nccl(ncclComm_t nccl) {
  tsr_watchdog_on_abort(nccl ? abort_nccl : NULL, nccl);
}
