/* bench/gpu_stencil: the heat stage on one GPU (tsr_stage_cuda, fp64 and fp32 fields) against
 * the device's copy bandwidth measured in the same run.
 *
 *   (a) 2D heat, 5-point, forward Euler, 20480^2, 1000 steps ping-ponging two fields whose
 *       ghosts stay fixed (Dirichlet-like): Gcells/s = cells x steps / time.
 *   (b) 3D heat, 7-point, forward Euler, 512^3, one stage repeated 50 times (median).
 * Bytes per cell: one read of u and one write of u_new (16 B in fp64, 8 B in fp32), the least
 * any stencil moves;
 * the ceiling, a cudaMemcpyAsync device-to-device of one field, counts read + write the same
 * way. Each case is checked first: one GPU step against tsr_stage_host on the whole box, bit
 * for bit (every cell, ghosts included).
 *
 *   usage: gpu_stencil [--json PATH] [--quick] [--sweep] [--precision double|single|both]
 * --quick: small sizes (a smoke run). --sweep: also time a set of launch shapes
 * (tsr_stage_cuda_set_tuning) per case, to choose the defaults. Prints a table last; exits
 * non-zero when a result is wrong or a CUDA call fails. TESSERA_COMMIT, when set, goes into the
 * JSON record. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "kernels/stage.h"
#include "tsr_version.h"

#define BENCH_NAME "gpu_stencil"
#include "bench/bench_cuda.h"

static size_t field_bytes(const tsr_field *f) { return tsr_field_bytes(f); }

/* Values in [0.5, 1.5) from a hash of the index: not zeros (which hide unwritten cells) and
 * cheap to make for gigabytes. */
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

/* Median time (s) of a device-to-device copy of one field's bytes. */
static double copy_time(void *dst, const void *src, size_t bytes, int reps, cudaStream_t st) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  double t[64];
  for (int r = -2; r < reps; ++r) {
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
  return bench_median(t, reps);
}

/* Median seconds per step of the stage with the current launch shape, after a warm-up. 2D:
 * three timed runs of `steps` steps ping-ponging u and v. 3D: `steps` (at most 64) single
 * stages u -> v, each timed. */
static double time_stage(const tsr_stage_desc *d, const tsr_box *box, tsr_field *u,
                         tsr_field *v, int steps, cudaStream_t st) {
  const int dim = d->coef.dim;
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int w = 0; w < 3; ++w) TSR_OK_OR_DIE(tsr_stage_cuda(d, box, u, NULL, NULL, NULL, v, st));
  double t[64];
  const int reps = dim == 2 ? 3 : steps > 64 ? 64 : steps, inner = dim == 2 ? steps : 1;
  for (int r = 0; r < reps; ++r) {
    CUDA_OK(cudaEventRecord(e0, st));
    for (int s = 0; s < inner; ++s)
      TSR_OK_OR_DIE(tsr_stage_cuda(d, box, s % 2 ? v : u, NULL, NULL, NULL, s % 2 ? u : v, st));
    CUDA_OK(cudaEventRecord(e1, st));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    t[r] = 1e-3 * ms / inner;
  }
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return bench_median(t, reps);
}

typedef struct {
  const char *name;
  int dim, n, steps;
  tsr_prec prec;
  double cells;           /* cells updated per step */
  double copy_s, step_s;  /* median copy time, median time per step */
  double copy_GBps, stencil_GBps, gcells, ratio;
  int correct;
  tsr_stage_cuda_tuning best; /* --sweep: the fastest shape */
  double best_step_s;
} result;

/* One case: check one step against the host bit for bit, measure the copy ceiling, then time
 * the stage. 2D: `steps` ping-pong steps per timed run, 3 runs, median. 3D: `steps` single
 * stages timed one by one, median. */
static void run_case(result *res, int sweep, cudaStream_t st) {
  const int dim = res->dim, n = res->n;
  int cells[3] = {n, n, n};
  tsr_box box = tsr_box_make(dim, cells);
  tsr_field *hu = NULL, *href = NULL, *hgot = NULL, *du = NULL, *dv = NULL;
  const tsr_prec pr = res->prec;
  const size_t es = tsr_prec_size(pr);
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, 1, 1, TSR_MEM_HOST, pr, &hu));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, 1, 1, TSR_MEM_HOST, pr, &href));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, 1, 1, TSR_MEM_HOST, pr, &hgot));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, 1, 1, TSR_MEM_DEVICE, pr, &du));
  TSR_OK_OR_DIE(tsr_field_create_as(dim, &box, 1, 1, TSR_MEM_DEVICE, pr, &dv));
  const size_t bytes = field_bytes(hu);
  fill(hu);
  memcpy(href->data, hu->data, bytes); /* same ghosts in out as in in */
  CUDA_OK(cudaMemcpy(du->data, hu->data, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dv->data, hu->data, bytes, cudaMemcpyHostToDevice));

  double h[3] = {1.0 / n, 1.0 / n, 1.0 / n}, kappa = 1.0;
  /* stable forward Euler (dt <= h^2 / (2 dim kappa)), so 1000 steps stay in range */
  tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.8 / (2.0 * dim * n * (double)n), {0}};
  tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, &kappa, h, hu);
  res->cells = (double)tsr_box_cells(&box);

  /* correctness: one step, every byte of the field (ghosts are copies on both sides) */
  tsr_stage_cuda_set_tuning(NULL);
  TSR_OK_OR_DIE(tsr_stage_cuda(&d, &box, du, NULL, NULL, NULL, dv, st));
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaMemcpy(hgot->data, dv->data, bytes, cudaMemcpyDeviceToHost));
  tsr_stage_host(&d, &box, hu, NULL, NULL, NULL, href);
  res->correct = memcmp(hgot->data, href->data, bytes) == 0;
  if (!res->correct) {
    int64_t nb = 0, first = -1;
    for (int64_t i = 0; i < (int64_t)(bytes / es); ++i)
      if (memcmp((char *)hgot->data + i * es, (char *)href->data + i * es, es)) {
        if (first < 0) first = i;
        nb++;
      }
    fprintf(stderr, "gpu_stencil: %s: %lld cells differ from tsr_stage_host (first at offset "
            "%lld: GPU %.17g, host %.17g)\n", res->name, (long long)nb, (long long)first,
            tsr_field_get(hgot, first), tsr_field_get(href, first));
  }

  /* ceiling: du -> dv leaves dv equal to du, as the ping-pong wants */
  res->copy_s = copy_time(dv->data, du->data, bytes, 21, st);
  res->copy_GBps = 2.0 * (double)bytes / res->copy_s / 1e9;

  res->step_s = time_stage(&d, &box, du, dv, res->steps, st);
  res->gcells = res->cells / res->step_s / 1e9;
  res->stencil_GBps = 2.0 * es * res->cells / res->step_s / 1e9;
  res->ratio = res->stencil_GBps / res->copy_GBps;
  res->best = (tsr_stage_cuda_tuning){0, 0, 0, 0, 0, 0, 0};
  res->best_step_s = res->step_s;

  if (sweep) {
    static const int shapes3[][2] = {{32, 4}, {32, 8}, {64, 2}, {64, 4}, {128, 1}, {128, 2},
                                     {256, 1}};
    static const int chunks[] = {1, 2, 4, 8, 16, 64};
    static const int bx2[] = {64, 128, 256};
    const int nshape = dim == 3 ? 7 : 3;
    printf("  sweep %s (ms per step; default %.4f):\n", res->name, 1e3 * res->step_s);
    for (int s = 0; s < nshape; ++s) {
      if (dim == 3) printf("    %3d x %-3d ", shapes3[s][0], shapes3[s][1]);
      else printf("    %3d       ", bx2[s]);
      for (int c = 0; c < 6; ++c) {
        tsr_stage_cuda_tuning t = {0, 0, 0, 0, 0, 0, 0};
        if (dim == 3) {
          t.bx3 = shapes3[s][0];
          t.by3 = shapes3[s][1];
          t.chunk3 = chunks[c];
          t.tile3 = -1; /* the register kernel */
        } else {
          t.bx2 = bx2[s];
          t.chunk2 = chunks[c];
        }
        tsr_stage_cuda_set_tuning(&t);
        /* 2D: fewer steps per timed run, the sweep is a guide */
        double ts = time_stage(&d, &box, du, dv, dim == 2 && res->steps > 50 ? 50 : res->steps, st);
        printf(" c%-3d %8.4f", chunks[c], 1e3 * ts);
        if (ts < res->best_step_s) {
          res->best_step_s = ts;
          res->best = t;
        }
      }
      printf("\n");
    }
    /* shared-memory tiles by planes marched: with register rings (1), async copies (2) */
    for (int kind = 1; dim == 3 && kind <= 2; ++kind) {
      printf(kind == 1 ? "    tiles     " : "    async     ");
      for (int c = 0; c < 6; ++c) {
        tsr_stage_cuda_tuning t = {0, 0, 0, 0, 0, kind, chunks[c]};
        tsr_stage_cuda_set_tuning(&t);
        double ts = time_stage(&d, &box, du, dv, res->steps, st);
        printf(" c%-3d %8.4f", chunks[c], 1e3 * ts);
        if (ts < res->best_step_s) {
          res->best_step_s = ts;
          res->best = t;
        }
      }
      printf("\n");
    }
    tsr_stage_cuda_set_tuning(NULL);
    /* the default once more: the first timing of a case follows the copy ceiling's memcpys */
    printf("    default again after the sweep: %.4f ms\n",
           1e3 * time_stage(&d, &box, du, dv, dim == 2 && res->steps > 50 ? 50 : res->steps, st));
  }
  tsr_field_destroy(&hu);
  tsr_field_destroy(&href);
  tsr_field_destroy(&hgot);
  tsr_field_destroy(&du);
  tsr_field_destroy(&dv);
}

int main(int argc, char **argv) {
  const char *json = NULL, *precision = "both";
  int quick = 0, sweep = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--sweep")) sweep = 1;
    else if (!strcmp(argv[i], "--precision") && i + 1 < argc) precision = argv[++i];
    else {
      fprintf(stderr, "usage: gpu_stencil [--json PATH] [--quick] [--sweep] "
                      "[--precision double|single|both]\n");
      return 2;
    }
  }
  const int want64 = !strcmp(precision, "double") || !strcmp(precision, "both");
  const int want32 = !strcmp(precision, "single") || !strcmp(precision, "both");
  if (!want64 && !want32) {
    fprintf(stderr, "gpu_stencil: --precision %s: expected double, single or both\n", precision);
    return 2;
  }
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  struct cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  int mem_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  /* DDR: two transfers per clock; a datasheet figure, printed for reference only */
  double peak_GBps = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  result res[4];
  int nres = 0;
  for (int p = 0; p < 2; ++p) {
    if (!(p ? want32 : want64)) continue;
    tsr_prec pr = p ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
    res[nres++] = (result){.name = p ? "2D 5-pt fp32" : "2D 5-pt fp64", .dim = 2,
                           .n = quick ? 2048 : 20480, .steps = quick ? 20 : 1000, .prec = pr};
    res[nres++] = (result){.name = p ? "3D 7-pt fp32" : "3D 7-pt fp64", .dim = 3,
                           .n = quick ? 128 : 512, .steps = quick ? 10 : 50, .prec = pr};
  }
  printf("gpu_stencil: %s, %d SMs, %.0f MiB L2, %.1f GiB; heat, forward Euler%s\n", prop.name,
         prop.multiProcessorCount, prop.l2CacheSize / 1048576.0,
         prop.totalGlobalMem / 1073741824.0, quick ? " (--quick sizes)" : "");
  for (int c = 0; c < nres; ++c) run_case(&res[c], sweep, st);

  int ok = 1;
  for (int c = 0; c < nres; ++c) ok &= res[c].correct;
  printf("\n  %-14s %8s %6s %10s %10s %10s %9s %8s  %s\n", "case", "size", "steps", "ms/step",
         "copy GB/s", "stage GB/s", "Gcells/s", "/copy", "check");
  for (int c = 0; c < nres; ++c) {
    char size[32];
    snprintf(size, sizeof size, "%d^%d", res[c].n, res[c].dim);
    printf("  %-14s %8s %6d %10.4f %10.1f %10.1f %9.2f %8.3f  %s\n", res[c].name, size,
           res[c].steps, 1e3 * res[c].step_s, res[c].copy_GBps, res[c].stencil_GBps,
           res[c].gcells, res[c].ratio, res[c].correct ? "bitwise == host" : "WRONG");
  }
  printf("  goals: 2D >= 245 Gcells/s fp64, >= 460 fp32; 3D >= 0.90 of copy\n");
  printf("  device peak from clocks %.0f GB/s (reference only)\n", peak_GBps);
  if (sweep)
    for (int c = 0; c < nres; ++c) {
      const tsr_stage_cuda_tuning *b = &res[c].best;
      double es = (double)tsr_prec_size(res[c].prec);
      printf("  sweep best %s: %.4f ms (%.3f of copy) with bx3 %d by3 %d chunk3 %d bx2 %d "
             "chunk2 %d tile3 %d chunkt3 %d (0 = default)\n",
             res[c].name, 1e3 * res[c].best_step_s,
             2.0 * es * res[c].cells / res[c].best_step_s / 1e9 / res[c].copy_GBps, b->bx3,
             b->by3, b->chunk3, b->bx2, b->chunk2, b->tile3, b->chunkt3);
    }

  if (json) {
    FILE *fp = fopen(json, "w");
    if (!fp) {
      fprintf(stderr, "gpu_stencil: cannot write %s\n", json);
      return 1;
    }
    const char *commit = getenv("TESSERA_COMMIT");
    fprintf(fp, "{\"bench\": \"gpu_stencil\", \"version\": \"%s\", \"commit\": \"%s\", "
            "\"machine\": \"%s\", \"sms\": %d, \"peak_GBps_from_clocks\": %.1f, \"quick\": %s, "
            "\"cases\": [",
            TSR_VERSION, commit ? commit : "unknown", prop.name, prop.multiProcessorCount,
            peak_GBps, quick ? "true" : "false");
    for (int c = 0; c < nres; ++c) {
      const result *r = &res[c];
      fprintf(fp, "%s{\"case\": \"%s\", \"precision\": \"%s\", \"dim\": %d, \"n\": %d, "
              "\"steps\": %d, \"cells\": %.0f, \"copy_s\": %.6e, \"step_s\": %.6e, "
              "\"copy_GBps\": %.2f, \"stencil_GBps\": %.2f, \"gcells_per_s\": %.4f, "
              "\"ratio\": %.4f, \"correct\": %s",
              c ? ", " : "", r->name, r->prec == TSR_PREC_SINGLE ? "fp32" : "fp64", r->dim, r->n,
              r->steps, r->cells, r->copy_s, r->step_s, r->copy_GBps, r->stencil_GBps, r->gcells,
              r->ratio, r->correct ? "true" : "false");
      if (sweep)
        fprintf(fp, ", \"sweep_best\": {\"step_s\": %.6e, \"bx3\": %d, \"by3\": %d, "
                "\"chunk3\": %d, \"bx2\": %d, \"chunk2\": %d, \"tile3\": %d, \"chunkt3\": %d}",
                r->best_step_s, r->best.bx3, r->best.by3, r->best.chunk3, r->best.bx2,
                r->best.chunk2, r->best.tile3, r->best.chunkt3);
      fprintf(fp, "}");
    }
    fprintf(fp, "]}\n");
    fclose(fp);
  }
  CUDA_OK(cudaStreamDestroy(st));
  return ok ? 0 : 1;
}
