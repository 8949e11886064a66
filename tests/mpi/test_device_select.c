/* solver/device where there may be no GPU (CI): counting GPUs is not an error, and device
 * selection either succeeds or fails with the same code on every rank, never leaving some
 * ranks waiting. Exits non-zero (MPI_Abort) on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "solver/device.h"

static int g_rank;

#include "tests/check.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm node;
  int local_size;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);

  int ngpu = -1;
  const char *why = NULL;
  CHECK(tsr_device_count_why(&ngpu, &why) == TSR_OK, "counting GPUs is not an error");
  CHECK(ngpu >= 0 && why != NULL, "count %d", ngpu);
  CHECK(ngpu > 0 || *why, "no GPU needs a reason");
  int n2 = -1;
  CHECK(tsr_device_count(&n2) == TSR_OK && n2 == ngpu, "count %d then %d", ngpu, n2);

  int dev = -2;
  tsr_err err = tsr_device_select(MPI_COMM_WORLD, &dev);
  int e = (int)err, lo, hi;
  MPI_Allreduce(&e, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&e, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "ranks disagree: codes %d to %d", lo, hi);
#ifdef TSR_HAVE_CUDA
  if (local_size > ngpu) {
    CHECK(err == TSR_ERR_INPUT, "%d ranks, %d GPUs: expected an input error", local_size, ngpu);
    CHECK(strstr(tsr_err_message(), "on node") && strstr(tsr_err_message(), "CUDA_VISIBLE_DEVICES"),
          "the message names the node and CUDA_VISIBLE_DEVICES");
    CHECK(dev == -1, "no device on failure, got %d", dev);
  } else {
    CHECK(err == TSR_OK, "%d ranks, %d GPUs: selection failed", local_size, ngpu);
    CHECK(dev >= 0 && dev < ngpu, "device %d", dev);
  }
#else
  CHECK(ngpu == 0, "a build without CUDA sees no GPU");
  CHECK(err == TSR_ERR_UNSUPPORTED, "a build without CUDA cannot select a GPU");
  CHECK(dev == -1, "no device on failure, got %d", dev);
#endif
  if (g_rank == 0) printf("ok: %d GPU%s, select: %s\n", ngpu, ngpu == 1 ? "" : "s",
                          err ? tsr_err_message() : "ok");
  MPI_Finalize();
  return 0;
}
