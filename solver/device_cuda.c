/* The CUDA and NCCL half of solver/device.h; device.c holds the MPI logic around it. */
#include "solver/device.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cuda_util.h"
#include "solver/run.h"

tsr_err tsr_device_count_why(int *n, const char **why) {
  *n = 0;
  if (why) *why = "";
  cudaError_t e = cudaGetDeviceCount(n);
  /* No driver and no GPU are ordinary on CPU nodes and CI: the host backend runs there. */
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    cudaGetLastError(); /* the failed initialisation must not surface in a later check */
    *n = 0;
    if (why) *why = cudaGetErrorString(e);
    return TSR_OK;
  }
  if (e != cudaSuccess) *n = 0;
  TSR_CUDA(e);
  return TSR_OK;
}

tsr_err tsr_device_count(int *n) { return tsr_device_count_why(n, NULL); }

/* One GPU's trial; cudaSuccess when it works. */
static cudaError_t try_device(int i) {
  void *p = NULL;
  cudaError_t e = cudaSetDevice(i); /* creates the context since CUDA 12 */
  if (e == cudaSuccess) e = cudaMalloc(&p, 1 << 20);
  if (e == cudaSuccess) e = cudaMemset(p, 0x5a, 1 << 20);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (p) cudaFree(p);
  return e;
}

void tsr_device_usable(const char *host, int *usable, int *seen) {
  *usable = *seen = 0;
  const char *why;
  if (tsr_device_count_why(seen, &why) != TSR_OK) {
    fprintf(stderr, "tessera probe: node %s: the CUDA runtime fails: %s\n", host,
            tsr_err_message());
    *seen = 0;
    return;
  }
  for (int i = 0; i < *seen; ++i) {
    cudaError_t e = try_device(i);
    if (e == cudaSuccess) {
      ++*usable;
    } else {
      char bus[32] = "?";
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) != cudaSuccess) snprintf(bus, sizeof bus, "?");
      fprintf(stderr, "tessera probe: node %s: GPU %d (PCI %s) is not usable: %s\n", host, i,
              bus, cudaGetErrorString(e));
    }
    cudaGetLastError();
    cudaDeviceReset(); /* leaves the GPU to the run that follows */
  }
}

/* Since CUDA 12 cudaSetDevice also creates the context, so a GPU that is busy in exclusive
 * mode or out of memory fails here, where every rank can still agree on it. */
tsr_err tsr_device_set_cuda(int device) {
  TSR_CUDA(cudaSetDevice(device));
  return tsr_cuda_check_arch();
}

tsr_err tsr_nccl_create(MPI_Comm comm, ncclComm_t *nccl) {
  *nccl = NULL;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* The id travels with rank 0's result so that a failure there cannot leave the others
   * waiting in ncclCommInitRank for a rank that never comes. */
  struct {
    ncclUniqueId id;
    int ok;
  } boot;
  memset(&boot, 0, sizeof boot);
  tsr_err err = TSR_OK;
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&boot.id);
    if (r != ncclSuccess) err = tsr_nccl_fail((int)r, "ncclGetUniqueId(&id)", __FILE__, __LINE__);
    boot.ok = r == ncclSuccess;
  }
  MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, comm);
  if (!boot.ok) return tsr_run_agree(comm, err); /* rank 0's message on every rank */
  ncclComm_t c = NULL;
  ncclResult_t r = ncclCommInitRank(&c, size, boot.id, rank);
  if (r != ncclSuccess) {
    err = tsr_nccl_fail((int)r, "ncclCommInitRank(&comm, size, id, rank)", __FILE__, __LINE__);
    tsr_err_append("  check that every rank called tsr_device_select and that the GPUs can reach "
                   "each other (NCCL_DEBUG=WARN shows why)");
  }
  err = tsr_run_agree(comm, err);
  if (err) {
    if (c) ncclCommAbort(c);
    return err;
  }
  *nccl = c;
  return TSR_OK;
}

tsr_err tsr_nccl_destroy(ncclComm_t *nccl) {
  if (!nccl || !*nccl) return TSR_OK;
  ncclComm_t c = *nccl;
  *nccl = NULL;
  TSR_NCCL(ncclCommDestroy(c));
  return TSR_OK;
}
