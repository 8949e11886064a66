/* tsr_steps_cuda (time tiles) against tsr_steps_host, bit for bit: every model with an
 * explicit stage, fp64 and fp32, 3 and 5 steps a pass, with and without a source, on 2D boxes
 * at a non-zero offset that take several tiles and several row chunks, with their faces all
 * exchanged, all physical (Dirichlet and Neumann, values that vary along the face), and
 * mixed, over regions that are the box and the box grown into the exchanged ghosts; the same
 * on 3D boxes (1, 3 and 5 steps a pass) of several tiles and z chunks, and on boxes thinner
 * than a tile along one axis or two planes thick between z faces. SSP-RK2, SSP-RK3 and RK4
 * passes (one step, two to four levels, the base and RK4's running sums on chip) likewise, 2D
 * and 3D, every model with such a pass. Cells of out outside the region must keep their
 * poison. Also: even and out-of-range step counts, passes of these schemes of other than one
 * step, single stages of them and in == out are refused with TSR_ERR_STATE, and
 * tsr_steps_cuda_max names odd counts in 2D and 3D only (one step for the schemes of several
 * stages).
 * tsr_steps_host is itself checked against stage-by-stage steps (tests/unit/test_steps.c),
 * and tsr_stage_cuda against tsr_stage_host (test_stage.c).
 *
 * Every rank does the same work on device rank % device count. Exits non-zero on the first
 * failure (MPI_Abort). */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/steps.h"
#include "tests/support/steps_faces.h"

static int g_rank;

#include "tests/check.h"

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static double uniform(void) { return test_uniform(&g_rng); }

static const uint64_t poison64 = 0x7ff8dead0000beefull;
static const uint32_t poison32 = 0x7fc0beefu;

static void params(int model, double *p) {
  const tsr_model_info *mi = &tsr_models[model];
  for (int i = 0; i < mi->nparam; ++i) p[i] = mi->param[i].def;
  if (model == TSR_MODEL_ADVECTION_DIFFUSION) {
    p[0] = 0.3;
    p[1] = 1.25;
    p[2] = -0.7;
  }
  if (model == TSR_MODEL_GRAY_SCOTT) {
    p[0] = 0.2;
    p[1] = 0.1;
  }
}

/* Face configurations: bit f set = face f (x lo, x hi, y lo, y hi, z lo, z hi) on the physical
 * boundary. 2D takes the first five, 3D all. */
static const int g_faces[] = {0x0, 0xf, 0x3, 0x4, 0x9, 0x3f, 0x30, 0x0d, 0x22, 0x15};
#define NFACES2 5
#define NFACES3 ((int)(sizeof g_faces / sizeof *g_faces))

/* One case on box (dim 2 or 3): m steps of the scheme whose last stage is `last`. */
static void check_case(int dim, const tsr_box *boxp, int model, tsr_prec prec, int m,
                       tsr_stage_kind last, int has_src, int faces, int grow) {
  /* the ghosts only as deep as tsr_steps_fits asks (one layer where every side is a face):
   * compute-sanitizer (memcheck) sees any read past them */
  const int ncomp = tsr_models[model].ncomp,
            levels = m * tsr_steps_stages(last),
            ghost = faces == (1 << 2 * dim) - 1 ? 1 : grow + levels;
  const tsr_box box = *boxp;
  tsr_field *hin, *hsrc, *hout, *got, *din, *dsrc, *dout;
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &hin) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &hsrc) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &hout) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &got) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_DEVICE, prec, &din) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_DEVICE, prec, &dsrc) == TSR_OK, "f");
  CHECK(tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_DEVICE, prec, &dout) == TSR_OK, "f");
  const size_t n = (size_t)ncomp * (size_t)hin->scomp, es = tsr_prec_size(prec);
  for (size_t i = 0; i < n; ++i) {
    tsr_field_set(hin, (ptrdiff_t)i, 0.5 + uniform());
    tsr_field_set(hsrc, (ptrdiff_t)i, 0.1 * (uniform() - 0.5));
    memcpy((char *)hout->data + i * es, prec == TSR_PREC_SINGLE ? (const void *)&poison32
                                                                 : (const void *)&poison64, es);
  }
  /* the region: the box grown by `grow` on its exchanged faces */
  tsr_box rg = box;
  for (int f = 0; f < 2 * dim; ++f)
    if (!(faces >> f & 1)) {
      if (f % 2 == 0) rg.lo[f / 2] -= grow;
      else rg.hi[f / 2] += grow;
    }
  /* the physical faces, over the tangential cells the ghosts reach; their values on the GPU */
  tsr_steps_bc hbc = {0}, dbc = {0};
  double *dval[6] = {0};
  CHECK(steps_test_faces(dim, &box, ghost, ncomp, faces, uniform, &hbc) == 0, "values");
  for (int i = 0; i < hbc.nface; ++i) {
    const tsr_bc_face *fc = &hbc.face[i];
    const size_t nv = (size_t)ncomp * (size_t)fc->n1 * (size_t)fc->n2;
    CUDA_OK(cudaMalloc((void **)&dval[i], nv * sizeof(double)));
    CUDA_OK(cudaMemcpy(dval[i], hbc.val[i], nv * sizeof(double), cudaMemcpyHostToDevice));
    dbc.face[i] = *fc;
    dbc.val[i] = dval[i];
  }
  dbc.nface = hbc.nface;
  double p[TSR_MAX_MODEL_PARAMS];
  params(model, p);
  const double h[3] = {0.11, 0.13, 0.17};
  tsr_stage_desc d = {model, ncomp, last, 0.0017, {0}};
  tsr_stage_coef_init(&d.coef, model, p, h, hin);
  const size_t bytes = tsr_field_bytes(hin);
  CUDA_OK(cudaMemcpy(din->data, hin->data, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dsrc->data, hsrc->data, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dout->data, hout->data, bytes, cudaMemcpyHostToDevice));
  /* the host's ghost fill for the first step is the caller's: the same layers on both sides */
  CHECK(tsr_steps_host(&d, m, 1, &rg, &hbc, hin, has_src ? hsrc : NULL, hout) == TSR_OK,
        "tsr_steps_host: %s", tsr_err_message());
  CHECK(tsr_steps_cuda(&d, m, 1, &rg, &dbc, din, has_src ? dsrc : NULL, dout, 0) == TSR_OK,
        "tsr_steps_cuda: %s", tsr_err_message());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got->data, dout->data, bytes, cudaMemcpyDeviceToHost));
  if (memcmp(got->data, hout->data, bytes)) {
    int64_t nb = 0, first = -1;
    for (int64_t i = 0; i < (int64_t)(bytes / es); ++i)
      if (memcmp((char *)got->data + i * es, (char *)hout->data + i * es, es)) {
        if (first < 0) first = i;
        nb++;
      }
    CHECK(0, "%dD %d x %d x %d %s %s m %d levels %d src %d faces 0x%x grow %d: %lld values differ "
          "(first offset %lld: GPU %.17g, host %.17g)", dim, tsr_box_len(&box, 0),
          tsr_box_len(&box, 1), tsr_box_len(&box, 2), tsr_models[model].name,
          prec == TSR_PREC_SINGLE ? "fp32" : "fp64", m, levels, has_src, faces, grow, (long long)nb,
          (long long)first, tsr_field_get(got, first), tsr_field_get(hout, first));
  }
  for (int f = 0; f < 6; ++f)
    if (dval[f]) cudaFree(dval[f]);
  for (int i = 0; i < hbc.nface; ++i) free((void *)hbc.val[i]);
  tsr_field *all[] = {hin, hsrc, hout, got, din, dsrc, dout};
  for (int i = 0; i < 7; ++i) tsr_field_destroy(&all[i]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  CHECK(ndev > 0, "no GPU");
  CUDA_OK(cudaSetDevice(g_rank % ndev));
  int cases = 0;
  /* the passes: forward Euler's of 1 (3D only: the plain stage), 3 and 5 steps, and one step
   * of SSP-RK2, SSP-RK3 and RK4, for every model but ignition */
  const struct {
    tsr_stage_kind last;
    int m;
  } pass[] = {{TSR_STAGE_EULER, 1}, {TSR_STAGE_EULER, 3}, {TSR_STAGE_EULER, 5},
              {TSR_STAGE_SSP2_2, 1}, {TSR_STAGE_SSP3_3, 1}, {TSR_STAGE_RK4_4, 1}};
  /* 2D: 3 tiles, 2 row chunks */
  const tsr_box box2 = {{-5, 9, 0}, {-5 + 509, 9 + 301, 1}};
  /* 3D: a box of several tiles along x and y and two z chunks at the default launch shape
   * (kernels/steps3_cuda.cuh: 64 x 16 columns, 64 planes), odd sizes at an offset; boxes
   * thinner than a tile or its halo along one axis, and two planes thick between z faces */
  const tsr_box box3[] = {
      {{-3, 5, 2}, {-3 + 131, 5 + 23, 2 + 71}},
      {{1, -2, 0}, {1 + 2, -2 + 37, 9}},
      {{0, 0, -4}, {45, 3, -4 + 13}},
      {{7, 1, 1}, {7 + 33, 1 + 19, 1 + 2}},
  };
  for (int dim = 2; dim <= 3; ++dim)
    for (int model = 0; model < TSR_MODEL_COUNT; ++model) {
      if (!(tsr_models[model].methods & TSR_METHODS_EXPLICIT)) continue;
      for (int k = 0; k < (int)(sizeof pass / sizeof *pass); ++k) {
        const int m = pass[k].m, S = tsr_steps_stages(pass[k].last);
        if ((S > 1 && model == TSR_MODEL_IGNITION) || (dim == 2 && S * m == 1)) continue;
        for (int pr = 0; pr < 2; ++pr)
          for (int fc = 0; fc < (dim == 2 ? NFACES2 : NFACES3); ++fc) {
            const tsr_prec prec = pr ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
            const int grow = fc % 2 ? 0 : 2;
            if (dim == 2) {
              check_case(2, &box2, model, prec, m, pass[k].last, (fc + m + pr + S - 1) % 2,
                         g_faces[fc], grow);
              cases++;
              continue;
            }
            /* every box with every face set for heat fp64 passes of 3 levels (Euler's 3
             * steps, an SSP-RK3 step); elsewhere one box per case */
            const int all = model == TSR_MODEL_HEAT && pr == 0 && S * m == 3;
            for (int b = 0; b < 4; ++b) {
              if (!all && b != (fc + m + model + S - 1) % 4) continue;
              check_case(3, &box3[b], model, prec, m, pass[k].last, (fc + m + pr + b) % 2,
                         g_faces[fc], grow);
              cases++;
            }
          }
      }
    }
  /* refusals: even and out-of-range step counts, 2D and 3D */
  for (int dim = 2; dim <= 3; ++dim) {
    const tsr_box b8 = {{0, 0, 0}, {8, 8, dim == 3 ? 8 : 1}};
    tsr_field *a = NULL, *b = NULL;
    CHECK(tsr_field_create_as(dim, &b8, 7, 1, TSR_MEM_DEVICE, TSR_PREC_DOUBLE, &a) == TSR_OK, "f");
    CHECK(tsr_field_create_as(dim, &b8, 7, 1, TSR_MEM_DEVICE, TSR_PREC_DOUBLE, &b) == TSR_OK, "f");
    double p[TSR_MAX_MODEL_PARAMS];
    params(TSR_MODEL_HEAT, p);
    const double h[3] = {0.1, 0.1, 0.1};
    tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.001, {0}};
    tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, p, h, a);
    for (int m = 0; m <= 7; m += 2)
      CHECK(tsr_steps_cuda(&d, m, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
            "%dD: %d steps a pass accepted", dim, m);
    CHECK(tsr_steps_cuda(&d, 7, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
          "%dD: 7 steps a pass accepted", dim);
    CHECK(tsr_steps_cuda(&d, 3, 1, &b8, NULL, a, NULL, a, 0) == TSR_ERR_STATE,
          "%dD: in == out accepted", dim);
    d.kind = TSR_STAGE_SSP3_3;
    CHECK(tsr_steps_cuda(&d, 3, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
          "%dD: an SSP-RK3 pass of 3 steps accepted", dim);
    d.kind = TSR_STAGE_SSP2_2;
    CHECK(tsr_steps_cuda(&d, 3, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
          "%dD: an SSP-RK2 pass of 3 steps accepted", dim);
    d.kind = TSR_STAGE_RK4_4;
    CHECK(tsr_steps_cuda(&d, 3, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
          "%dD: an RK4 pass of 3 steps accepted", dim);
    const tsr_stage_kind other[] = {TSR_STAGE_SSP3_2, TSR_STAGE_RK4_1, TSR_STAGE_RK4_3};
    for (int k = 0; k < 3; ++k) {
      d.kind = other[k];
      CHECK(tsr_steps_cuda(&d, 1, 1, &b8, NULL, a, NULL, b, 0) == TSR_ERR_STATE,
            "%dD: a pass of the scheme ending with stage kind %d accepted", dim, (int)other[k]);
    }
    tsr_field_destroy(&a);
    tsr_field_destroy(&b);
  }
  /* what the driver is told: odd counts the kernels take (tested above), 0 without a kernel
   * or where passes do not pay (ignition: bench/README.md) */
  for (int dim = 1; dim <= 4; ++dim)
    for (int pr = 0; pr < 2; ++pr)
      for (int md = 0; md < TSR_MODEL_COUNT; ++md) {
        const tsr_prec pp = pr ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
        const int mx = tsr_steps_cuda_max(dim, pp, md, 1), m3 = tsr_steps_cuda_max(dim, pp, md, 3);
        CHECK(mx == 0 || ((dim == 2 || dim == 3) && mx % 2 == 1 && mx <= 5 &&
                          (tsr_models[md].methods & TSR_METHODS_EXPLICIT)),
              "tsr_steps_cuda_max(%d, %d, %s) = %d", dim, pr, tsr_models[md].name, mx);
        const int fp32_3d = dim == 3 && pr && (tsr_models[md].methods & TSR_METHODS_EXPLICIT) &&
                            !tsr_models[md].varies;
        CHECK(m3 == (mx > 0 || fp32_3d) && tsr_steps_cuda_max(dim, pp, md, 2) == m3 &&
                  tsr_steps_cuda_max(dim, pp, md, 4) == m3 &&
                  tsr_steps_cuda_max(dim, pp, md, 5) == 0,
              "tsr_steps_cuda_max(%d, %d, %s, stages): SSP-RK3 %d where forward Euler %d and in "
              "3D fp32, SSP-RK2 and RK4 as SSP-RK3, no 5 stages", dim, pr, tsr_models[md].name,
              m3, mx);
      }
  CHECK(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 1) >= 3 &&
            tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 1) >= 3 &&
            tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_WAVE, 1) == 5 &&
            tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_IGNITION, 1) == 0 &&
            tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 3) == 1,
        "tsr_steps_cuda_max: fp64 passes of heat and wave on, ignition off, SSP-RK3's of one step");
  printf("rank %d: tsr_steps_cuda == tsr_steps_host bit for bit in %d cases\n", g_rank, cases);
  MPI_Finalize();
  return 0;
}
