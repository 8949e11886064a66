/* bench/checkpoint on GPUs (built as `checkpoint` when CUDA is on): the ceiling is one
 * cudaMemcpy of the staged bytes from device memory into pinned host memory, as the CUDA
 * backend stages; with --backend host, the CPU ranks' memcpy (bench/checkpoint_run.h says what
 * is measured). */
#include "checkpoint_run.h"

#include <cuda_runtime_api.h>

#include "solver/device.h"

static void cuda_or_abort(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "checkpoint bench rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static double ceiling_copy(size_t bytes, int device, int reps) {
  if (!device) return host_copy(bytes, reps);
  double t[64];
  if (reps > 64) reps = 64;
  int dev;
  BENCH_CHECK(tsr_device_select(MPI_COMM_WORLD, &dev)); /* the run's device for this rank */
  void *d = NULL, *h = NULL;
  cuda_or_abort(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
  cuda_or_abort(cudaMallocHost(&h, bytes ? bytes : 1), "cudaMallocHost");
  cuda_or_abort(cudaMemset(d, 1, bytes), "cudaMemset");
  for (int r = -1; r < reps; ++r) { /* r = -1: warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    cuda_or_abort(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (r >= 0) t[r] = MPI_Wtime() - t0;
  }
  cudaFree(d);
  cudaFreeHost(h);
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  return t[reps / 2];
}

static void ceiling_describe(int device, char *buf, size_t n) {
  if (!device) {
    host_describe(buf, n);
    return;
  }
  int dev = 0;
  cudaGetDevice(&dev);
  struct cudaDeviceProp p;
  cuda_or_abort(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  snprintf(buf, n, "one %s and %d OpenMP threads per rank", p.name, omp_get_max_threads());
}

int main(int argc, char **argv) { return bench_main(argc, argv, 1); }
