#include "kernels/cuda_util.h"

#include <mpi.h>

static void where(int *rank, int *dev) {
  int init = 0;
  *rank = -1;
  *dev = -1;
  MPI_Initialized(&init);
  if (init) MPI_Comm_rank(MPI_COMM_WORLD, rank);
  cudaGetDevice(dev);
}

tsr_err tsr_cuda_fail(int code, const char *call, const char *file, int line) {
  int rank, dev;
  const char *what = cudaGetErrorString((cudaError_t)code);
  cudaGetLastError(); /* clear a sticky launch error so the message is ours */
  where(&rank, &dev);
  return tsr_err_set(TSR_ERR_CUDA, file, line, "CUDA error in %s: %s (rank %d, device %d, %s:%d)",
                     call, what, rank, dev, file, line);
}

tsr_err tsr_nccl_fail(int code, const char *call, const char *file, int line) {
  int rank, dev;
  where(&rank, &dev);
  return tsr_err_set(TSR_ERR_NCCL, file, line, "NCCL error in %s: %s (%s) (rank %d, device %d, %s:%d)",
                     call, ncclGetErrorString((ncclResult_t)code), ncclGetLastError(NULL), rank,
                     dev, file, line);
}
