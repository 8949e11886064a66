/* tsr_stage_cuda_batch and tsr_bc_apply_cuda_batch against one tsr_stage_cuda /
 * tsr_bc_apply_cuda call per field, bit for bit (parareal's slices sharing a GPU step in
 * batches: solver/parareal/batch.h): every model with an explicit stage, every stage kind,
 * 2D and 3D, with and without a source, both precisions, over the whole box and an
 * off-centre region, for 3 fields and for 35 (past TSR_STAGE_BATCH_MAX: two launches). Each
 * field gets its own random values; the outputs start poisoned alike, so a cell the batch
 * writes and the single call does not (or the reverse) differs. Also: fields of different
 * shapes are refused with TSR_ERR_STATE.
 *
 * Every rank does the same work on device rank % device count. Exits non-zero on the first
 * failure (MPI_Abort). */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boundary.h"
#include "kernels/stage.h"

static int g_rank;

#include "tests/check.h"

#define NMAX 35

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static double uniform(void) { return test_uniform(&g_rng); }

static tsr_field *dev(int dim, const tsr_box *box, int ncomp, tsr_prec prec) {
  tsr_field *f = NULL;
  CHECK(tsr_field_create_as(dim, box, 1, ncomp, TSR_MEM_DEVICE, prec, &f) == TSR_OK, "create");
  return f;
}

/* Random values in every cell of f's allocation (ghosts too), through a host twin. */
static void randomize(tsr_field *f) {
  tsr_field *h = NULL;
  CHECK(tsr_field_create_as(f->dim, &f->box, f->ghost, f->ncomp, TSR_MEM_HOST, f->prec, &h) ==
            TSR_OK, "host twin");
  const size_t n = (size_t)f->ncomp * (size_t)f->scomp;
  for (size_t i = 0; i < n; ++i) tsr_field_set(h, (ptrdiff_t)i, 0.5 + uniform());
  CUDA_OK(cudaMemcpy(f->data, h->data, tsr_field_bytes(f), cudaMemcpyHostToDevice));
  tsr_field_destroy(&h);
}

static void copy(tsr_field *dst, const tsr_field *src) {
  CUDA_OK(cudaMemcpy(dst->data, src->data, tsr_field_bytes(src), cudaMemcpyDeviceToDevice));
}

static int same(const tsr_field *a, const tsr_field *b) {
  const size_t n = tsr_field_bytes(a);
  char *x = malloc(n), *y = malloc(n);
  CHECK(x && y, "memory");
  CUDA_OK(cudaMemcpy(x, a->data, n, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(y, b->data, n, cudaMemcpyDeviceToHost));
  const int eq = memcmp(x, y, n) == 0;
  free(x), free(y);
  return eq;
}

static void params(int model, double *p) {
  const tsr_model_info *mi = &tsr_models[model];
  for (int i = 0; i < mi->nparam; ++i) p[i] = mi->param[i].def;
  if (model == TSR_MODEL_ADVECTION_DIFFUSION) { /* the defaults zero the velocity */
    p[0] = 0.3, p[1] = 1.25, p[2] = -0.7, p[3] = 0.45;
  }
}

/* One model, dimension and precision: every kind, source or not, two regions, n = 3 and 35. */
static int check_model(int model, int dim, tsr_prec prec) {
  const int ncomp = tsr_models[model].ncomp;
  const tsr_box box = dim == 3 ? (tsr_box){{3, 2, 1}, {3 + 19, 2 + 13, 1 + 11}}
                               : (tsr_box){{3, 2, 0}, {3 + 37, 2 + 21, 1}};
  tsr_box part = box; /* off-centre, odd */
  part.lo[0] += 2, part.hi[1] -= 3;
  if (dim == 3) part.lo[2] += 1;
  tsr_field *in[NMAX], *base[NMAX], *src[NMAX], *acc[NMAX], *acc1[NMAX], *out[NMAX], *out1[NMAX];
  for (int k = 0; k < NMAX; ++k) {
    in[k] = dev(dim, &box, ncomp, prec), base[k] = dev(dim, &box, ncomp, prec);
    src[k] = dev(dim, &box, ncomp, prec), acc[k] = dev(dim, &box, ncomp, prec);
    acc1[k] = dev(dim, &box, ncomp, prec), out[k] = dev(dim, &box, ncomp, prec);
    out1[k] = dev(dim, &box, ncomp, prec);
  }
  double p[TSR_MAX_MODEL_PARAMS];
  params(model, p);
  const double hx[3] = {0.11, 0.13, 0.17};
  tsr_stage_desc d = {model, ncomp, TSR_STAGE_EULER, 0.0123, {0}};
  tsr_stage_coef_init(&d.coef, model, p, hx, in[0]);
  int cases = 0;
  for (int kind = TSR_STAGE_EULER; kind <= TSR_STAGE_RK4_4; ++kind)
    for (int with_src = 0; with_src < 2; ++with_src)
      for (int r = 0; r < 2; ++r)
        for (int n = 3; n <= NMAX; n += NMAX - 3) {
          d.kind = (tsr_stage_kind)kind;
          const tsr_box *rg = r ? &part : &box;
          for (int k = 0; k < n; ++k) {
            randomize(in[k]), randomize(base[k]), randomize(src[k]), randomize(acc[k]);
            randomize(out[k]);
            copy(acc1[k], acc[k]);
            copy(out1[k], out[k]);
            CHECK(tsr_stage_cuda(&d, rg, in[k], base[k], acc1[k], with_src ? src[k] : NULL,
                                 out1[k], 0) == TSR_OK, "stage_cuda");
          }
          CHECK(tsr_stage_cuda_batch(&d, rg, n, (const tsr_field *const *)in,
                                     (const tsr_field *const *)base, acc,
                                     with_src ? (const tsr_field *const *)src : NULL, out,
                                     0) == TSR_OK, "stage_cuda_batch");
          CUDA_OK(cudaDeviceSynchronize());
          for (int k = 0; k < n; ++k) {
            CHECK(same(out[k], out1[k]), "model %s dim %d %s kind %d src %d region %d n %d: "
                  "field %d's output differs from the single launch's", tsr_models[model].name,
                  dim, prec == TSR_PREC_SINGLE ? "single" : "double", kind, with_src, r, n, k);
            CHECK(same(acc[k], acc1[k]), "model %s kind %d n %d: field %d's accumulator differs",
                  tsr_models[model].name, kind, n, k);
          }
          ++cases;
        }
  /* the boundary's batch: two faces (Dirichlet at x lo, Neumann at y hi), random values */
  tsr_bc_face fc[2];
  memset(fc, 0, sizeof fc);
  const int len[3] = {tsr_box_len(&box, 0), tsr_box_len(&box, 1), tsr_box_len(&box, 2)};
  fc[0] = (tsr_bc_face){0, 0, TSR_GHOST_DIRICHLET, 1, 2, len[1], len[2], 0, 0, 1, 0.11};
  fc[1] = (tsr_bc_face){1, 1, TSR_GHOST_NEUMANN, 0, 2, len[0], len[2], 0, 0, 1, 0.13};
  double *vals[2];
  for (int i = 0; i < 2; ++i) {
    const size_t nv = (size_t)ncomp * (size_t)fc[i].n1 * (size_t)fc[i].n2;
    double *h = malloc(nv * sizeof *h);
    CHECK(h, "memory");
    for (size_t v = 0; v < nv; ++v) h[v] = uniform() - 0.5;
    CUDA_OK(cudaMalloc((void **)&vals[i], nv * sizeof *h));
    CUDA_OK(cudaMemcpy(vals[i], h, nv * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
  }
  const tsr_bc_face *faces[2] = {&fc[0], &fc[1]};
  for (int k = 0; k < NMAX; ++k) {
    randomize(out[k]);
    copy(out1[k], out[k]);
    CHECK(tsr_bc_apply_cuda(2, faces, (const double *const *)vals, out1[k], TSR_BC_WHOLE, 0) ==
              TSR_OK, "bc_apply_cuda");
  }
  CHECK(tsr_bc_apply_cuda_batch(2, faces, (const double *const *)vals, NMAX, out, TSR_BC_WHOLE,
                                0) == TSR_OK, "bc_apply_cuda_batch");
  CUDA_OK(cudaDeviceSynchronize());
  for (int k = 0; k < NMAX; ++k)
    CHECK(same(out[k], out1[k]), "model %s dim %d: field %d's boundary ghosts differ",
          tsr_models[model].name, dim, k);
  /* misuse: a field of another box */
  tsr_box other = box;
  other.hi[0] += 1;
  tsr_field *odd = dev(dim, &other, ncomp, prec);
  tsr_field *mixed[2] = {in[0], odd};
  d.kind = TSR_STAGE_EULER;
  CHECK(tsr_stage_cuda_batch(&d, &box, 2, (const tsr_field *const *)mixed, NULL, NULL, NULL, out,
                             0) == TSR_ERR_STATE, "fields of two shapes refused");
  CHECK(tsr_bc_apply_cuda_batch(2, faces, (const double *const *)vals, 2, mixed, TSR_BC_WHOLE,
                                0) == TSR_ERR_STATE, "fields of two shapes refused (boundary)");
  tsr_err_clear();
  tsr_field_destroy(&odd);
  for (int i = 0; i < 2; ++i) cudaFree(vals[i]);
  for (int k = 0; k < NMAX; ++k) {
    tsr_field_destroy(&in[k]), tsr_field_destroy(&base[k]), tsr_field_destroy(&src[k]);
    tsr_field_destroy(&acc[k]), tsr_field_destroy(&acc1[k]), tsr_field_destroy(&out[k]);
    tsr_field_destroy(&out1[k]);
  }
  return cases;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  CHECK(ndev > 0, "no CUDA device");
  CUDA_OK(cudaSetDevice(g_rank % ndev));
  int cases = 0;
  for (int model = 0; model < TSR_MODEL_COUNT; ++model) {
    if (!(tsr_models[model].methods & TSR_METHODS_EXPLICIT)) continue;
    for (int dim = 2; dim <= 3; ++dim) {
      cases += check_model(model, dim, TSR_PREC_DOUBLE);
      cases += check_model(model, dim, TSR_PREC_SINGLE);
    }
  }
  if (g_rank == 0) printf("test_stage_batch: %d cases, every field bitwise the single launch's\n", cases);
  MPI_Finalize();
  return 0;
}
