/* bench/graphs: when the host's launch rate bounds the step rate, and what CUDA graphs of
 * whole steps (gpu.graphs, solver/graph.h) gain there. The whole solver (tsr_run, no output)
 * on small grids, one step = every stage's boundary, exchange, interior and shell kernels:
 *
 *   2D 256^2 .. 2048^2 and 3D 32^3 .. 128^3, heat with forward Euler (1 stage) and wave with
 *   RK4 (4 stages, 2 components), in the chosen precision.
 *
 * Each case runs three times: graphs off (plain launches), graphs on, and graphs on with CUDA
 * events around every replay, whose summed spans are the GPU's own time for the steps (host
 * gaps between replays left out): the ceiling of the step rate for this kernel sequence. The
 * runs' monitors (first and last step only) are inside the timed loop, as in any run.
 *
 *   usage: [mpirun -np 1] graphs [--json PATH] [--quick] [--precision double|single]
 * --quick: two sizes per dimension, few steps (a smoke run). Prints a table last; exits non-zero
 * when a run fails, the graphs did not run, or the final norms (min, max, L2, integral) with
 * graphs are not bitwise those without. TESSERA_COMMIT, when set, goes into the JSON. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case.h"
#include "solver/run.h"
#include "tsr_version.h"

typedef struct {
  const char *model, *scheme;
  int dim, n;
  long steps;
  double sps_off, sps_on, sps_gpu; /* steps per second */
  double norms[4 * TSR_MAX_COMP];  /* the plain run's final norms, which the others must match */
  int ok, same;
} result;

static int run_one(result *r, const char *prec, const char *graphs, int timing, double *sps) {
  char text[1024];
  const char *init = strcmp(r->model, "wave") == 0
                         ? "initial: {u: \"sin(pi*x)*sin(pi*y)\", v: 0}\n"
                         : "initial: {u: \"sin(pi*x)*sin(pi*y)\"}\n";
  char cells[64];
  if (r->dim == 2) snprintf(cells, sizeof cells, "[%d, %d]", r->n, r->n);
  else snprintf(cells, sizeof cells, "[%d, %d, %d]", r->n, r->n, r->n);
  snprintf(text, sizeof text,
           "name: graphs_bench\nmodel: %s\nbackend: cuda\nprecision: %s\ngrid: {cells: %s}\n%s"
           "time: {scheme: %s, dt: auto, steps: %ld}\noutput: {monitor_every: %ld, progress: "
           "none}\ngpu: {graphs: %s}\n",
           r->model, prec, cells, init, r->scheme, r->steps, r->steps, graphs);
  tsr_case *c = NULL;
  if (tsr_case_load_string("graphs_bench.yaml", text, 0, NULL, &c) != TSR_OK) {
    fprintf(stderr, "graphs: %s\n", tsr_err_message());
    return 0;
  }
  tsr_run_opts o = tsr_run_opts_default();
  o.quiet = 1;
  o.write_output = 0;
  o.graph_timing = timing;
  tsr_run_result res;
  tsr_err err = tsr_run(c, MPI_COMM_WORLD, &o, &res);
  tsr_case_destroy(&c);
  if (err) {
    fprintf(stderr, "graphs: %s\n", tsr_err_message());
    return 0;
  }
  int want = strcmp(graphs, "on") == 0;
  if (want && res.graph_steps != res.steps - 1) {
    fprintf(stderr, "graphs: %s %dD %d: %lld of %lld steps replayed as graphs; want all but "
                    "the first\n", r->model, r->dim, r->n, (long long)res.graph_steps,
            (long long)res.steps);
    return 0;
  }
  /* the final monitor's norms (reduced on the device in a fixed order): graphs must give the
   * plain run's bits */
  double norms[4 * TSR_MAX_COMP] = {0};
  for (int q = 0; q < TSR_MAX_COMP; ++q) {
    norms[4 * q] = res.min[q];
    norms[4 * q + 1] = res.max[q];
    norms[4 * q + 2] = res.l2[q];
    norms[4 * q + 3] = res.sum[q];
  }
  if (!want) memcpy(r->norms, norms, sizeof norms);
  else if (memcmp(r->norms, norms, sizeof norms) != 0) {
    fprintf(stderr, "graphs: %s %dD %d: the final norms with graphs differ from those without "
                    "(L2 %.17g against %.17g)\n", r->model, r->dim, r->n, norms[2], r->norms[2]);
    r->same = 0;
  }
  /* the slowest rank sets the pace */
  double wall = res.wall, busy = res.graph_gpu_time;
  MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &busy, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (timing) *sps = busy > 0 ? (double)res.graph_steps / busy : 0.0;
  else *sps = wall > 0 ? (double)res.steps / wall : 0.0;
  return 1;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *json = NULL, *prec = "double";
  int quick = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--precision") && i + 1 < argc) prec = argv[++i];
    else {
      if (rank == 0)
        fprintf(stderr, "usage: graphs [--json PATH] [--quick] [--precision double|single]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (strcmp(prec, "double") && strcmp(prec, "single")) {
    if (rank == 0) fprintf(stderr, "graphs: --precision %s: expected double or single\n", prec);
    MPI_Finalize();
    return 2;
  }
  static const int n2[] = {256, 512, 1024, 2048}, n3[] = {32, 64, 128};
  result res[32];
  int nres = 0;
  for (int m = 0; m < 2; ++m)
    for (int d = 2; d <= 3; ++d) {
      const int *ns = d == 2 ? n2 : n3;
      int count = d == 2 ? 4 : 3;
      for (int k = 0; k < count; ++k) {
        if (quick && k % 2) continue;
        result *r = &res[nres++];
        memset(r, 0, sizeof *r);
        r->model = m ? "wave" : "heat";
        r->scheme = m ? "rk4" : "euler";
        r->dim = d;
        r->n = ns[k];
        /* about a second of stepping at the plain launch rate, more steps where a step is
         * short */
        r->steps = quick ? 100 : (m ? 1000 : 3000);
      }
    }
  int dev = 0, ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    if (rank == 0) fprintf(stderr, "graphs: no GPU visible; this benchmark needs one per rank\n");
    MPI_Finalize();
    return 1;
  }
  struct cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  if (cudaGetDevice(&dev) == cudaSuccess) cudaGetDeviceProperties(&prop, dev);
  if (rank == 0)
    printf("graphs: %s, %d rank(s), %s; whole solver steps/s with CUDA graphs off and on%s\n",
           prop.name, size, prec, quick ? " (--quick)" : "");
  int ok = 1;
  for (int i = 0; i < nres; ++i) {
    result *r = &res[i];
    r->same = 1;
    r->ok = run_one(r, prec, "off", 0, &r->sps_off) && run_one(r, prec, "on", 0, &r->sps_on) &&
            run_one(r, prec, "on", 1, &r->sps_gpu);
    ok &= r->ok && r->same;
    if (rank == 0) {
      printf("  %s %s %dD %d: off %.0f, on %.0f, GPU-only %.0f steps/s\n", r->model, r->scheme,
             r->dim, r->n, r->sps_off, r->sps_on, r->sps_gpu);
      fflush(stdout);
    }
  }
  if (rank == 0) {
    printf("\n  %-11s %9s %7s %12s %12s %8s %12s %8s\n", "case", "size", "steps", "off step/s",
           "on step/s", "on/off", "GPU step/s", "on/GPU");
    for (int i = 0; i < nres; ++i) {
      const result *r = &res[i];
      char name[32], sz[32];
      snprintf(name, sizeof name, "%s %s", r->model, r->scheme);
      snprintf(sz, sizeof sz, "%d^%d", r->n, r->dim);
      printf("  %-11s %9s %7ld %12.0f %12.0f %8.2f %12.0f %8.2f%s\n", name, sz, r->steps,
             r->sps_off, r->sps_on, r->sps_off > 0 ? r->sps_on / r->sps_off : 0.0, r->sps_gpu,
             r->sps_gpu > 0 ? r->sps_on / r->sps_gpu : 0.0,
             !r->ok ? "  FAILED" : !r->same ? "  WRONG (graphs differ)" : "");
    }
    printf("  GPU step/s: steps over the summed GPU time of the replays (events around each), "
           "the ceiling for this kernel sequence\n  final norms with graphs bitwise equal to "
           "without: %s\n", ok ? "yes, every case" : "NO (see above)");
  }
  if (rank == 0 && json) {
    FILE *fp = fopen(json, "w");
    if (!fp) {
      fprintf(stderr, "graphs: cannot write %s\n", json);
      ok = 0;
    } else {
      const char *commit = getenv("TESSERA_COMMIT");
      fprintf(fp, "{\"bench\": \"graphs\", \"version\": \"%s\", \"commit\": \"%s\", "
              "\"machine\": \"%s\", \"ranks\": %d, \"precision\": \"%s\", \"quick\": %s, "
              "\"cases\": [",
              TSR_VERSION, commit ? commit : TSR_BENCH_COMMIT, prop.name, size, prec,
              quick ? "true" : "false");
      for (int i = 0; i < nres; ++i) {
        const result *r = &res[i];
        fprintf(fp, "%s{\"model\": \"%s\", \"scheme\": \"%s\", \"dim\": %d, \"n\": %d, "
                "\"steps\": %ld, \"steps_per_s_off\": %.1f, \"steps_per_s_on\": %.1f, "
                "\"steps_per_s_gpu\": %.1f, \"ok\": %s, \"same_norms\": %s}",
                i ? ", " : "", r->model, r->scheme, r->dim, r->n, r->steps, r->sps_off,
                r->sps_on, r->sps_gpu, r->ok ? "true" : "false", r->same ? "true" : "false");
      }
      fprintf(fp, "]}\n");
      fclose(fp);
    }
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
