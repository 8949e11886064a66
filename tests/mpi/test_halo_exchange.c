/* Halo exchange over MPI on however many ranks it runs: every received ghost holds the value
 * of the (periodically wrapped) global cell it stands for, ghosts beyond non-periodic edges
 * are untouched, owned cells are unchanged; plus the misuse errors. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "decomp/halo.h"

static int rank, nranks, failures;

#define EXPECT(cond, ...)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      if (failures++ < 20) {                                                                   \
        fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                         \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, "\n");                                                                 \
      }                                                                                        \
    }                                                                                          \
  } while (0)

/* A failed library call leaves the run unusable: report and stop every rank. */
#define MUST(expr)                                                                             \
  do {                                                                                         \
    tsr_err e_ = (expr);                                                                       \
    if (e_ != TSR_OK) {                                                                        \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, #expr, tsr_err_name(e_),           \
              tsr_err_message());                                                              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

/* Exact in a double: global cell index times 8 plus the component, plus one so 0 is unused. */
static double encode(const int cells[3], int i, int j, int k, int c) {
  return 1.0 + 8.0 * (((double)k * cells[1] + j) * cells[0] + i) + c;
}

static void fill(tsr_field *f, const int cells[3]) {
  const tsr_box *g = &f->gbox, *b = &f->box;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = g->lo[2]; k < g->hi[2]; ++k)
      for (int j = g->lo[1]; j < g->hi[1]; ++j)
        for (int i = g->lo[0]; i < g->hi[0]; ++i) {
          int own = i >= b->lo[0] && i < b->hi[0] && j >= b->lo[1] && j < b->hi[1] &&
                    k >= b->lo[2] && k < b->hi[2];
          tsr_field_set(f, tsr_field_at(f, c, i, j, k), own ? encode(cells, i, j, k, c) : NAN);
        }
}

static void check(const tsr_field *f, const tsr_layout *L, const char *what) {
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
          double want = encode(n, x[0], x[1], x[2], c);
          if (reachable)
            EXPECT(v == want, "%s: cell (%d,%d,%d) comp %d is %g, want %g", what, i, j, k, c, v,
                   want);
          else
            EXPECT(isnan(v), "%s: boundary ghost (%d,%d,%d) comp %d was written (%g)", what, i, j,
                   k, c, v);
        }
}

static void run_case(int dim, const int cells[3], const int periodic[3], tsr_part_kind kind,
                     int ghost, int ncomp, tsr_prec prec) {
  char what[160];
  snprintf(what, sizeof what, "%dD %dx%dx%d periodic %d%d%d %s ghost %d ncomp %d %s on %d ranks",
           dim, cells[0], cells[1], cells[2], periodic[0], periodic[1], periodic[2],
           kind == TSR_PART_RCB ? "rcb" : "slabs", ghost, ncomp,
           prec == TSR_PREC_SINGLE ? "single" : "double", nranks);
  tsr_part_opts o = {kind, ghost, {1, 1, 1}, NULL};
  tsr_layout L;
  tsr_halo_plan plan;
  tsr_field *f;
  tsr_halo *h;
  /* too many ranks for the grid: every rank gets the same answer, so all skip together */
  if (tsr_partition(dim, cells, periodic, nranks, &o, &L) == TSR_ERR_INPUT) {
    if (rank == 0) printf("skipped %s: %s\n", what, tsr_err_message());
    return;
  }
  MUST(tsr_halo_plan_build(&L, rank, ghost, &plan));
  MUST(tsr_field_create_as(dim, &L.boxes[rank], ghost, ncomp, TSR_MEM_HOST, prec, &f));
  MUST(tsr_halo_create(&plan, MPI_COMM_WORLD, ncomp, &h));
  /* twice: buffers and state are reused */
  for (int round = 0; round < 2; ++round) {
    fill(f, cells);
    MUST(tsr_halo_begin(h, f));
    /* overlap: the owned interior may be read while the exchange is in flight */
    double sum = 0.0;
    const tsr_box *b = &f->box;
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) sum += tsr_field_get(f, tsr_field_at(f, 0, i, j, k));
    EXPECT(sum > 0.0, "%s: owned sum %g", what, sum);
    MUST(tsr_halo_end(h, f));
    check(f, &L, what);
  }
  tsr_halo_destroy(&h);
  EXPECT(h == NULL, "%s: destroy left the handle set", what);
  tsr_field_destroy(&f);
  tsr_halo_plan_free(&plan);
  tsr_layout_free(&L);
}

static void misuse(void) {
  int cells[3] = {12, 10, 1}, periodic[3] = {1, 1, 0};
  tsr_layout L;
  tsr_halo_plan plan;
  tsr_field *f, *other, *wrong;
  tsr_halo *h;
  MUST(tsr_partition(2, cells, periodic, nranks, NULL, &L));
  MUST(tsr_halo_plan_build(&L, rank, 1, &plan));
  MUST(tsr_field_create(2, &L.boxes[rank], 1, 1, &f));
  MUST(tsr_field_create(2, &L.boxes[rank], 1, 1, &other));
  MUST(tsr_field_create(2, &L.boxes[rank], 1, 2, &wrong));
  MUST(tsr_halo_create(&plan, MPI_COMM_WORLD, 1, &h));

  EXPECT(tsr_halo_end(h, f) == TSR_ERR_STATE, "end without begin: %s", tsr_err_message());
  EXPECT(tsr_halo_begin(h, wrong) == TSR_ERR_STATE, "begin with 2 components on a 1-component "
                                                    "exchange");
  fill(f, cells);
  MUST(tsr_halo_begin(h, f));
  EXPECT(tsr_halo_begin(h, f) == TSR_ERR_STATE, "second begin in flight");
  EXPECT(tsr_halo_begin(h, other) == TSR_ERR_STATE, "begin on another field in flight");
  EXPECT(tsr_halo_end(h, other) == TSR_ERR_STATE, "end on a different field");
  MUST(tsr_halo_end(h, f));
  check(f, &L, "after misuse");
  EXPECT(tsr_halo_end(h, f) == TSR_ERR_STATE, "second end");

  /* destroy with an exchange in flight waits for it (every rank does the same) */
  MUST(tsr_halo_begin(h, f));
  tsr_halo_destroy(&h);
  tsr_halo_destroy(&h); /* NULL is accepted */
  tsr_field_destroy(&f);
  tsr_field_destroy(&other);
  tsr_field_destroy(&wrong);
  tsr_halo_plan_free(&plan);
  tsr_layout_free(&L);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

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

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("halo exchange on %d ranks: %d failures\n", nranks, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
