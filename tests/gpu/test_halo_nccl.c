/* Halo exchange over NCCL on device fields, one GPU per rank (1 or 2 ranks): every received
 * ghost holds the value of the (periodically wrapped) global cell it stands for, ghosts beyond
 * non-periodic edges are untouched, owned cells are unchanged, and the whole field is bitwise
 * what the MPI backend gives for the same input; through the stream-ordered calls
 * (tsr_halo_begin_after/end_before, nothing synchronised on the host in between) and the
 * plain ones; again after the plan is rebuilt in place for weighted boxes and the exchange
 * refitted (tsr_halo_refit_nccl, a rebalance's path). Plus the misuse errors of both
 * backends. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/halo.h"

static int rank, nranks, failures;
static char current[200] = "set-up"; /* the case running, for every message */

#define EXPECT(cond, ...)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      if (failures++ < 20) {                                                                   \
        fprintf(stderr, "rank %d: %s:%d: [%s] ", rank, __FILE__, __LINE__, current);           \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, "\n");                                                                 \
      }                                                                                        \
    }                                                                                          \
  } while (0)

/* A failed call leaves the run unusable: report and stop every rank (no rank may hang in an
 * NCCL call waiting for this one). */
#define MUST(expr)                                                                             \
  do {                                                                                         \
    tsr_err e_ = (expr);                                                                       \
    if (e_ != TSR_OK) {                                                                        \
      fprintf(stderr, "rank %d: [%s] %s failed: %s: %s\n", rank, current, #expr,              \
              tsr_err_name(e_), tsr_err_message());                                            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

#define CUDA_MUST(expr)                                                                        \
  do {                                                                                         \
    cudaError_t e_ = (expr);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "rank %d: [%s] %s failed: %s\n", rank, current, #expr,                  \
              cudaGetErrorString(e_));                                                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

#define NCCL_MUST(expr)                                                                        \
  do {                                                                                         \
    ncclResult_t e_ = (expr);                                                                  \
    if (e_ != ncclSuccess) {                                                                   \
      fprintf(stderr, "rank %d: [%s] %s failed: %s\n", rank, current, #expr,                  \
              ncclGetErrorString(e_));                                                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

static ncclComm_t nccl;
/* comm: the exchange's stream; producer and consumer stand for the compute stream. All are
 * non-blocking, so only the exchange's events order them against each other. */
static cudaStream_t comm, producer, consumer;

/* Exact in a double: global cell index times 8 plus the component, plus one so 0 is unused,
 * plus a salt that differs per round so that a pack reading the previous round's cells
 * (a missing stream dependency) shows. */
static double encode(const int cells[3], int i, int j, int k, int c, double salt) {
  return 1.0 + salt + 8.0 * (((double)k * cells[1] + j) * cells[0] + i) + c;
}

static void fill(tsr_field *f, const int cells[3], double salt) {
  const tsr_box *g = &f->gbox, *b = &f->box;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = g->lo[2]; k < g->hi[2]; ++k)
      for (int j = g->lo[1]; j < g->hi[1]; ++j)
        for (int i = g->lo[0]; i < g->hi[0]; ++i) {
          int own = i >= b->lo[0] && i < b->hi[0] && j >= b->lo[1] && j < b->hi[1] &&
                    k >= b->lo[2] && k < b->hi[2];
          tsr_field_set(f, tsr_field_at(f, c, i, j, k), own ? encode(cells, i, j, k, c, salt) : NAN);
        }
}

static void check(const tsr_field *f, const tsr_layout *L, double salt, const char *how) {
  const int *n = &L->global.hi[0];
  const tsr_box *g = &f->gbox;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = g->lo[2]; k < g->hi[2]; ++k)
      for (int j = g->lo[1]; j < g->hi[1]; ++j)
        for (int i = g->lo[0]; i < g->hi[0]; ++i) {
          int x[3] = {i, j, k}, reachable = 1;
          for (int d = 0; d < 3; ++d) {
            if (x[d] >= 0 && x[d] < n[d]) continue;
            if (!L->periodic[d]) reachable = 0;
            x[d] = ((x[d] % n[d]) + n[d]) % n[d];
          }
          double v = tsr_field_get(f, tsr_field_at(f, c, i, j, k));
          double want = encode(n, x[0], x[1], x[2], c, salt);
          if (reachable)
            EXPECT(v == want, "%s: cell (%d,%d,%d) comp %d is %g, want %g", how, i, j, k, c, v,
                   want);
          else
            EXPECT(isnan(v), "%s: boundary ghost (%d,%d,%d) comp %d was written (%g)", how, i, j,
                   k, c, v);
        }
}

static size_t field_bytes(const tsr_field *f) { return tsr_field_bytes(f); }

/* Bit-for-bit, NaN payloads included: the device result against the MPI backend's. */
static void same_bits(const tsr_field *got, const tsr_field *ref, const char *how) {
  size_t n = (size_t)got->ncomp * (size_t)got->scomp, es = tsr_prec_size(got->prec);
  for (size_t e = 0; e < n; ++e)
    if (memcmp((const char *)got->data + e * es, (const char *)ref->data + e * es, es) != 0) {
      EXPECT(0, "%s: element %zu differs from the MPI backend (%g vs %g)", how, e,
             tsr_field_get(got, (ptrdiff_t)e), tsr_field_get(ref, (ptrdiff_t)e));
      return;
    }
}

/* The MPI backend's answer for the field as filled with salt. */
static void reference(tsr_halo *mpi, tsr_field *ref, const int cells[3], double salt) {
  fill(ref, cells, salt);
  MUST(tsr_halo_begin(mpi, ref));
  MUST(tsr_halo_end(mpi, ref));
}

/* One round: host fill -> device (async on the round's producer) -> exchange -> host (async on
 * the round's consumer) -> checks. Round 0: begin_after/end_before on two streams; round 1:
 * plain begin/end after async work on the legacy default stream; round 2: begin_after and
 * end_before on one stream. */
static void round_trip(int round, tsr_halo *h, tsr_halo *mpi, tsr_field *dev, tsr_field *host,
                       tsr_field *ref, void *pinned, const tsr_layout *L, const int cells[3]) {
  double salt = 1e6 * (round + 1);
  size_t bytes = field_bytes(dev);
  char how[32];
  snprintf(how, sizeof how, "round %d", round);
  fill(host, cells, salt);
  memcpy(pinned, host->data, bytes);
  cudaStream_t in = round == 0 ? producer : round == 1 ? cudaStreamLegacy : producer;
  cudaStream_t out = round == 0 ? consumer : round == 1 ? cudaStreamLegacy : producer;
  /* poison first, on the same stream: a pack that runs early reads NaN, not a stale round */
  CUDA_MUST(cudaMemsetAsync(dev->data, 0xff, bytes, in));
  CUDA_MUST(cudaMemcpyAsync(dev->data, pinned, bytes, cudaMemcpyHostToDevice, in));
  if (round == 1) {
    MUST(tsr_halo_begin(h, dev));
    MUST(tsr_halo_end(h, dev));
  } else {
    MUST(tsr_halo_begin_after(h, dev, in));
    MUST(tsr_halo_end_before(h, dev, out));
  }
  /* the upload above reads pinned asynchronously: let it finish before pinned is reused (this
   * waits for the producer's copy only, not for the exchange on the communication stream) */
  CUDA_MUST(cudaStreamSynchronize(in));
  memset(pinned, 0, bytes);
  CUDA_MUST(cudaMemcpyAsync(pinned, dev->data, bytes, cudaMemcpyDeviceToHost, out));
  CUDA_MUST(cudaStreamSynchronize(out));
  memcpy(host->data, pinned, bytes);
  check(host, L, salt, how);
  reference(mpi, ref, cells, salt);
  check(ref, L, salt, "MPI reference");
  same_bits(host, ref, how);
}

static void run_case(int dim, const int cells[3], const int periodic[3], tsr_part_kind kind,
                     int ghost, int ncomp, tsr_prec prec) {
  snprintf(current, sizeof current,
           "%dD %dx%dx%d periodic %d%d%d %s ghost %d ncomp %d %s on %d ranks", dim, cells[0],
           cells[1], cells[2], periodic[0], periodic[1], periodic[2],
           kind == TSR_PART_RCB ? "rcb" : "slabs", ghost, ncomp,
           prec == TSR_PREC_SINGLE ? "single" : "double", nranks);
  tsr_part_opts o = {kind, ghost, {1, 1, 1}, NULL};
  tsr_layout L;
  tsr_halo_plan plan;
  tsr_field *dev, *host, *ref;
  tsr_halo *h, *mpi;
  /* too many ranks for the grid: every rank gets the same answer, so all skip together */
  if (tsr_partition(dim, cells, periodic, nranks, &o, &L) == TSR_ERR_INPUT) {
    if (rank == 0) printf("skipped %s: %s\n", current, tsr_err_message());
    return;
  }
  MUST(tsr_halo_plan_build(&L, rank, ghost, &plan));
  MUST(tsr_field_create_as(dim, &L.boxes[rank], ghost, ncomp, TSR_MEM_DEVICE, prec, &dev));
  MUST(tsr_field_create_as(dim, &L.boxes[rank], ghost, ncomp, TSR_MEM_HOST, prec, &host));
  MUST(tsr_field_create_as(dim, &L.boxes[rank], ghost, ncomp, TSR_MEM_HOST, prec, &ref));
  MUST(tsr_halo_create_nccl(&plan, nccl, ncomp, comm, &h));
  MUST(tsr_halo_create(&plan, MPI_COMM_WORLD, ncomp, &mpi));
  void *pinned = NULL;
  CUDA_MUST(cudaMallocHost(&pinned, field_bytes(dev)));
  for (int round = 0; round < 3; ++round)
    round_trip(round, h, mpi, dev, host, ref, pinned, &L, cells);
  /* a rebalance: the plan rebuilt in place for weighted boxes (rank r weighs r + 1), the fields
   * re-shaped onto them and the exchange refitted (its buffers kept where they fit) */
  double w[2] = {1.0, 2.0};
  tsr_part_opts wo = {kind, ghost, {1, 1, 1}, nranks <= 2 ? w : NULL};
  tsr_layout L2;
  if (tsr_partition(dim, cells, periodic, nranks, &wo, &L2) == TSR_OK) {
    tsr_halo_destroy(&mpi);
    tsr_halo_plan_free(&plan);
    MUST(tsr_halo_plan_build(&L2, rank, ghost, &plan));
    MUST(tsr_halo_refit_nccl(h));
    MUST(tsr_halo_create(&plan, MPI_COMM_WORLD, ncomp, &mpi));
    MUST(tsr_field_reshape(dev, &L2.boxes[rank]));
    MUST(tsr_field_reshape(host, &L2.boxes[rank]));
    MUST(tsr_field_reshape(ref, &L2.boxes[rank]));
    CUDA_MUST(cudaFreeHost(pinned));
    CUDA_MUST(cudaMallocHost(&pinned, field_bytes(dev)));
    snprintf(current + strlen(current), sizeof current - strlen(current), ", refitted");
    for (int round = 0; round < 3; ++round)
      round_trip(round, h, mpi, dev, host, ref, pinned, &L2, cells);
    tsr_layout_free(&L2);
  }
  CUDA_MUST(cudaFreeHost(pinned));
  tsr_halo_destroy(&h);
  EXPECT(h == NULL, "destroy left the handle set");
  tsr_halo_destroy(&mpi);
  tsr_field_destroy(&dev);
  tsr_field_destroy(&host);
  tsr_field_destroy(&ref);
  tsr_halo_plan_free(&plan);
  tsr_layout_free(&L);
}

static void misuse(void) {
  snprintf(current, sizeof current, "misuse on %d ranks", nranks);
  int cells[3] = {12, 10, 1}, periodic[3] = {1, 1, 0};
  tsr_layout L;
  tsr_halo_plan plan;
  tsr_field *f, *other, *wrong, *hostf;
  tsr_halo *h, *mpi, *bad = NULL;
  MUST(tsr_partition(2, cells, periodic, nranks, NULL, &L));
  MUST(tsr_halo_plan_build(&L, rank, 1, &plan));
  MUST(tsr_field_create_in(2, &L.boxes[rank], 1, 1, TSR_MEM_DEVICE, &f));
  MUST(tsr_field_create_in(2, &L.boxes[rank], 1, 1, TSR_MEM_DEVICE, &other));
  MUST(tsr_field_create_in(2, &L.boxes[rank], 1, 2, TSR_MEM_DEVICE, &wrong));
  MUST(tsr_field_create(2, &L.boxes[rank], 1, 1, &hostf));
  MUST(tsr_halo_create_nccl(&plan, nccl, 1, comm, &h));
  MUST(tsr_halo_create(&plan, MPI_COMM_WORLD, 1, &mpi));

  EXPECT(tsr_halo_create_nccl(&plan, nccl, 0, comm, &bad) != TSR_OK && bad == NULL,
         "0 components accepted");
  if (nranks > 1) {
    tsr_halo_plan other_rank;
    MUST(tsr_halo_plan_build(&L, (rank + 1) % nranks, 1, &other_rank));
    EXPECT(tsr_halo_create_nccl(&other_rank, nccl, 1, comm, &bad) == TSR_ERR_STATE && !bad,
           "a plan of another rank accepted");
    tsr_halo_plan_free(&other_rank);
  }

  EXPECT(tsr_halo_end(h, f) == TSR_ERR_STATE, "end without begin");
  EXPECT(tsr_halo_end_before(h, f, consumer) == TSR_ERR_STATE, "end_before without begin");
  EXPECT(tsr_halo_begin(h, wrong) == TSR_ERR_STATE, "2 components on a 1-component exchange");
  EXPECT(tsr_halo_begin(h, hostf) == TSR_ERR_STATE, "host field on the NCCL exchange");
  EXPECT(tsr_halo_begin_after(h, hostf, producer) == TSR_ERR_STATE,
         "host field on begin_after");
  EXPECT(tsr_halo_begin(mpi, f) == TSR_ERR_STATE, "device field on the MPI exchange");
  EXPECT(tsr_halo_begin_after(mpi, hostf, producer) == TSR_ERR_STATE,
         "begin_after on the MPI exchange");

  fill(hostf, cells, 0.0);
  CUDA_MUST(cudaMemcpy(f->data, hostf->data, field_bytes(f), cudaMemcpyHostToDevice));
  /* a pageable copy may return before its DMA lands; the exchange's streams do not wait */
  CUDA_MUST(cudaDeviceSynchronize());
  MUST(tsr_halo_begin_after(h, f, producer));
  EXPECT(tsr_halo_begin(h, f) == TSR_ERR_STATE, "second begin in flight");
  EXPECT(tsr_halo_begin_after(h, f, producer) == TSR_ERR_STATE, "second begin_after");
  EXPECT(tsr_halo_begin(h, other) == TSR_ERR_STATE, "begin on another field in flight");
  EXPECT(tsr_halo_end(h, other) == TSR_ERR_STATE, "end on a different field");
  EXPECT(tsr_halo_end_before(h, other, consumer) == TSR_ERR_STATE,
         "end_before on a different field");
  EXPECT(tsr_halo_end_before(mpi, hostf, consumer) == TSR_ERR_STATE,
         "end_before on the MPI exchange");
  MUST(tsr_halo_end_before(h, f, consumer));
  EXPECT(tsr_halo_end(h, f) == TSR_ERR_STATE, "second end");
  CUDA_MUST(cudaStreamSynchronize(consumer));
  CUDA_MUST(cudaMemcpy(hostf->data, f->data, field_bytes(f), cudaMemcpyDeviceToHost));
  check(hostf, &L, 0.0, "after misuse");

  /* destroy with an exchange in flight waits for it (every rank does the same) */
  MUST(tsr_halo_begin_after(h, f, producer));
  tsr_halo_destroy(&h);
  tsr_halo_destroy(&h); /* NULL is accepted */
  EXPECT(h == NULL, "destroy left the handle set");
  tsr_halo_destroy(&mpi);
  tsr_field_destroy(&f);
  tsr_field_destroy(&other);
  tsr_field_destroy(&wrong);
  tsr_field_destroy(&hostf);
  tsr_halo_plan_free(&plan);
  tsr_layout_free(&L);
}

/* One rank per GPU. Every rank decides first whether it has a GPU of its own and all agree,
 * so a rank short of a device makes all of them exit with a message instead of one of them
 * hanging in NCCL's set-up (or NCCL refusing two ranks on one GPU half-way). */
static int setup_device(void) {
  MPI_Comm local;
  int local_rank = 0, local_size = 1, count = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  cudaError_t e = cudaGetDeviceCount(&count);
  int short_of = e != cudaSuccess || count < local_size, any = 0;
  if (short_of)
    fprintf(stderr,
            "rank %d: %d rank(s) on this node but %d GPU(s) visible%s%s; this test needs one "
            "GPU per rank: run it with at most %d rank(s) per node (ctest -L gpu -LE gpu2 on "
            "a one-GPU machine)\n",
            rank, local_size, e == cudaSuccess ? count : 0, e == cudaSuccess ? "" : ": ",
            e == cudaSuccess ? "" : cudaGetErrorString(e), e == cudaSuccess ? count : 0);
  MPI_Allreduce(&short_of, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) return 1;
  CUDA_MUST(cudaSetDevice(local_rank % count));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) NCCL_MUST(ncclGetUniqueId(&id));
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  NCCL_MUST(ncclCommInitRank(&nccl, nranks, id, rank));
  int least = 0, greatest = 0;
  CUDA_MUST(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_MUST(cudaStreamCreateWithPriority(&comm, cudaStreamNonBlocking, greatest));
  CUDA_MUST(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CUDA_MUST(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (setup_device()) {
    if (rank == 0) fprintf(stderr, "NCCL halo exchange test: not enough GPUs; failing\n");
    MPI_Finalize();
    return 1;
  }

  static const int shapes[][4] = {{2, 13, 11, 1}, {2, 9, 16, 1}, {3, 9, 7, 5}, {3, 6, 8, 10}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    int dim = shapes[s][0], cells[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    for (int per = 0; per < (1 << dim); ++per) {
      int periodic[3] = {per & 1, (per >> 1) & 1, (per >> 2) & 1};
      for (int kind = TSR_PART_RCB; kind <= TSR_PART_SLABS; ++kind)
        for (int ghost = 1; ghost <= 2; ++ghost)
          for (int ncomp = 1; ncomp <= 2; ++ncomp)
            for (int prec = 0; prec < 2; ++prec)
              run_case(dim, cells, periodic, (tsr_part_kind)kind, ghost, ncomp, (tsr_prec)prec);
    }
  }
  misuse();

  snprintf(current, sizeof current, "tear-down");
  CUDA_MUST(cudaDeviceSynchronize());
  NCCL_MUST(ncclCommFinalize(nccl));
  NCCL_MUST(ncclCommDestroy(nccl));
  CUDA_MUST(cudaStreamDestroy(comm));
  CUDA_MUST(cudaStreamDestroy(producer));
  CUDA_MUST(cudaStreamDestroy(consumer));

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("NCCL halo exchange on %d ranks: %d failures\n", nranks, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
