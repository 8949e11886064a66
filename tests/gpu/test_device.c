/* solver/device on GPUs: each rank gets the GPU of its local rank, NCCL comes up over MPI and
 * sums the ranks' numbers on the devices; too many ranks for a node's GPUs is refused on every
 * rank. Run on 1 and 2 ranks (label gpu; gpu2 for 2). Exits non-zero (MPI_Abort) on the first
 * failure. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "solver/device.h"

static int g_rank;

#include "tests/check.h"

/* Every rank of comm holds the same err. */
static void check_same(tsr_err err) {
  int lo, hi, e = (int)err;
  MPI_Allreduce(&e, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&e, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "ranks disagree: codes %d to %d", lo, hi);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  int local_rank, local_size;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);

  int ngpu = -1;
  CHECK(tsr_device_count(&ngpu) == TSR_OK, "tsr_device_count failed");
  CHECK(ngpu > 0, "no GPU visible: this test needs the GPU machine (ctest -L gpu)");

  int dev = -2;
  tsr_err err = tsr_device_select(MPI_COMM_WORLD, &dev);
  check_same(err);
  if (local_size > ngpu) {
    /* More ranks than GPUs (gpu2 on a one-GPU machine): the refusal is what is tested. */
    CHECK(err == TSR_ERR_INPUT, "%d ranks on %d GPUs: expected an input error, got %d",
          local_size, ngpu, (int)err);
    CHECK(strstr(tsr_err_message(), "start at most") != NULL, "message says what to do");
    CHECK(dev == -1, "no device on failure, got %d", dev);
    if (g_rank == 0) printf("ok: %d ranks on %d GPUs refused on every rank\n", local_size, ngpu);
    MPI_Finalize();
    return 0;
  }
  CHECK(err == TSR_OK, "tsr_device_select failed");
  CHECK(dev == local_rank, "device %d, local rank %d", dev, local_rank);
  int cur = -1;
  CHECK(cudaGetDevice(&cur) == cudaSuccess && cur == dev, "current device %d, selected %d", cur,
        dev);

  ncclComm_t nccl = NULL;
  err = tsr_nccl_create(MPI_COMM_WORLD, &nccl);
  check_same(err);
  CHECK(err == TSR_OK && nccl, "tsr_nccl_create failed");
  int count = -1, user_rank = -1, cu_dev = -1;
  CHECK(ncclCommCount(nccl, &count) == ncclSuccess && count == size, "count %d", count);
  CHECK(ncclCommUserRank(nccl, &user_rank) == ncclSuccess && user_rank == g_rank,
        "NCCL rank %d", user_rank);
  CHECK(ncclCommCuDevice(nccl, &cu_dev) == ncclSuccess && cu_dev == dev, "NCCL device %d",
        cu_dev);

  /* One sum of the rank numbers on the devices: NCCL moved data, not just came up. */
  int *buf = NULL, mine = g_rank, sum = -1;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  CHECK(cudaMalloc((void **)&buf, sizeof *buf) == cudaSuccess, "cudaMalloc");
  CHECK(cudaMemcpy(buf, &mine, sizeof mine, cudaMemcpyHostToDevice) == cudaSuccess, "copy in");
  CHECK(ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, nccl, stream) == ncclSuccess,
        "ncclAllReduce");
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
  CHECK(cudaMemcpy(&sum, buf, sizeof sum, cudaMemcpyDeviceToHost) == cudaSuccess, "copy out");
  CHECK(sum == size * (size - 1) / 2, "sum of ranks %d, expected %d", sum, size * (size - 1) / 2);
  cudaFree(buf);
  cudaStreamDestroy(stream);

  CHECK(tsr_nccl_destroy(&nccl) == TSR_OK, "tsr_nccl_destroy failed");
  CHECK(nccl == NULL, "handle not cleared");
  CHECK(tsr_nccl_destroy(&nccl) == TSR_OK, "destroy of NULL");
  CHECK(tsr_nccl_destroy(NULL) == TSR_OK, "destroy(NULL)");
  if (g_rank == 0) printf("ok: %d rank%s, device = local rank, NCCL sum %d\n", size,
                          size == 1 ? "" : "s", sum);
  MPI_Finalize();
  return 0;
}
