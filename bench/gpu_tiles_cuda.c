/* bench/gpu_tiles: time tiles (tsr_steps_cuda, several forward Euler steps per pass over
 * memory, or an SSP-RK or RK4 step's stages in one) against tessera's own single-step kernel
 * (tsr_stage_cuda, a stage at a time) and the copy bandwidth, all measured in the same run on
 * one GPU.
 *
 * Heat (or --model, at its default parameters and half its stable dt), forward Euler, 2D
 * 5-point on an n x n box (default 20480) or 3D 7-point on n x n x n
 * (--dim 3, default 512), whose faces are all Dirichlet (values that vary along the face,
 * refilled on chip between the steps of a pass): fp64 and fp32, passes of 1 (the single-step
 * kernel), 3 and 5 steps. Effective Gcells/s = cells x steps / time. The
 * streaming limit is what the copy bandwidth allows one step at a time: copy GB/s over the
 * 2 x (bytes per value) a step must move at least (read once, write once). Bytes per cell per
 * step: 2 x bytes per value / steps per pass at best, what Nsight Compute reports in
 * bench/profile_tiles.sh.
 *
 * Checked first, at every pass length: one pass on the GPU against tsr_steps_host (which is
 * stage-by-stage steps, bit for bit) on a smaller box (509^2, 3D 97^3), every byte of the
 * field.
 *
 * --scheme ssp_rk3 (ssp_rk2, rk4): the single step is the three (two, four) stage kernels of
 * an SSP-RK3 (SSP-RK2, RK4) step (the base and RK4's running sums read and written as the
 * explicit method runs them without time tiles, solver/integrate.c's slots), the pass one step
 * in one pass (tsr_steps_cuda with the kind SSP3_3, SSP2_2, RK4_4); the streaming limit is the
 * same 2 x (bytes per value) a step.
 *
 *   usage: gpu_tiles [--dim 2|3] [--n N] [--steps S] [--only 3|5] [--json PATH]
 *                    [--precision double|single|both] [--model NAME]
 *                    [--scheme euler|ssp_rk2|ssp_rk3|rk4]
 * Prints a table; exits non-zero when a result is wrong or a CUDA call fails. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/steps.h"
#include "tsr_version.h"

#define BENCH_NAME "gpu_tiles"
#include "bench/bench_cuda.h"

/* --scheme: the stages of a step (1 forward Euler, 2 SSP-RK2, 3 SSP-RK3, 4 RK4), and the
 * stage fields of such a step taken stage by stage (RK4's running sums in g_acc). */
static int g_stages = 1;
static tsr_field *g_t1, *g_t2, *g_acc;

static void fill(tsr_field *f) {
  const int64_t n = (int64_t)f->ncomp * f->scomp;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    tsr_field_set(f, i, 0.5 + (double)(x >> 11) * (1.0 / 9007199254740992.0));
  }
}

/* Dirichlet on the 2 dim faces of box, values along each face (nc components), in host and
 * device memory. */
typedef struct {
  tsr_steps_bc host, dev;
} faces;

static void faces_make(faces *fs, int dim, int nc, const tsr_box *box) {
  memset(fs, 0, sizeof *fs);
  for (int f = 0; f < 2 * dim; ++f) {
    tsr_bc_face fc = {0};
    fc.axis = f / 2;
    fc.side = f % 2;
    fc.type = TSR_GHOST_DIRICHLET;
    fc.t1 = (fc.axis + 1) % 3;
    fc.t2 = (fc.axis + 2) % 3;
    fc.n1 = fc.t1 < dim ? tsr_box_len(box, fc.t1) : 1;
    fc.n2 = fc.t2 < dim ? tsr_box_len(box, fc.t2) : 1;
    fc.layers = 1;
    fc.h = 1.0 / tsr_box_len(box, fc.axis);
    const size_t len = (size_t)nc * (size_t)fc.n1 * (size_t)fc.n2;
    double *v = malloc(sizeof(double) * len), *d = NULL;
    if (!v) exit(1);
    for (size_t i = 0; i < len; ++i) v[i] = 0.5 + 0.25 * (double)i / (double)len;
    CUDA_OK(cudaMalloc((void **)&d, sizeof(double) * len));
    CUDA_OK(cudaMemcpy(d, v, sizeof(double) * len, cudaMemcpyHostToDevice));
    fs->host.face[f] = fs->dev.face[f] = fc;
    fs->host.val[f] = v;
    fs->dev.val[f] = d;
  }
  fs->host.nface = fs->dev.nface = 2 * dim;
}

static void faces_free(faces *fs) {
  for (int f = 0; f < fs->host.nface; ++f) {
    free((void *)fs->host.val[f]);
    cudaFree((void *)fs->dev.val[f]);
  }
}

/* The model's stage with its default parameters, dt half its stability limit. */
static tsr_stage_desc model_desc(tsr_model_id id, int n, const tsr_field *shape) {
  double h[3] = {1.0 / n, 1.0 / n, 1.0 / n}, p[TSR_MAX_MODEL_PARAMS] = {0};
  for (int i = 0; i < tsr_models[id].nparam; ++i) p[i] = tsr_models[id].param[i].def;
  const double dt = 0.5 * tsr_model_dt_limit(id, p, h, shape->dim);
  tsr_stage_desc d = {id, 1, tsr_steps_kind(g_stages, g_stages - 1), dt, {0}};
  tsr_stage_coef_init(&d.coef, id, p, h, shape);
  return d;
}

/* One pass of m steps (m = 1: the single-step kernel, with a scheme of several stages its
 * stages one by one; -1: such a step in one pass) from u into v. d's kind is the scheme's last
 * stage's (kernels/steps.h). Stage by stage, stage k reads u, t1 (k odd) or t2 and writes t1
 * (k even), t2 or v (the last), as solver/integrate.c's slots go. */
static void pass(const tsr_stage_desc *d, int m, const tsr_box *box, const faces *fs,
                 const tsr_field *u, tsr_field *v, cudaStream_t st) {
  if (m > 1 || m < 0) {
    TSR_OK_OR_DIE(tsr_steps_cuda(d, m < 0 ? 1 : m, 1, box, &fs->dev, u, NULL, v, st));
  } else if (g_stages > 1) {
    tsr_stage_desc k = *d;
    for (int s = 0; s < g_stages; ++s) {
      k.kind = tsr_steps_kind(g_stages, s);
      const tsr_field *in = s == 0 ? u : s % 2 ? g_t1 : g_t2;
      tsr_field *out = s == g_stages - 1 ? v : s % 2 ? g_t2 : g_t1;
      TSR_OK_OR_DIE(tsr_stage_cuda(&k, box, in, tsr_stage_uses_base(k.kind) ? u : NULL,
                                   tsr_stage_uses_acc(k.kind) ? g_acc : NULL, NULL, out, st));
    }
  } else {
    TSR_OK_OR_DIE(tsr_stage_cuda(d, box, u, NULL, NULL, NULL, v, st));
  }
}

/* Whether one pass of m steps (-1: one SSP step) on the GPU gives tsr_steps_host's bytes,
 * on an n^dim box. */
static int check(tsr_model_id id, int dim, int n, int m, tsr_prec pr, cudaStream_t st) {
  const int nc = tsr_models[id].ncomp;
  int cells[3] = {n, n, dim == 3 ? n : 1};
  tsr_box box = tsr_box_make(dim, cells);
  tsr_field *hu, *hv, *got, *du, *dv;
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_HOST, pr, &hu));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_HOST, pr, &hv));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_HOST, pr, &got));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &du));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &dv));
  const size_t bytes = tsr_field_bytes(hu);
  fill(hu);
  memcpy(hv->data, hu->data, bytes);
  CUDA_OK(cudaMemcpy(du->data, hu->data, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dv->data, hu->data, bytes, cudaMemcpyHostToDevice));
  faces fs;
  faces_make(&fs, dim, nc, &box);
  tsr_stage_desc d = model_desc(id, n, hu);
  TSR_OK_OR_DIE(tsr_steps_host(&d, m < 0 ? 1 : m, 1, &box, &fs.host, hu, NULL, hv));
  pass(&d, m, &box, &fs, du, dv, st);
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaMemcpy(got->data, dv->data, bytes, cudaMemcpyDeviceToHost));
  int ok = memcmp(got->data, hv->data, bytes) == 0;
  faces_free(&fs);
  tsr_field *all[] = {hu, hv, got, du, dv};
  for (int i = 0; i < 5; ++i) tsr_field_destroy(&all[i]);
  return ok;
}

/* Median seconds per step: three timed runs of `steps` steps in passes of m, ping-ponging. */
static double time_passes(const tsr_stage_desc *d, int m, const tsr_box *box, const faces *fs,
                          tsr_field *u, tsr_field *v, int steps, cudaStream_t st) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int w = 0; w < 3; ++w) pass(d, m, box, fs, u, v, st);
  const int npass = steps / (m < 0 ? 1 : m);
  double t[3];
  for (int r = 0; r < 3; ++r) {
    CUDA_OK(cudaEventRecord(e0, st));
    for (int s = 0; s < npass; ++s) pass(d, m, box, fs, s % 2 ? v : u, s % 2 ? u : v, st);
    CUDA_OK(cudaEventRecord(e1, st));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    t[r] = 1e-3 * ms / (npass * (m < 0 ? 1 : m));
  }
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return bench_median(t, 3);
}

static double copy_time(void *dst, const void *src, size_t bytes, cudaStream_t st) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  double t[21];
  for (int r = -2; r < 21; ++r) {
    CUDA_OK(cudaEventRecord(e0, st));
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
    CUDA_OK(cudaEventRecord(e1, st));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 0) t[r] = 1e-3 * ms;
  }
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return bench_median(t, 21);
}

int main(int argc, char **argv) {
  const char *json = NULL, *precision = "both", *model = "heat", *scheme = "euler";
  int n = 0, steps = 600, only = 0, dim = 2;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--dim") && i + 1 < argc) dim = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--precision") && i + 1 < argc) precision = argv[++i];
    else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
    else if (!strcmp(argv[i], "--scheme") && i + 1 < argc) scheme = argv[++i];
    else {
      fprintf(stderr, "usage: gpu_tiles [--dim 2|3] [--n N] [--steps S] [--only 1|3|5] "
                      "[--json PATH] [--precision double|single|both] [--model NAME] "
                      "[--scheme euler|ssp_rk2|ssp_rk3|rk4]\n");
      return 2;
    }
  }
  const tsr_model_info *mi = tsr_model_find(model);
  if (!mi || !(mi->methods & TSR_METHODS_EXPLICIT)) {
    fprintf(stderr, "gpu_tiles: --model %s: expected a model with an explicit stage (heat, "
                    "advection_diffusion, wave, gray_scott, allen_cahn, ignition)\n", model);
    return 2;
  }
  g_stages = !strcmp(scheme, "euler") ? 1 : !strcmp(scheme, "ssp_rk2") ? 2
             : !strcmp(scheme, "ssp_rk3") ? 3 : !strcmp(scheme, "rk4") ? 4 : 0;
  if (!g_stages) {
    fprintf(stderr, "gpu_tiles: --scheme %s: expected euler, ssp_rk2, ssp_rk3 or rk4\n", scheme);
    return 2;
  }
  const tsr_model_id id = (tsr_model_id)(mi - tsr_models);
  const int nc = mi->ncomp;
  if (dim != 2 && dim != 3) {
    fprintf(stderr, "gpu_tiles: --dim %d: expected 2 or 3\n", dim);
    return 2;
  }
  if (!n) n = dim == 3 ? 512 : 20480;
  if (n < 64 || steps < 15) {
    fprintf(stderr, "gpu_tiles: --n %d --steps %d: expected n >= 64 and steps >= 15\n", n, steps);
    return 2;
  }
  struct cudaDeviceProp prop;
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  printf("gpu_tiles: %s, %d SMs; %dD %s %d^%d, %s, Dirichlet faces, %d steps\n",
         prop.name, prop.multiProcessorCount, dim, model, n, dim,
         g_stages == 4   ? "RK4"
         : g_stages == 3 ? "SSP-RK3"
         : g_stages == 2 ? "SSP-RK2"
                         : "forward Euler",
         steps);
  FILE *fp = json ? fopen(json, "w") : NULL;
  if (json && !fp) {
    fprintf(stderr, "gpu_tiles: cannot write %s\n", json);
    return 1;
  }
  if (fp)
    fprintf(fp, "{\"bench\": \"gpu_tiles\", \"version\": \"%s\", \"machine\": \"%s\", \"dim\": %d, "
            "\"model\": \"%s\", \"scheme\": \"%s\", \"n\": %d, \"steps\": %d, \"cases\": [",
            TSR_VERSION, prop.name, dim, model, scheme, n, steps);
  int ok = 1, first = 1;
  /* schemes of several stages: the step stage by stage, then one step a pass (-1) */
  static const int ms[] = {1, 3, 5}, ms3[] = {1, -1};
  printf("\n  %-5s %10s %10s %9s %10s %10s %12s  %s\n", "prec", "steps", "ms/step", "Gcells/s",
         "/1-step", "/stream", "B/cell/step", "check");
  for (int p = 0; p < 2; ++p) {
    const tsr_prec pr = p ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
    if (strcmp(precision, "both") && strcmp(precision, p ? "single" : "double")) continue;
    int cells[3] = {n, n, dim == 3 ? n : 1};
    tsr_box box = tsr_box_make(dim, cells);
    tsr_field *hu, *du, *dv;
    TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_HOST, pr, &hu));
    TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &du));
    TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &dv));
    if (g_stages > 1) {
      TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &g_t1));
      TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &g_t2));
      if (g_stages == 4)
        TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, TSR_STEPS_MAX, nc, TSR_MEM_DEVICE, pr, &g_acc));
    }
    const size_t bytes = tsr_field_bytes(hu), es = tsr_prec_size(pr);
    fill(hu);
    CUDA_OK(cudaMemcpy(du->data, hu->data, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dv->data, hu->data, bytes, cudaMemcpyHostToDevice));
    faces fs;
    faces_make(&fs, dim, nc, &box);
    tsr_stage_desc d = model_desc(id, n, hu);
    const double cells_n = (double)n * n * (dim == 3 ? n : 1);
    const double copy_s = copy_time(dv->data, du->data, bytes, st);
    const double copy_GBps = 2.0 * (double)bytes / copy_s / 1e9;
    const double stream_gcells = copy_GBps / (2.0 * es * nc); /* one step per pass over memory */
    double one = 0.0;
    for (int k = 0; k < (g_stages > 1 ? 2 : 3); ++k) {
      const int m = g_stages > 1 ? ms3[k] : ms[k], mm = m < 0 ? 1 : m; /* mm: steps a pass */
      if (only && m != only && m != 1) continue; /* --only (profiling): that pass and 1 */
      const int right = m == 1 || check(id, dim, dim == 3 ? 97 : 509, m, pr, st);
      ok &= right;
      const double s = time_passes(&d, m, &box, &fs, du, dv, steps - steps % (2 * mm), st);
      const double g = cells_n / s / 1e9;
      if (m == 1) one = g;
      char label[16];
      snprintf(label, sizeof label, "%s", m < 0 ? "1 pass" : g_stages > 1 ? "1 by stage" : "");
      if (!label[0]) snprintf(label, sizeof label, "%d", m);
      printf("  %-5s %10s %10.4f %9.1f %10.2f %10.2f %12.2f  %s\n", p ? "fp32" : "fp64", label,
             1e3 * s, g, g / one, g / stream_gcells, 2.0 * es * nc / mm,
             m == 1 ? "(test_stage)" : right ? "bitwise == host" : "WRONG");
      if (fp)
        fprintf(fp, "%s{\"precision\": \"%s\", \"steps_per_pass\": %d, \"tiled\": %s, "
                "\"step_s\": %.6e, "
                "\"gcells_per_s\": %.3f, \"vs_one_step\": %.4f, \"copy_GBps\": %.1f, "
                "\"stream_limit_gcells\": %.2f, \"vs_stream_limit\": %.4f, \"correct\": %s}",
                first ? "" : ", ", p ? "fp32" : "fp64", mm, m != 1 ? "true" : "false", s, g,
                g / one, copy_GBps,
                stream_gcells, g / stream_gcells, right ? "true" : "false");
      first = 0;
    }
    printf("  %-5s copy %.1f GB/s: streaming limit %.1f Gcells/s\n", p ? "fp32" : "fp64",
           copy_GBps, stream_gcells);
    faces_free(&fs);
    if (g_stages > 1) {
      tsr_field_destroy(&g_t1);
      tsr_field_destroy(&g_t2);
      tsr_field_destroy(&g_acc);
    }
    tsr_field_destroy(&hu);
    tsr_field_destroy(&du);
    tsr_field_destroy(&dv);
  }
  if (fp) {
    fprintf(fp, "]}\n");
    fclose(fp);
  }
  printf("  goal: >= 1.5x the single-step rate and >= 1.5x the streaming limit\n");
  CUDA_OK(cudaStreamDestroy(st));
  return ok ? 0 : 1;
}
