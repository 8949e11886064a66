/* tsr_stage_cuda against tsr_stage_host, bit for bit: every model x stage kind x dimension x
 * source / no source, on odd-sized boxes at a non-zero global offset, over the whole box, the
 * interior, each shell slab and a few thin or off-centre boxes, with the default launch shape
 * with a tiny one (many blocks and many z / y chunks per column) and, in 3D, with shared-memory
 * tiles marching 3 planes (partial tiles and chunks). Cells outside the region
 * must keep their poison (out) or their old value (acc) on both sides. Also: host fields and
 * missing fields are refused with TSR_ERR_STATE.
 *
 * Every rank does the same work on device rank % device count. Exits non-zero on the first
 * failure (MPI_Abort). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/stage.h"

static int g_rank;

#include "tests/check.h"

static const char *kind_name[] = {"euler", "ssp2_2", "ssp3_2", "ssp3_3",
                                  "rk4_1", "rk4_2",  "rk4_3",  "rk4_4"};

/* xorshift64*: reproducible and fresh for every case */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) { return test_uniform(&g_rng); }

/* The precision of the fields under test (both are checked). */
static tsr_prec g_prec = TSR_PREC_DOUBLE;

static void fill_random(tsr_field *f) {
  size_t n = (size_t)f->ncomp * (size_t)f->scomp;
  for (size_t i = 0; i < n; ++i) tsr_field_set(f, (ptrdiff_t)i, 0.5 + uniform());
}

/* Quiet NaNs with a payload no arithmetic produces, so an untouched cell is recognisable. */
static const uint64_t poison64 = 0x7ff8dead0000beefull;
static const uint32_t poison32 = 0x7fc0beefu;
static const void *poison(tsr_prec p) {
  return p == TSR_PREC_SINGLE ? (const void *)&poison32 : (const void *)&poison64;
}

static size_t field_bytes(const tsr_field *f) { return tsr_field_bytes(f); }

/* Address of value at of f (host). */
static const void *val(const tsr_field *f, ptrdiff_t at) {
  return (const char *)f->data + (size_t)at * tsr_prec_size(f->prec);
}

static void upload(tsr_field *d, const tsr_field *h) {
  CUDA_OK(cudaMemcpy(d->data, h->data, field_bytes(h), cudaMemcpyHostToDevice));
}
static void download(tsr_field *h, const tsr_field *d) {
  CUDA_OK(cudaMemcpy(h->data, d->data, field_bytes(d), cudaMemcpyDeviceToHost));
}

static int inside(const tsr_box *r, int i, int j, int k) {
  return i >= r->lo[0] && i < r->hi[0] && j >= r->lo[1] && j < r->hi[1] && k >= r->lo[2] &&
         k < r->hi[2];
}

/* The regions: whole box, interior, the shell slabs around it (as the solver splits them),
 * and boxes one cell thin or off-centre. Returns their number. */
static int regions(int dim, const tsr_box *box, tsr_box *out) {
  int n = 0;
  out[n++] = *box;
  tsr_box rest = tsr_box_grow(box, dim, -1);
  out[n++] = rest;
  rest = *box;
  for (int d = 0; d < dim; ++d) {
    tsr_box lo = rest, hi = rest;
    lo.hi[d] = lo.lo[d] + 1;
    hi.lo[d] = hi.hi[d] - 1;
    out[n++] = lo;
    out[n++] = hi;
    rest.lo[d] += 1;
    rest.hi[d] -= 1;
  }
  tsr_box off = *box; /* off-centre, odd sizes */
  for (int d = 0; d < dim; ++d) {
    off.lo[d] = box->lo[d] + 2 + d;
    off.hi[d] = box->hi[d] - 1 - (d == 0 ? 5 : 1);
  }
  out[n++] = off;
  tsr_box one = *box; /* a single cell */
  for (int d = 0; d < dim; ++d) {
    one.lo[d] = box->lo[d] + 3;
    one.hi[d] = one.lo[d] + 1;
  }
  out[n++] = one;
  tsr_box line = *box; /* a single column along the last axis */
  line.lo[0] = box->lo[0] + 4;
  line.hi[0] = line.lo[0] + 1;
  out[n++] = line;
  return n;
}

typedef struct {
  tsr_field *in, *base, *acc, *src, *out;
} field_set;

static void fields_create(field_set *s, int dim, const tsr_box *box, int ncomp, tsr_mem mem) {
  tsr_field **all[] = {&s->in, &s->base, &s->acc, &s->src, &s->out};
  for (int i = 0; i < 5; ++i)
    CHECK(tsr_field_create_as(dim, box, 1, ncomp, mem, g_prec, all[i]) == TSR_OK, "field create");
}

static void fields_destroy(field_set *s) {
  tsr_field_destroy(&s->in);
  tsr_field_destroy(&s->base);
  tsr_field_destroy(&s->acc);
  tsr_field_destroy(&s->src);
  tsr_field_destroy(&s->out);
}

/* Parameters that exercise every term (the defaults of some models zero a velocity). */
static void params(int model, double *p) {
  const tsr_model_info *mi = &tsr_models[model];
  for (int i = 0; i < mi->nparam; ++i) p[i] = mi->param[i].def;
  if (model == TSR_MODEL_ADVECTION_DIFFUSION) {
    p[0] = 0.3;
    p[1] = 1.25;
    p[2] = -0.7;
    p[3] = 0.45;
  }
  if (model == TSR_MODEL_GRAY_SCOTT) {
    p[0] = 0.2;
    p[1] = 0.1;
  }
  if (model == TSR_MODEL_ALLEN_CAHN) {
    p[0] = 0.3;
    p[1] = 0.7;
  }
}

/* One model, dimension and launch shape: every kind, with and without source, every region.
 * Returns the number of (kind, source, region) cases checked. */
static int check_model_dim(int model, int dim, const char *shape_name) {
  const int ncomp = tsr_models[model].ncomp;
  const int lo[3] = {4, -3, 7}; /* global offset: indices are not offsets */
  const int len2[3] = {37, 23, 1}, len3[3] = {70, 37, 6}; /* 3D: more than a tile (64 x 16) */
  tsr_box box = {{0, 0, 0}, {1, 1, 1}};
  for (int d = 0; d < dim; ++d) {
    box.lo[d] = lo[d];
    box.hi[d] = lo[d] + (dim == 2 ? len2[d] : len3[d]);
  }
  field_set h, g, hh; /* host reference, device, device results brought back */
  fields_create(&h, dim, &box, ncomp, TSR_MEM_HOST);
  fields_create(&hh, dim, &box, ncomp, TSR_MEM_HOST);
  fields_create(&g, dim, &box, ncomp, TSR_MEM_DEVICE);
  tsr_field *acc0 = NULL;
  CHECK(tsr_field_create_as(dim, &box, 1, ncomp, TSR_MEM_HOST, g_prec, &acc0) == TSR_OK, "acc0");

  double p[TSR_MAX_MODEL_PARAMS];
  params(model, p);
  const double hx[3] = {0.11, 0.13, 0.17};
  tsr_stage_desc d = {model, ncomp, TSR_STAGE_EULER, 0.0123, {0}};
  tsr_stage_coef_init(&d.coef, model, p, hx, h.in);

  tsr_box rg[16];
  const int nrg = regions(dim, &box, rg);
  const size_t n = (size_t)ncomp * (size_t)h.in->scomp;
  const size_t es = tsr_prec_size(g_prec);
  const void *nan = poison(g_prec);
  int cases = 0;
  for (int kind = TSR_STAGE_EULER; kind <= TSR_STAGE_RK4_4; ++kind)
    for (int has_src = 0; has_src <= 1; ++has_src)
      for (int r = 0; r < nrg; ++r) {
        d.kind = (tsr_stage_kind)kind;
        fill_random(h.in);
        fill_random(h.base);
        fill_random(h.acc);
        fill_random(h.src);
        memcpy(acc0->data, h.acc->data, n * es);
        for (size_t i = 0; i < n; ++i) memcpy((char *)h.out->data + i * es, nan, es);
        upload(g.in, h.in);
        upload(g.base, h.base);
        upload(g.acc, h.acc);
        upload(g.src, h.src);
        upload(g.out, h.out);

        const int ub = tsr_stage_uses_base(kind), ua = tsr_stage_uses_acc(kind);
        const tsr_field *hb = ub ? h.base : NULL, *gb = ub ? g.base : NULL;
        tsr_field *ha = ua ? h.acc : NULL, *ga = ua ? g.acc : NULL;
        const tsr_field *hs = has_src ? h.src : NULL, *gs = has_src ? g.src : NULL;
        tsr_stage_host(&d, &rg[r], h.in, hb, ha, hs, h.out);
        CHECK(tsr_stage_cuda(&d, &rg[r], g.in, gb, ga, gs, g.out, 0) == TSR_OK, "stage_cuda");
        CUDA_OK(cudaDeviceSynchronize());
        download(hh.out, g.out);
        download(hh.acc, g.acc);

        for (int c = 0; c < ncomp; ++c)
          for (int k = h.in->gbox.lo[2]; k < h.in->gbox.hi[2]; ++k)
            for (int j = h.in->gbox.lo[1]; j < h.in->gbox.hi[1]; ++j)
              for (int i = h.in->gbox.lo[0]; i < h.in->gbox.hi[0]; ++i) {
                ptrdiff_t at = tsr_field_at(h.in, c, i, j, k);
                int in_rg = inside(&rg[r], i, j, k);
                const void *want_out = in_rg ? val(h.out, at) : nan;
                const tsr_field *acc_src = in_rg ? h.acc : acc0;
                CHECK(memcmp(val(hh.out, at), want_out, es) == 0,
                      "%s %s %dD %s src %d %s region %d [%d,%d)x[%d,%d)x[%d,%d): out of cell "
                      "(%d,%d,%d) comp %d: GPU %.17g, host %.17g%s",
                      g_prec == TSR_PREC_SINGLE ? "single" : "double",
                      tsr_models[model].name, dim, kind_name[kind], has_src, shape_name, r,
                      rg[r].lo[0], rg[r].hi[0], rg[r].lo[1], rg[r].hi[1], rg[r].lo[2],
                      rg[r].hi[2], i, j, k, c, tsr_field_get(hh.out, at),
                      in_rg ? tsr_field_get(h.out, at) : NAN,
                      in_rg ? "" : " (outside the region: must stay poisoned)");
                CHECK(memcmp(val(hh.acc, at), val(acc_src, at), es) == 0,
                      "%s %dD %s src %d %s region %d: acc of cell (%d,%d,%d) comp %d: GPU "
                      "%.17g, expected %.17g%s",
                      tsr_models[model].name, dim, kind_name[kind], has_src, shape_name, r, i,
                      j, k, c, tsr_field_get(hh.acc, at), tsr_field_get(acc_src, at),
                      in_rg ? "" : " (outside the region)");
                /* the host reference itself leaves outside cells alone */
                if (!in_rg) CHECK(memcmp(val(h.out, at), nan, es) == 0, "host");
              }
        cases++;
      }
  tsr_field_destroy(&acc0);
  fields_destroy(&h);
  fields_destroy(&hh);
  fields_destroy(&g);
  return cases;
}

/* Host fields and missing fields are API misuse: TSR_ERR_STATE, nothing launched. */
static void check_misuse(void) {
  int cells[3] = {8, 8, 1};
  tsr_box box = tsr_box_make(2, cells);
  tsr_field *hin = NULL, *gin = NULL, *gout = NULL;
  CHECK(tsr_field_create(2, &box, 1, 1, &hin) == TSR_OK, "create");
  CHECK(tsr_field_create_in(2, &box, 1, 1, TSR_MEM_DEVICE, &gin) == TSR_OK, "create");
  CHECK(tsr_field_create_in(2, &box, 1, 1, TSR_MEM_DEVICE, &gout) == TSR_OK, "create");
  double kappa = 1.0, hx[3] = {0.1, 0.1, 0.1};
  tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.001, {0}};
  tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, &kappa, hx, gin);
  CHECK(tsr_stage_cuda(&d, &box, hin, NULL, NULL, NULL, gout, 0) == TSR_ERR_STATE, "host in");
  CHECK(strstr(tsr_err_message(), "device") != NULL, "message names device fields");
  d.kind = TSR_STAGE_SSP2_2;
  CHECK(tsr_stage_cuda(&d, &box, gin, NULL, NULL, NULL, gout, 0) == TSR_ERR_STATE, "no base");
  d.kind = TSR_STAGE_RK4_2;
  CHECK(tsr_stage_cuda(&d, &box, gin, gin, NULL, NULL, gout, 0) == TSR_ERR_STATE, "no acc");
  d.kind = TSR_STAGE_EULER;
  CHECK(tsr_stage_cuda(&d, &box, gin, NULL, NULL, NULL, gin, 0) == TSR_ERR_STATE, "out == in");
  tsr_box empty = box;
  empty.hi[0] = empty.lo[0];
  CHECK(tsr_stage_cuda(&d, &empty, gin, NULL, NULL, NULL, gout, 0) == TSR_OK, "empty region");
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaGetLastError());
  tsr_field_destroy(&hin);
  tsr_field_destroy(&gin);
  tsr_field_destroy(&gout);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  CHECK(ndev > 0, "no CUDA device");
  CUDA_OK(cudaSetDevice(g_rank % ndev));

  check_misuse();
  /* the default shape, a tiny one (register kernel, blocks of 32 x 2, chunks of 3 (3D) or 5
   * (2D) rows, so that block edges and chunk edges cross every region) and shared-memory tiles
   * on every 3D region, marching 3 planes, with register rings and with asynchronous copies */
  const tsr_stage_cuda_tuning shapes[4] = {{0, 0, 0, 0, 0, 0, 0},
                                           {32, 2, 3, 32, 5, -1, 0},
                                           {0, 0, 0, 0, 0, 1, 3},
                                           {0, 0, 0, 0, 0, 2, 3}};
  const char *shape_name[4] = {"default shape", "tiny shape", "tiles of 3 planes",
                               "async tiles of 3 planes"};
  for (int prec = 0; prec < 2; ++prec)
    for (int model = 0; model < TSR_MODEL_COUNT; ++model) {
      if (!(tsr_models[model].methods & TSR_METHODS_EXPLICIT)) continue; /* no explicit stage */
      g_prec = (tsr_prec)prec;
      int cases = 0;
      for (int t = 0; t < 4; ++t) {
        tsr_stage_cuda_set_tuning(&shapes[t]);
        for (int dim = t >= 2 ? 3 : 2; dim <= 3; ++dim)
          cases += check_model_dim(model, dim, shape_name[t]);
      }
      if (g_rank == 0)
        printf("test_stage: %s %-20s %4d cases (8 kinds x src/none x 2D/3D x regions x 2 "
               "shapes, 3D tiles): GPU == host bitwise, outside cells untouched\n",
               prec ? "single" : "double", tsr_models[model].name, cases);
    }
  tsr_stage_cuda_set_tuning(NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) printf("test_stage: OK\n");
  MPI_Finalize();
  return 0;
}
