/* Polling host waits for GPU work (solver/gpu_wait.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/gpu_wait.h"

#include <sched.h>

#include "kernels/cuda_util.h"
#include "solver/watchdog.h"

static tsr_err poll_once(cudaStream_t stream, ncclComm_t nccl, const char *what, int *done) {
  cudaError_t q = cudaStreamQuery(stream);
  *done = q == cudaSuccess;
  if (*done) return TSR_OK;
  if (q != cudaErrorNotReady) return tsr_cuda_fail((int)q, what, __FILE__, __LINE__);
  if (nccl) {
    ncclResult_t async = ncclSuccess;
    TSR_NCCL(ncclCommGetAsyncError(nccl, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      return tsr_nccl_fail((int)async, what, __FILE__, __LINE__);
  }
  TSR_CHECK(!tsr_watchdog_fired(), TSR_ERR_NCCL,
            "%s: the watchdog found no progress within comm.timeout and aborts the job", what);
  return TSR_OK;
}

tsr_err tsr_gpu_wait(cudaStream_t stream, ncclComm_t nccl, const char *what) {
  int done = 0;
  tsr_err err = poll_once(stream, nccl, what, &done);
  if (err || done) return err;
  tsr_watchdog_waiting(TSR_WATCHDOG_GPU);
  while (!err && !done) {
    sched_yield(); /* a core per rank spins here; let the rank's other threads in */
    err = poll_once(stream, nccl, what, &done);
  }
  tsr_watchdog_waiting(0);
  return err;
}

static void abort_nccl(void *comm) { ncclCommAbort((ncclComm_t)comm); }

void tsr_gpu_watch_nccl(ncclComm_t nccl) {
  tsr_watchdog_on_abort(nccl ? abort_nccl : NULL, nccl);
}
