/* kernels/step_time on GPUs: the stage times a CUDA graph of a step computes on the device are
 * the bits the host's step loop computes (solver/explicit.c: t = (double)step * dt, then t + c * dt,
 * contraction off), for every scheme's stage offsets, awkward dt and steps far from 0; and a
 * replayed graph advances its step counter, so each replay computes the next step's times.
 * Run on 1 and 2 ranks (label gpu; gpu2 for 2), each on the GPU of its local rank. Exits non-zero
 * (MPI_Abort) on the first failure. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/step_time.h"

static int g_rank;

#include "tests/check.h"

#define CU(call) CHECK((call) == cudaSuccess, "%s", #call)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm node;
  int local_rank;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  int ngpu = 0;
  CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0,
        "no GPU visible: this test needs the GPU machine (ctest -L gpu)");
  CU(cudaSetDevice(local_rank % ngpu));
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  /* the stage offsets of euler, ssp_rk2, ssp_rk3, rk4 (solver/integrate.c) */
  static const tsr_step_time_coef schemes[] = {
      {1, {0.0}}, {2, {0.0, 1.0}}, {3, {0.0, 1.0, 0.5}}, {4, {0.0, 0.5, 0.5, 1.0}}};
  const double dts[] = {1.0 / 3.0e3, 0.1, 2.0 / 7.0, 3.14159265358979e-5, 1.7e-7, 0.5};
  const int64_t starts[] = {0, 999, 123456789};
  enum { K = 3000 };
  int64_t *dstep;
  double *dtimes;
  CU(cudaMalloc((void **)&dstep, sizeof *dstep));
  CU(cudaMalloc((void **)&dtimes, sizeof(double) * K * TSR_STEP_TIME_MAX));
  double *host = malloc(sizeof(double) * K * TSR_STEP_TIME_MAX);
  CHECK(host, "out of memory");
  long checked = 0;
  for (size_t si = 0; si < sizeof schemes / sizeof *schemes; ++si)
    for (size_t di = 0; di < sizeof dts / sizeof *dts; ++di)
      for (size_t bi = 0; bi < sizeof starts / sizeof *starts; ++bi) {
        const tsr_step_time_coef *c = &schemes[si];
        const double dt = dts[di];
        CHECK(tsr_step_time_set_cuda(dstep, starts[bi], s) == TSR_OK, "set");
        for (int k = 0; k < K; ++k)
          CHECK(tsr_step_time_cuda(dstep, c, dt, dtimes + k * TSR_STEP_TIME_MAX, s) == TSR_OK,
                "launch");
        CU(cudaMemcpyAsync(host, dtimes, sizeof(double) * K * TSR_STEP_TIME_MAX,
                           cudaMemcpyDeviceToHost, s));
        int64_t after = -1;
        CU(cudaMemcpyAsync(&after, dstep, sizeof after, cudaMemcpyDeviceToHost, s));
        CU(cudaStreamSynchronize(s));
        CHECK(after == starts[bi] + K, "step counter %lld after %d launches from %lld",
              (long long)after, K, (long long)starts[bi]);
        for (int k = 0; k < K; ++k) {
          const double t = (double)(starts[bi] + k) * dt; /* as solver/explicit.c */
          for (int j = 0; j < c->n; ++j) {
            const double want = t + c->c[j] * dt;
            const double got = host[k * TSR_STEP_TIME_MAX + j];
            CHECK(memcmp(&want, &got, sizeof want) == 0,
                  "step %lld stage %d of %d, dt %.17g: device %.17g, host %.17g",
                  (long long)(starts[bi] + k), j, c->n, dt, got, want);
            ++checked;
          }
        }
      }

  /* a graph of one launch, replayed: each replay computes the next step's times */
  const tsr_step_time_coef *rk4 = &schemes[3];
  const double dt = 1.0 / 3.0e3;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CHECK(tsr_step_time_cuda(dstep, rk4, dt, dtimes, s) == TSR_OK, "captured launch");
  CU(cudaStreamEndCapture(s, &graph));
  CU(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(tsr_step_time_set_cuda(dstep, 41, s) == TSR_OK, "set");
  for (int r = 0; r < 5; ++r) {
    CU(cudaGraphLaunch(exec, s));
    CU(cudaMemcpyAsync(host, dtimes, sizeof(double) * TSR_STEP_TIME_MAX, cudaMemcpyDeviceToHost,
                       s));
    CU(cudaStreamSynchronize(s));
    const double t = (double)(41 + r) * dt;
    for (int j = 0; j < rk4->n; ++j) {
      const double want = t + rk4->c[j] * dt;
      CHECK(memcmp(&want, &host[j], sizeof want) == 0, "replay %d stage %d: %.17g, want %.17g",
            r, j, host[j], want);
    }
  }
  CU(cudaGraphExecDestroy(exec));
  CU(cudaGraphDestroy(graph));
  CHECK(tsr_step_time_cuda(dstep, &(tsr_step_time_coef){5, {0}}, dt, dtimes, s) ==
            TSR_ERR_INTERNAL,
        "5 stages refused");
  free(host);
  cudaFree(dstep);
  cudaFree(dtimes);
  cudaStreamDestroy(s);
  if (g_rank == 0)
    printf("ok: %ld stage times bitwise equal to the host's; 5 graph replays advance the step\n",
           checked);
  MPI_Finalize();
  return 0;
}
