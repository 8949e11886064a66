/* Migration of device fields over NCCL, one GPU per rank (1 or 2 ranks): fields of random
 * bits move between partitions (plain RCB, weighted RCB, a cost-weighted rebalance, the boxes
 * rotated, the same layout) and the new device field, ghosts included, is bitwise what the
 * MPI migration of the same host field gives, whose every owned cell test_migrate checks
 * against its global index; so is a migration into a reused allocation full of stale bits (the
 * rebalancer's path: tsr_field_reshape, a second stream, buffers kept between migrations).
 * Misuse: a host field, a field on the wrong box, a destination that is the source. */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/migrate.h"
#include "decomp/rebalance.h"

static int g_rank, g_size;
#include "tests/check.h"

static ncclComm_t nccl;
static cudaStream_t stream, aux;
static tsr_migrate_bufs *kept; /* the buffers every migration into a reused field shares */

static uint64_t bits_of(const int cells[3], int i, int j, int k, int c, uint64_t seed) {
  uint64_t x = seed + ((((uint64_t)k * cells[1] + j) * cells[0] + i) * 8 + c);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Random bits in every cell of the allocation, ghosts included: migration must not carry
 * them (the new field's ghosts stay zero). */
static void fill(tsr_field *f, const int cells[3], uint64_t seed) {
  const tsr_box *g = &f->gbox;
  size_t es = tsr_prec_size(f->prec);
  for (int c = 0; c < f->ncomp; ++c)
    for (int k = g->lo[2]; k < g->hi[2]; ++k)
      for (int j = g->lo[1]; j < g->hi[1]; ++j)
        for (int i = g->lo[0]; i < g->hi[0]; ++i) {
          uint64_t h = bits_of(cells, i + 2, j + 2, k + 2, c, seed);
          memcpy((char *)f->data + es * (size_t)tsr_field_at(f, c, i, j, k), &h, es);
        }
}

static void one(const tsr_layout *A, const tsr_layout *B, int ncomp, int ghost, tsr_prec prec,
                uint64_t seed) {
  const int *cells = A->global.hi;
  tsr_migrate_plan p;
  CHECK(tsr_migrate_plan_build(A, B, g_rank, &p) == TSR_OK, "plan");
  tsr_field *h = NULL, *hn = NULL, *d = NULL, *dn = NULL, *back = NULL;
  CHECK(tsr_field_create_as(A->dim, &A->boxes[g_rank], ghost, ncomp, TSR_MEM_HOST, prec, &h) ==
            TSR_OK, "host field");
  CHECK(tsr_field_create_as(A->dim, &A->boxes[g_rank], ghost, ncomp, TSR_MEM_DEVICE, prec,
                            &d) == TSR_OK, "device field");
  fill(h, cells, seed);
  CHECK(cudaMemcpy(d->data, h->data, tsr_field_bytes(h), cudaMemcpyHostToDevice) ==
            cudaSuccess, "upload");
  /* a pageable copy may return before its DMA lands; the migration's stream does not wait */
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "upload landed");
  CHECK(tsr_migrate_field(&p, MPI_COMM_WORLD, h, &hn) == TSR_OK, "MPI migration");
  CHECK(tsr_migrate_field_nccl(&p, nccl, stream, d, &dn) == TSR_OK, "NCCL migration");
  CHECK(dn->mem == TSR_MEM_DEVICE && tsr_box_equal(&dn->box, &B->boxes[g_rank]), "new box");
  CHECK(tsr_field_create_as(B->dim, &B->boxes[g_rank], ghost, ncomp, TSR_MEM_HOST, prec,
                            &back) == TSR_OK, "download field");
  CHECK(cudaMemcpy(back->data, dn->data, tsr_field_bytes(back), cudaMemcpyDeviceToHost) ==
            cudaSuccess, "download");
  int same = memcmp(back->data, hn->data, tsr_field_bytes(hn)) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  CHECK(all, "%dD ncomp %d ghost %d prec %d: NCCL and MPI migrations differ", A->dim, ncomp,
        ghost, (int)prec);
  /* into a reused field: an allocation over the whole grid full of stale bits, re-shaped onto
   * the new box (the rebalancer's spare slot), with the kept cells copied on a second stream
   * and the buffers kept from the previous migrations; twice, the second into the same field */
  tsr_field *r = NULL;
  CHECK(tsr_field_create_as(A->dim, &A->global, ghost, ncomp, TSR_MEM_DEVICE, prec, &r) ==
            TSR_OK, "spare field");
  for (int pass = 0; pass < 2; ++pass) {
    CHECK(cudaMemset(r->data, 0x5a, r->cap) == cudaSuccess, "stale bits");
    CHECK(tsr_field_reshape(r, &B->boxes[g_rank]) == TSR_OK, "reshape");
    CHECK(tsr_migrate_field_nccl_into(&p, nccl, stream, aux, d, r, &kept) == TSR_OK,
          "NCCL migration into a reused field");
    CHECK(cudaMemcpy(back->data, r->data, tsr_field_bytes(back), cudaMemcpyDeviceToHost) ==
              cudaSuccess, "download");
    same = memcmp(back->data, hn->data, tsr_field_bytes(hn)) == 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    CHECK(all, "%dD ncomp %d ghost %d prec %d pass %d: the migration into a reused field "
          "differs from a new one", A->dim, ncomp, ghost, (int)prec, pass);
  }
  CHECK(tsr_migrate_field_nccl_into(&p, nccl, stream, aux, d, d, &kept) == TSR_ERR_STATE,
        "a destination on the old box (the source itself) was taken");
  tsr_field_destroy(&r);
  tsr_field *none = h;
  CHECK(tsr_migrate_field_nccl(&p, nccl, stream, h, &none) == TSR_ERR_STATE && !none,
        "a host field was taken");
  tsr_field_destroy(&h);
  tsr_field_destroy(&hn);
  tsr_field_destroy(&d);
  tsr_field_destroy(&dn);
  tsr_field_destroy(&back);
  tsr_migrate_plan_free(&p);
}

static void grid(int dim, const int cells[3]) {
  tsr_layout A, B, C, D;
  CHECK(tsr_partition(dim, cells, NULL, g_size, NULL, &A) == TSR_OK, "plain");
  double w[2] = {1.0, 3.0};
  tsr_part_opts o = {TSR_PART_RCB, 2, {1, 1, 1}, w};
  CHECK(tsr_partition(dim, cells, NULL, g_size, &o, &B) == TSR_OK, "weighted");
  tsr_rebalance_costmap m;
  CHECK(tsr_rebalance_costmap_init(dim, cells, 200, &m) == TSR_OK, "map");
  tsr_box g = tsr_box_make(dim, cells), hot = g;
  hot.hi[0] = cells[0] / 4 + 1;
  tsr_rebalance_costmap_add_uniform(&m, &g, 1);
  tsr_rebalance_costmap_add_uniform(&m, &hot, 5);
  CHECK(tsr_rebalance_partition(&m, NULL, g_size, NULL, 2, &C) == TSR_OK, "cost-weighted");
  tsr_rebalance_costmap_free(&m);
  CHECK(tsr_layout_copy(&A, &D) == TSR_OK, "copy");
  for (int r = 0; r < g_size; ++r) D.boxes[r] = A.boxes[(r + 1) % g_size];
  for (int prec = 0; prec < 2; ++prec)
    for (int ncomp = 1; ncomp <= 2; ++ncomp) {
      uint64_t s = 100 * (uint64_t)dim + 10 * (uint64_t)prec + (uint64_t)ncomp;
      one(&A, &B, ncomp, 2, (tsr_prec)prec, s);
      one(&B, &C, ncomp, 1, (tsr_prec)prec, s + 1);
      one(&C, &A, ncomp, 2, (tsr_prec)prec, s + 2);
      one(&A, &D, ncomp, 1, (tsr_prec)prec, s + 3);
      one(&B, &B, ncomp, 1, (tsr_prec)prec, s + 4);
    }
  tsr_layout_free(&A);
  tsr_layout_free(&B);
  tsr_layout_free(&C);
  tsr_layout_free(&D);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int count = 0, short_of = cudaGetDeviceCount(&count) != cudaSuccess || count < g_size, any;
  MPI_Allreduce(&short_of, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    if (g_rank == 0)
      fprintf(stderr, "NCCL migration test: %d ranks but %d GPU(s); failing\n", g_size, count);
    MPI_Finalize();
    return 1;
  }
  CHECK(g_size <= 2, "the test runs on 1 or 2 ranks, not %d", g_size);
  CHECK(cudaSetDevice(g_rank % count) == cudaSuccess, "device");
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (g_rank == 0) CHECK(ncclGetUniqueId(&id) == ncclSuccess, "NCCL id");
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  CHECK(ncclCommInitRank(&nccl, g_size, id, g_rank) == ncclSuccess, "NCCL init");
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  CHECK(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking) == cudaSuccess, "stream");
  int c2[3] = {37, 29, 1}, c3[3] = {13, 11, 17}, big[3] = {256, 128, 96};
  grid(2, c2);
  grid(3, c3);
  grid(3, big);
  CHECK(ncclCommFinalize(nccl) == ncclSuccess, "NCCL finalize");
  CHECK(ncclCommDestroy(nccl) == ncclSuccess, "NCCL destroy");
  tsr_migrate_bufs_free(&kept);
  CHECK(!kept, "the kept buffers' handle was not cleared");
  cudaStreamDestroy(stream);
  cudaStreamDestroy(aux);
  if (g_rank == 0) printf("NCCL migration on %d ranks: ok\n", g_size);
  MPI_Finalize();
  return 0;
}
