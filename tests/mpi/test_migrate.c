/* Migration over MPI on however many ranks it runs: fields of random bits on one partition
 * move to another (RCB with uneven weights, a cost-weighted rebalance, the ranks' boxes
 * rotated) and every owned cell then holds its global cell's value bit for bit, in double and
 * single precision, 2D and 3D; ghosts of the new field are zero; the plans of all ranks agree
 * (what one sends another receives); a migration to the same layout moves nothing. And the
 * whole round: each rank's figures gathered (tsr_rebalance_gather), every rank decides alone,
 * all reach the same boxes, and the field migrates to them. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/migrate.h"
#include "decomp/rebalance.h"

static int g_rank, g_size;
#include "tests/check.h"

/* Random bits as a function of the global cell and component: a splitmix64 hash. */
static uint64_t bits_of(const int cells[3], int i, int j, int k, int c, uint64_t seed) {
  uint64_t x = seed + ((((uint64_t)k * cells[1] + j) * cells[0] + i) * 8 + c);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Stores the hash's bits in each owned cell (any bit pattern, NaNs included, must survive). */
static void fill(tsr_field *f, const int cells[3], uint64_t seed) {
  const tsr_box *b = &f->box;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) {
          uint64_t h = bits_of(cells, i, j, k, c, seed);
          ptrdiff_t o = tsr_field_at(f, c, i, j, k);
          if (f->prec == TSR_PREC_SINGLE) {
            uint32_t v = (uint32_t)h;
            memcpy((float *)f->data + o, &v, 4);
          } else {
            memcpy((double *)f->data + o, &h, 8);
          }
        }
}

/* Owned cells hold their bits; ghost cells are zero. Returns the number of bad cells. */
static int64_t check(const tsr_field *f, const int cells[3], uint64_t seed) {
  const tsr_box *g = &f->gbox, *b = &f->box;
  int64_t bad = 0;
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = g->lo[2]; k < g->hi[2]; ++k)
      for (int j = g->lo[1]; j < g->hi[1]; ++j)
        for (int i = g->lo[0]; i < g->hi[0]; ++i) {
          int own = i >= b->lo[0] && i < b->hi[0] && j >= b->lo[1] && j < b->hi[1] &&
                    k >= b->lo[2] && k < b->hi[2];
          uint64_t want = own ? bits_of(cells, i, j, k, c, seed) : 0, got = 0;
          ptrdiff_t o = tsr_field_at(f, c, i, j, k);
          if (f->prec == TSR_PREC_SINGLE) {
            uint32_t v;
            memcpy(&v, (const float *)f->data + o, 4);
            got = v;
            want = own ? (uint32_t)want : 0;
          } else {
            memcpy(&got, (const double *)f->data + o, 8);
          }
          bad += got != want;
        }
  return bad;
}

/* Every rank's plan against every other's: i sends to j exactly the box j receives from i. */
static void check_plans_agree(const tsr_layout *A, const tsr_layout *B) {
  int64_t sent = 0, received = 0;
  for (int r = 0; r < g_size; ++r) {
    tsr_migrate_plan pr;
    CHECK(tsr_migrate_plan_build(A, B, r, &pr) == TSR_OK, "plan of rank %d", r);
    sent += pr.send_cells;
    received += pr.recv_cells;
    for (int s = 0; s < pr.nsend; ++s) {
      tsr_migrate_plan pq;
      CHECK(tsr_migrate_plan_build(A, B, pr.send[s].peer, &pq) == TSR_OK, "peer plan");
      int found = 0;
      for (int t = 0; t < pq.nrecv; ++t)
        found += pq.recv[t].peer == r && tsr_box_equal(&pq.recv[t].box, &pr.send[s].box);
      CHECK(found == 1, "rank %d sends to %d a box that it does not receive", r,
            pr.send[s].peer);
      tsr_migrate_plan_free(&pq);
    }
    tsr_migrate_plan_free(&pr);
  }
  CHECK(sent == received, "%lld cells sent but %lld received", (long long)sent,
        (long long)received);
  CHECK(sent == tsr_rebalance_cells_moved(A, B), "plans move %lld cells, the layouts %lld",
        (long long)sent, (long long)tsr_rebalance_cells_moved(A, B));
}

/* Migrates a random field from A to B and checks every cell. */
static void migrate_and_check(const tsr_layout *A, const tsr_layout *B, int ncomp, int ghost,
                              tsr_prec prec, uint64_t seed, const char *what) {
  const int *cells = A->global.hi;
  check_plans_agree(A, B);
  tsr_migrate_plan p;
  CHECK(tsr_migrate_plan_build(A, B, g_rank, &p) == TSR_OK, "%s: plan", what);
  tsr_field *src = NULL, *dst = NULL;
  CHECK(tsr_field_create_as(A->dim, &A->boxes[g_rank], ghost, ncomp, TSR_MEM_HOST, prec, &src) ==
            TSR_OK, "%s: field", what);
  fill(src, cells, seed);
  CHECK(tsr_migrate_field(&p, MPI_COMM_WORLD, src, &dst) == TSR_OK, "%s: migrate", what);
  CHECK(tsr_box_equal(&dst->box, &B->boxes[g_rank]) && dst->ghost == ghost &&
            dst->ncomp == ncomp && dst->prec == prec, "%s: the new field's shape", what);
  int64_t bad = check(dst, cells, seed), all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(all == 0, "%s: %lld cells differ (%lld here)", what, (long long)all, (long long)bad);
  /* the source is untouched */
  CHECK(check(src, cells, seed) == 0, "%s: the source changed", what);
  /* into a reused allocation (the rebalancer's spare slot): stale bits everywhere, re-shaped
   * onto the new box; it must end bit for bit as the new field, ghosts included */
  tsr_field *r = NULL;
  CHECK(tsr_field_create_as(A->dim, &A->global, ghost, ncomp, TSR_MEM_HOST, prec, &r) == TSR_OK,
        "%s: spare field", what);
  memset(r->data, 0x5a, r->cap);
  CHECK(tsr_field_reshape(r, &B->boxes[g_rank]) == TSR_OK && r->cap >= tsr_field_bytes(r),
        "%s: reshape", what);
  CHECK(tsr_migrate_field_into(&p, MPI_COMM_WORLD, src, r) == TSR_OK, "%s: migrate into", what);
  int same = memcmp(r->data, dst->data, tsr_field_bytes(dst)) == 0, every = 0;
  MPI_Allreduce(&same, &every, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  CHECK(every, "%s: the migration into a reused field differs from a new one", what);
  CHECK(tsr_migrate_field_into(&p, MPI_COMM_WORLD, src, src) == TSR_ERR_STATE,
        "%s: the source was taken as its own destination", what);
  tsr_field_destroy(&r);
  /* a field on the wrong box is refused and gives nothing */
  tsr_field *none = dst;
  if (!tsr_box_equal(&A->boxes[g_rank], &B->boxes[g_rank])) {
    CHECK(tsr_migrate_field(&p, MPI_COMM_WORLD, dst, &none) == TSR_ERR_STATE && !none,
          "%s: a field on the new box was taken as the old", what);
  }
  tsr_field_destroy(&src);
  tsr_field_destroy(&dst);
  tsr_migrate_plan_free(&p);
}

static void run_grid(int dim, const int cells[3], int ncomp, int ghost, tsr_prec prec) {
  char what[96];
  snprintf(what, sizeof what, "%dD %dx%dx%d ncomp %d ghost %d %s", dim, cells[0], cells[1],
           cells[2], ncomp, ghost, prec == TSR_PREC_SINGLE ? "single" : "double");
  tsr_layout A, B, C, D;
  CHECK(tsr_partition(dim, cells, NULL, g_size, NULL, &A) == TSR_OK, "plain RCB");
  /* uneven weights: rank r counts 1 + 2r */
  double *w = malloc((size_t)g_size * sizeof *w);
  for (int r = 0; r < g_size; ++r) w[r] = 1.0 + 2.0 * r;
  tsr_part_opts o = {TSR_PART_RCB, ghost > 0 ? ghost : 1, {1, 1, 1}, w};
  CHECK(tsr_partition(dim, cells, NULL, g_size, &o, &B) == TSR_OK, "weighted RCB");
  /* a cost-weighted rebalance: a hot slab at low x and rank 0 slow */
  tsr_rebalance_costmap m;
  CHECK(tsr_rebalance_costmap_init(dim, cells, 300, &m) == TSR_OK, "cost map");
  tsr_box g = tsr_box_make(dim, cells), hot = g;
  hot.hi[0] = cells[0] / 3 + 1;
  tsr_rebalance_costmap_add_uniform(&m, &g, 1);
  tsr_rebalance_costmap_add_uniform(&m, &hot, 7);
  w[0] = 0.5;
  CHECK(tsr_rebalance_partition(&m, NULL, g_size, w, ghost > 0 ? ghost : 1, &C) == TSR_OK,
        "cost-weighted RCB");
  tsr_rebalance_costmap_free(&m);
  /* every rank takes the next rank's box: everything moves */
  CHECK(tsr_layout_copy(&A, &D) == TSR_OK, "copy");
  for (int r = 0; r < g_size; ++r) D.boxes[r] = A.boxes[(r + 1) % g_size];
  uint64_t seed = 1000 * (uint64_t)dim + 10 * (uint64_t)ncomp + (uint64_t)prec;
  migrate_and_check(&A, &B, ncomp, ghost, prec, seed, what);
  migrate_and_check(&B, &C, ncomp, ghost, prec, seed + 1, what);
  migrate_and_check(&C, &A, ncomp, ghost, prec, seed + 2, what);
  migrate_and_check(&A, &D, ncomp, ghost, prec, seed + 3, what);
  /* no-op: nothing travels, everything stays */
  tsr_migrate_plan p;
  CHECK(tsr_migrate_plan_build(&B, &B, g_rank, &p) == TSR_OK, "no-op plan");
  CHECK(p.nsend == 0 && p.nrecv == 0 && p.send_cells == 0 && p.recv_cells == 0 &&
            tsr_box_equal(&p.keep, &B.boxes[g_rank]), "%s: a no-op plan moves cells", what);
  tsr_migrate_plan_free(&p);
  migrate_and_check(&B, &B, ncomp, ghost, prec, seed + 4, what);
  free(w);
  tsr_layout_free(&A);
  tsr_layout_free(&B);
  tsr_layout_free(&C);
  tsr_layout_free(&D);
}

/* One round as the driver will run it: rank r measured its box's cells (work 1 per cell, 3
 * in a hot corner) at a rate of 1 + r, the figures are gathered, and each rank decides on
 * its own. Every rank must hold the same times, work, cost map and boxes. */
static void round_trip(void) {
  int cells[3] = {48, 40, 1};
  tsr_layout L, N;
  CHECK(tsr_partition(2, cells, NULL, g_size, NULL, &L) == TSR_OK, "partition");
  tsr_rebalance_costmap m;
  CHECK(tsr_rebalance_costmap_init(2, cells, 100, &m) == TSR_OK, "map");
  const tsr_box *mine = &L.boxes[g_rank];
  tsr_box hot = {{0, 0, 0}, {12, 10, 1}};
  int64_t n = tsr_box_cells(mine);
  uint32_t *w = malloc((size_t)n * sizeof *w);
  int64_t work = 0, at = 0;
  for (int j = mine->lo[1]; j < mine->hi[1]; ++j)
    for (int i = mine->lo[0]; i < mine->hi[0]; ++i, ++at) {
      w[at] = i < hot.hi[0] && j < hot.hi[1] ? 3 : 1;
      work += w[at];
    }
  tsr_rebalance_costmap_add_cells(&m, mine, w);
  free(w);
  double *time = malloc((size_t)g_size * sizeof *time);
  int64_t *works = malloc((size_t)g_size * sizeof *works);
  CHECK(tsr_rebalance_gather(MPI_COMM_WORLD, (double)work / (1.0 + g_rank), work, &m, time,
                             works) == TSR_OK, "gather");
  int64_t total = 0;
  for (int r = 0; r < g_size; ++r) {
    CHECK(time[r] * (1.0 + r) == (double)works[r], "rank %d's figures arrived wrong", r);
    total += works[r];
  }
  tsr_box g = tsr_box_make(2, cells);
  CHECK(tsr_rebalance_costmap_box_cost(&m, &g) == (double)total &&
            total == 48 * 40 + 2 * 12 * 10, "the summed cost map holds %g, the ranks %lld",
        tsr_rebalance_costmap_box_cost(&m, &g), (long long)total);
  tsr_rebalance_measure me = {.nranks = g_size, .nsteps = 1, .time = time, .work = works,
                              .map = &m};
  tsr_rebalance_opts o = {0.05, 100, 1, 0.0, 8};
  tsr_rebalance_decision d;
  CHECK(tsr_rebalance_decide(&L, &me, &o, NULL, &N, &d) == TSR_OK, "decide");
  CHECK(d.rebalance == (g_size > 1), "%d ranks: rebalance %d (%s)", g_size, d.rebalance,
        tsr_rebalance_reason_text(d.reason));
  /* the same decision everywhere: rank 0's boxes, cells moved and prediction, byte for byte,
   * against each rank's */
  int nb = 6 * N.nbox;
  int *mine_boxes = calloc((size_t)nb + 8, sizeof(int));
  int *root = calloc((size_t)nb + 8, sizeof(int));
  for (int b = 0; b < N.nbox; ++b) memcpy(mine_boxes + 6 * b, &N.boxes[b], sizeof(tsr_box));
  memcpy(mine_boxes + nb, &d.cells_moved, sizeof d.cells_moved);
  memcpy(mine_boxes + nb + 2, &d.predicted, sizeof d.predicted);
  memcpy(root, mine_boxes, ((size_t)nb + 8) * sizeof(int));
  MPI_Bcast(root, nb + 8, MPI_INT, 0, MPI_COMM_WORLD);
  int same = memcmp(root, mine_boxes, ((size_t)nb + 8) * sizeof(int)) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  CHECK(all, "the ranks decided differently");
  if (d.rebalance) {
    CHECK(d.predicted < 0.05 && d.predicted < d.imbalance, "predicted %g from %g", d.predicted,
          d.imbalance);
    migrate_and_check(&L, &N, 2, 1, TSR_PREC_DOUBLE, 99, "after a decision");
  }
  free(mine_boxes);
  free(root);
  free(time);
  free(works);
  tsr_rebalance_costmap_free(&m);
  tsr_layout_free(&N);
  tsr_layout_free(&L);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int c2[3] = {37, 29, 1}, c3[3] = {13, 11, 17};
  run_grid(2, c2, 1, 1, TSR_PREC_DOUBLE);
  run_grid(2, c2, 3, 2, TSR_PREC_SINGLE);
  run_grid(3, c3, 2, 1, TSR_PREC_DOUBLE);
  run_grid(3, c3, 1, 0, TSR_PREC_SINGLE);
  round_trip();
  /* plans of mismatched layouts are refused */
  tsr_layout A, B;
  CHECK(tsr_partition(2, c2, NULL, g_size, NULL, &A) == TSR_OK, "A");
  CHECK(tsr_partition(3, c3, NULL, g_size, NULL, &B) == TSR_OK, "B");
  tsr_migrate_plan p;
  CHECK(tsr_migrate_plan_build(&A, &B, g_rank, &p) == TSR_ERR_INPUT, "other grids");
  tsr_layout_free(&A);
  tsr_layout_free(&B);
  if (g_rank == 0) printf("test_migrate: %d ranks ok\n", g_size);
  MPI_Finalize();
  return 0;
}
