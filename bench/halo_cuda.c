/* bench/halo: the NCCL halo exchange on GPUs, and how much of it the interior update hides.
 *
 *   mpirun -np P build/bench/halo [--json PATH] [--quick]      (one rank per GPU, P >= 2)
 *
 * Each rank owns an n^3 box of an n x n x (P n) grid split along z (as RCB splits a cube: the
 * faces are contiguous planes), so every rank but the end ones exchanges two n x n faces
 * (ghost 1, fp64). For n = 64 .. 512: the time of one exchange
 * (pack, grouped ncclSend/ncclRecv, unpack; CUDA events, median of 50 after warm-up) against
 * the face size, as bytes sent per second. Then at the largest n, one heat stage done the
 * solver's way (exchange begun, interior updated on the compute stream, exchange ended, the
 * shell updated after the unpack on the communication stream, beside the interior) against
 * the same stage with no exchange: their ratio is the overlap efficiency
 * (goal <= 1.03 at 512^3 per GPU). Every exchange is checked once: received ghosts hold the
 * neighbour's values. Also timed: the shell after the interior on the compute stream (how the
 * solver did it before). Prints a table on rank 0 and a JSON record; exits non-zero if wrong. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/halo.h"
#include "kernels/stage.h"
#include "solver/device.h"

static int rank, nranks;

#define CHECK(call)                                                                            \
  do {                                                                                         \
    tsr_err e_ = (call);                                                                       \
    if (e_) {                                                                                  \
      fprintf(stderr, "halo bench rank %d: %s\n", rank, tsr_err_message());                    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)
#define CUDA(call)                                                                             \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "halo bench rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median over reps of the time of fn(arg) on stream s, in seconds; the slowest rank's. */
typedef void (*work_fn)(void *arg);
static double timed(work_fn fn, void *arg, cudaStream_t s, int reps) {
  double t[64];
  cudaEvent_t a, b;
  CUDA(cudaEventCreate(&a));
  CUDA(cudaEventCreate(&b));
  for (int w = 0; w < 5; ++w) fn(arg);
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA(cudaEventRecord(a, s));
    fn(arg);
    CUDA(cudaEventRecord(b, s));
    CUDA(cudaEventSynchronize(b));
    float ms;
    CUDA(cudaEventElapsedTime(&ms, a, b));
    t[r] = 1e-3 * ms;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp);
  double mine = t[reps / 2], worst;
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return worst;
}

typedef struct {
  tsr_halo *halo;
  tsr_field *u, *v;
  cudaStream_t s, cs; /* compute, communication */
  cudaEvent_t joined;
  tsr_stage_desc d;
  tsr_box interior, shell[6];
  int nshell;
} ctx;

static void exchange(void *p) {
  ctx *c = p;
  CHECK(tsr_halo_begin_after(c->halo, c->u, c->s));
  CHECK(tsr_halo_end_before(c->halo, c->u, c->s));
}

/* The solver's way (solver/backend_cuda.c): the shell follows the unpack on the
 * communication stream, beside the interior, and the compute stream joins at the end. */
static void step_overlapped(void *p) {
  ctx *c = p;
  CHECK(tsr_halo_begin_after(c->halo, c->u, c->s));
  CHECK(tsr_stage_cuda(&c->d, &c->interior, c->u, NULL, NULL, NULL, c->v, c->s));
  CHECK(tsr_halo_end_before(c->halo, c->u, c->cs));
  for (int i = 0; i < c->nshell; ++i)
    CHECK(tsr_stage_cuda(&c->d, &c->shell[i], c->u, NULL, NULL, NULL, c->v, c->cs));
  CUDA(cudaEventRecord(c->joined, c->cs));
  CUDA(cudaStreamWaitEvent(c->s, c->joined, 0));
}

/* The shell after the interior on the compute stream (the solver before 2026-11-23). */
static void step_shell_after(void *p) {
  ctx *c = p;
  CHECK(tsr_halo_begin_after(c->halo, c->u, c->s));
  CHECK(tsr_stage_cuda(&c->d, &c->interior, c->u, NULL, NULL, NULL, c->v, c->s));
  CHECK(tsr_halo_end_before(c->halo, c->u, c->s));
  for (int i = 0; i < c->nshell; ++i)
    CHECK(tsr_stage_cuda(&c->d, &c->shell[i], c->u, NULL, NULL, NULL, c->v, c->s));
}

static void step_alone(void *p) {
  ctx *c = p;
  CHECK(tsr_stage_cuda(&c->d, &c->u->box, c->u, NULL, NULL, NULL, c->v, c->s));
}

/* Received ghosts on the z faces hold the neighbour's encoded values. */
static int verify(const tsr_field *u, const tsr_layout *L, int n) {
  size_t bytes = sizeof(double) * (size_t)u->scomp;
  double *h = malloc(bytes);
  CUDA(cudaMemcpy(h, u->data, bytes, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int side = 0; side < 2; ++side) {
    int gk = side == 0 ? u->box.lo[2] - 1 : u->box.hi[2];
    if (gk < 0 || gk >= L->global.hi[2]) continue;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double want = (double)i + 1e4 * j + 1e8 * gk;
        if (h[tsr_field_at(u, 0, i, j, gk)] != want) bad++;
      }
  }
  free(h);
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *json = NULL;
  int quick = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
  }
  if (nranks < 2) {
    if (rank == 0) fprintf(stderr, "halo bench: needs at least 2 ranks (one GPU each)\n");
    MPI_Finalize();
    return 2;
  }
  int dev;
  CHECK(tsr_device_select(MPI_COMM_WORLD, &dev));
  ncclComm_t nccl;
  CHECK(tsr_nccl_create(MPI_COMM_WORLD, &nccl));
  cudaStream_t compute, comm;
  int lo, hi;
  CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CUDA(cudaStreamCreateWithPriority(&compute, cudaStreamNonBlocking, lo));
  CUDA(cudaStreamCreateWithPriority(&comm, cudaStreamNonBlocking, hi));
  int sizes[] = {64, 128, 256, 512};
  int nsize = quick ? 2 : 4;
  double ex_s[4], bytes[4], with_s = 0, after_s = 0, alone_s = 0;
  int bad = 0;
  for (int si = 0; si < nsize; ++si) {
    int n = sizes[si];
    int cells[3] = {n, n, n * nranks}, periodic[3] = {0, 0, 0};
    tsr_part_opts po = {TSR_PART_GRID, 1, {1, 1, nranks}, NULL};
    tsr_layout L;
    tsr_halo_plan plan;
    CHECK(tsr_partition(3, cells, periodic, nranks, &po, &L));
    CHECK(tsr_halo_plan_build(&L, rank, 1, &plan));
    ctx c = {0};
    c.s = compute;
    c.cs = comm;
    CUDA(cudaEventCreateWithFlags(&c.joined, cudaEventDisableTiming));
    CHECK(tsr_field_create_in(3, &L.boxes[rank], 1, 1, TSR_MEM_DEVICE, &c.u));
    CHECK(tsr_field_create_in(3, &L.boxes[rank], 1, 1, TSR_MEM_DEVICE, &c.v));
    CHECK(tsr_halo_create_nccl(&plan, nccl, 1, comm, &c.halo));
    /* owned cells encode their global index, so received ghosts can be checked */
    tsr_field *h;
    CHECK(tsr_field_create(3, &L.boxes[rank], 1, 1, &h));
    const tsr_box *b = &h->box;
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i)
          tsr_field_set(h, tsr_field_at(h, 0, i, j, k), (double)i + 1e4 * j + 1e8 * k);
    CUDA(cudaMemcpy(c.u->data, h->data, sizeof(double) * (size_t)h->scomp, cudaMemcpyHostToDevice));
    tsr_field_destroy(&h);
    exchange(&c);
    CUDA(cudaStreamSynchronize(compute));
    bad += verify(c.u, &L, n);
    ex_s[si] = timed(exchange, &c, compute, 50);
    bytes[si] = (double)tsr_halo_bytes_sent(&plan, 1, (int)sizeof(double));
    MPI_Allreduce(MPI_IN_PLACE, &bytes[si], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (si == nsize - 1) {
      double h3[3] = {1.0 / n, 1.0 / n, 1.0 / cells[2]}, kappa = 1.0;
      c.d = (tsr_stage_desc){TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 1e-9, {0}};
      tsr_stage_coef_init(&c.d.coef, TSR_MODEL_HEAT, &kappa, h3, c.u);
      /* the solver's split (solver/run.c): only the z faces with a neighbour wait */
      c.interior = c.u->box;
      if (rank > 0) {
        c.interior.lo[2] += 1;
        c.shell[c.nshell] = c.u->box;
        c.shell[c.nshell++].hi[2] = c.interior.lo[2];
      }
      if (rank < nranks - 1) {
        c.interior.hi[2] -= 1;
        c.shell[c.nshell] = c.u->box;
        c.shell[c.nshell++].lo[2] = c.interior.hi[2];
      }
      with_s = timed(step_overlapped, &c, compute, 50);
      after_s = timed(step_shell_after, &c, compute, 50);
      alone_s = timed(step_alone, &c, compute, 50);
    }
    cudaEventDestroy(c.joined);
    tsr_halo_destroy(&c.halo);
    tsr_field_destroy(&c.u);
    tsr_field_destroy(&c.v);
    tsr_halo_plan_free(&plan);
    tsr_layout_free(&L);
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    struct cudaDeviceProp p;
    cudaGetDeviceProperties(&p, dev);
    printf("halo: %d ranks, one %s each; z-slabs of n^3 cells per rank, ghost 1, fp64\n",
           nranks, p.name);
    printf("  %6s %14s %12s %12s\n", "n", "bytes sent", "us/exchange", "GB/s sent");
    for (int si = 0; si < nsize; ++si)
      printf("  %6d %14.0f %12.1f %12.2f\n", sizes[si], bytes[si], 1e6 * ex_s[si],
             bytes[si] / ex_s[si] / 1e9);
    printf("  heat stage at %d^3 per rank: %.1f us alone, %.1f us with the exchange overlapped:"
           " overlap efficiency %.3f (goal <= 1.03)%s\n",
           sizes[nsize - 1], 1e6 * alone_s, 1e6 * with_s, with_s / alone_s,
           bad ? "  GHOSTS WRONG" : "");
    printf("  (with the shell after the interior on the compute stream instead: %.1f us, %.3f)\n",
           1e6 * after_s, after_s / alone_s);
    if (json) {
      FILE *fp = fopen(json, "w");
      if (fp) {
        fprintf(fp, "{\"bench\": \"halo\", \"ranks\": %d, \"gpu\": \"%s\", \"exchanges\": [", nranks, p.name);
        for (int si = 0; si < nsize; ++si)
          fprintf(fp, "%s{\"n\": %d, \"bytes_sent\": %.0f, \"seconds\": %.6e}", si ? ", " : "",
                  sizes[si], bytes[si], ex_s[si]);
        fprintf(fp, "], \"stage_n\": %d, \"stage_alone_s\": %.6e, \"stage_overlapped_s\": %.6e, "
                    "\"overlap_efficiency\": %.4f, \"stage_shell_after_s\": %.6e, \"correct\": %s}\n",
                sizes[nsize - 1], alone_s, with_s, with_s / alone_s, after_s,
                bad ? "false" : "true");
        fclose(fp);
      }
    }
  }
  tsr_nccl_destroy(&nccl);
  MPI_Finalize();
  return bad ? 1 : 0;
}
