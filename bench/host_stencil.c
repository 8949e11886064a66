/* bench/host_stencil: the 3D heat update (7-point, forward Euler, fp64) on this machine's CPU
 * cores, against the memory copy bandwidth measured in the same run.
 *
 * Bytes per cell for the stencil: one read of u and one write of u_new (16 B), the minimum a
 * cache-blocked stencil can move; copy bandwidth counts read + write bytes the same way.
 *
 * Then fusion (issue 21, time.fuse): heat forward Euler in 2D and 3D, cells x steps / s with
 * one step per pass (tsr_stage_host, m = 1) and m = 2, 3, 4, 6, 8 steps per pass
 * (tsr_steps_host), against the streaming limit that a copy of the same field sets (copy GB/s
 * / 16 B per cell and step), with the bytes per cell and step the time implies at copy speed.
 * Every m is checked bit for bit against m stage-by-stage steps.
 *   usage: host_stencil [N=256] [reps=10] [json=path] [n2=4096] [n3=N] [prec=double|single]
 *                       [tile=x,y,z] [fuse=1|0]
 * Prints tables and a JSON record; exits non-zero when a result is wrong. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/models.h"
#include "kernels/stage.h"
#include "kernels/steps.h"
#include "tsr_version.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of all the process's threads: what the work cost, whatever else the cores ran */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define NFUSE 6
static const int fuse_m[NFUSE] = {1, 2, 3, 4, 6, 8};
#define FUSE_STEPS 24 /* a multiple of every m above */

typedef struct {
  int dim, n, ok;
  double copy_bw, rate[NFUSE]; /* copy GB/s (read + write); cells x steps / s per m */
  double cpu_rate[NFUSE];      /* cells x steps per CPU second (all threads) */
} fuse_result;

/* The cells of box in a and b hold the same bytes. */
static int same_box(const tsr_field *a, const tsr_field *b, const tsr_box *r) {
  size_t es = tsr_prec_size(a->prec), len = (size_t)tsr_box_len(r, 0) * es;
  for (int k = r->lo[2]; k < r->hi[2]; ++k)
    for (int j = r->lo[1]; j < r->hi[1]; ++j) {
      ptrdiff_t o = tsr_field_at(a, 0, r->lo[0], j, k);
      if (memcmp((char *)a->data + o * es, (char *)b->data + o * es, len)) return 0;
    }
  return 1;
}

/* Heat forward Euler on an n^dim box whose sides are all exchanged (a periodic rank's: the
 * region is the box, the ghosts TSR_STEPS_MAX deep): FUSE_STEPS steps per repetition with
 * each m and one copy of the field, in turns within a repetition so that other jobs' load
 * falls on all alike; medians. */
static int fuse_bench(int dim, int n, int reps, tsr_prec prec, fuse_result *res) {
  int cells[3] = {n, n, dim == 3 ? n : 1};
  tsr_box box = tsr_box_make(dim, cells);
  tsr_field *f[4] = {0};
  for (int i = 0; i < 4; ++i)
    if (tsr_field_create_as(dim, &box, TSR_STEPS_MAX, 1, TSR_MEM_HOST, prec, &f[i])) {
      fprintf(stderr, "host_stencil: %s\n", tsr_err_message());
      for (int j = 0; j < i; ++j) tsr_field_destroy(&f[j]);
      return 1;
    }
  const size_t len = (size_t)f[0]->scomp, es = tsr_prec_size(prec);
  for (int i = 0; i < 2; ++i) {
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < len; ++j) tsr_field_set(f[i], (ptrdiff_t)j, sin(0.001 * (double)j));
  }
  double h[3] = {1.0 / n, 1.0 / n, 1.0 / n}, kappa = 1.0;
  tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.1 / (2.0 * dim * n * n), {0}};
  tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, &kappa, h, f[0]);
  double tc[64], ts[NFUSE][64], tu[NFUSE][64];
  for (int r = -1; r < reps; ++r) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < len * es; i += 4096) {
      size_t m = len * es - i < 4096 ? len * es - i : 4096;
      memcpy((char *)f[1]->data + i, (char *)f[0]->data + i, m);
    }
    double t1 = now();
    if (r >= 0) tc[r] = t1 - t0;
    for (int q = 0; q < NFUSE; ++q) {
      const int m = fuse_m[q];
      tsr_field *a = f[0], *b = f[1];
      double u0 = cpu_now();
      t0 = now();
      for (int s = 0; s < FUSE_STEPS; s += m) {
        if (m == 1) tsr_stage_host(&d, &box, a, NULL, NULL, NULL, b);
        else tsr_steps_host(&d, m, 1, &box, NULL, a, NULL, b);
        tsr_field *x = a;
        a = b;
        b = x;
      }
      t1 = now();
      if (r >= 0) ts[q][r] = t1 - t0, tu[q][r] = cpu_now() - u0;
    }
  }
  /* the bits: m stage-by-stage steps over the box grown by (m - l) at step l, against one pass */
  res->ok = 1;
  for (int q = 1; q < NFUSE; ++q) {
    const int m = fuse_m[q];
    memcpy(f[2]->data, f[0]->data, len * es);
    tsr_field *a = f[2], *b = f[3];
    for (int l = 1; l <= m; ++l) {
      tsr_box g = tsr_box_grow(&box, dim, m - l);
      tsr_stage_host(&d, &g, a, NULL, NULL, NULL, b);
      tsr_field *x = a;
      a = b;
      b = x;
    }
    tsr_steps_host(&d, m, 1, &box, NULL, f[0], NULL, f[1]);
    if (!same_box(a, f[1], &box)) res->ok = 0;
  }
  qsort(tc, (size_t)reps, sizeof(double), cmp);
  res->dim = dim;
  res->n = n;
  res->copy_bw = 2.0 * (double)(len * es) / tc[reps / 2];
  const double work = (double)tsr_box_cells(&box) * FUSE_STEPS;
  for (int q = 0; q < NFUSE; ++q) {
    qsort(ts[q], (size_t)reps, sizeof(double), cmp);
    res->rate[q] = work / ts[q][reps / 2];
    qsort(tu[q], (size_t)reps, sizeof(double), cmp);
    res->cpu_rate[q] = work / tu[q][reps / 2];
  }
  for (int i = 0; i < 4; ++i) tsr_field_destroy(&f[i]);
  return 0;
}

static void fuse_print(const fuse_result *r, tsr_prec prec, int reps) {
  const double es = (double)tsr_prec_size(prec), limit = r->copy_bw / (2.0 * es);
  printf("\nfusion: %dD heat, forward Euler, %s, %d^%d, %d threads, %d steps x %d reps (median)\n",
         r->dim, prec == TSR_PREC_SINGLE ? "fp32" : "fp64", r->n, r->dim, omp_get_max_threads(),
         FUSE_STEPS, reps);
  printf("  copy %.2f GB/s: streaming limit %.3f Gcells/s (%.0f B per cell and step)\n",
         r->copy_bw / 1e9, limit / 1e9, 2.0 * es);
  printf("  %-16s %14s %8s %8s %12s %16s\n", "steps per pass", "Gcells*steps/s", "/ m=1",
         "/ limit", "B/cell/step", "per CPU-s (/m=1)");
  for (int q = 0; q < NFUSE; ++q)
    printf("  %-16d %14.3f %8.2f %8.2f %12.2f %9.3f (%.2f)\n", fuse_m[q], r->rate[q] / 1e9,
           r->rate[q] / r->rate[0], r->rate[q] / limit, r->copy_bw / r->rate[q],
           r->cpu_rate[q] / 1e9, r->cpu_rate[q] / r->cpu_rate[0]);
  if (!r->ok) printf("  RESULT WRONG: a fused pass differs from the stage-by-stage steps\n");
}

int main(int argc, char **argv) {
  int n = 256, reps = 10, n2 = 4096, n3 = 0, fuse = 1, tile[3] = {0, 0, 0}, pos = 0;
  const char *json = NULL;
  tsr_prec prec = TSR_PREC_DOUBLE;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strncmp(a, "n2=", 3)) n2 = atoi(a + 3);
    else if (!strncmp(a, "n3=", 3)) n3 = atoi(a + 3);
    else if (!strncmp(a, "fuse=", 5)) fuse = atoi(a + 5);
    else if (!strcmp(a, "prec=single")) prec = TSR_PREC_SINGLE;
    else if (!strcmp(a, "prec=double")) prec = TSR_PREC_DOUBLE;
    else if (!strncmp(a, "tile=", 5)) sscanf(a + 5, "%d,%d,%d", &tile[0], &tile[1], &tile[2]);
    else if (strchr(a, '=')) {
      fprintf(stderr, "host_stencil: unknown option %s (n2=, n3=, prec=, tile=, fuse=)\n", a);
      return 2;
    } else if (pos == 0) n = atoi(a), pos++;
    else if (pos == 1) reps = atoi(a), pos++;
    else json = a, pos++;
  }
  if (!n3) n3 = n;
  int cells3[3] = {n, n, n};
  tsr_box box = tsr_box_make(3, cells3);
  tsr_field *u = NULL, *v = NULL;
  if (tsr_field_create(3, &box, 1, 1, &u) || tsr_field_create(3, &box, 1, 1, &v)) {
    fprintf(stderr, "host_stencil: %s\n", tsr_err_message());
    return 1;
  }
  size_t len = (size_t)u->scomp;
  double *ud = u->data, *vd = v->data;
  /* first touch by the threads that will use the pages */
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < len; ++i) {
    ud[i] = sin(0.001 * (double)i);
    vd[i] = 0.0;
  }
  double h[3] = {1.0 / n, 1.0 / n, 1.0 / n}, kappa = 1.0;
  tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.1 / (6.0 * n * n), {0}};
  tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, &kappa, h, u);

  /* ceiling: copy of the same field size, read + write */
  double tc[64], ts[64];
  for (int r = -1; r < reps; ++r) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < len; ++i) vd[i] = ud[i];
    double t1 = now();
    if (r >= 0) tc[r] = t1 - t0;
  }
  for (int r = -1; r < reps; ++r) {
    double t0 = now();
    tsr_stage_host(&d, &box, u, NULL, NULL, NULL, v);
    double t1 = now();
    if (r >= 0) ts[r] = t1 - t0;
  }
  /* check against a plain serial evaluation at sampled cells */
  int bad = 0;
  for (int s = 0; s < 1000; ++s) {
    int i = 1 + (s * 7919) % (n - 2), j = 1 + (s * 104729) % (n - 2), k = 1 + (s * 1299709) % (n - 2);
    const double *p = ud + tsr_field_at(u, 0, i, j, k);
    double l = (p[-1] - 2.0 * p[0] + p[1]) * d.coef.ih2[0];
    l = l + (p[-u->sy] - 2.0 * p[0] + p[u->sy]) * d.coef.ih2[1];
    l = l + (p[-u->sz] - 2.0 * p[0] + p[u->sz]) * d.coef.ih2[2];
    double want = p[0] + d.dt * (kappa * l);
    if (vd[tsr_field_at(v, 0, i, j, k)] != want) bad++;
  }
  qsort(tc, (size_t)reps, sizeof(double), cmp);
  qsort(ts, (size_t)reps, sizeof(double), cmp);
  double copy_bw = 2.0 * (double)len * 8.0 / tc[reps / 2];
  double cells = (double)n * n * n;
  double cps = cells / ts[reps / 2];
  double stencil_bw = cps * 16.0;
  double ratio = stencil_bw / copy_bw;
  int threads = omp_get_max_threads();
  printf("host_stencil: 3D heat, 7-point, forward Euler, fp64, %d^3, %d threads, %d reps (median)\n",
         n, threads, reps);
  printf("  %-28s %12s %12s\n", "", "GB/s", "Gcells/s");
  printf("  %-28s %12.2f %12s\n", "copy (read + write)", copy_bw / 1e9, "-");
  printf("  %-28s %12.2f %12.3f\n", "stencil (16 B/cell)", stencil_bw / 1e9, cps / 1e9);
  printf("  stencil / copy bandwidth = %.3f (goal >= 0.70)%s\n", ratio,
         bad ? "  RESULT WRONG" : "");
  tsr_field_destroy(&u);
  tsr_field_destroy(&v);

  fuse_result fr[2];
  int nfr = 0;
  if (fuse)
    for (int dim = 2; dim <= 3; ++dim) {
      if (fuse_bench(dim, dim == 2 ? n2 : n3, reps, prec, &fr[nfr])) return 1;
      fuse_print(&fr[nfr], prec, reps);
      if (!fr[nfr].ok) bad++;
      nfr++;
    }
  if (json) {
    FILE *fp = fopen(json, "w");
    if (fp) {
      fprintf(fp,
              "{\"bench\": \"host_stencil\", \"version\": \"%s\", \"n\": %d, \"threads\": %d, "
              "\"reps\": %d, \"copy_GBps\": %.4f, \"stencil_GBps\": %.4f, \"cells_per_s\": %.6g, "
              "\"ratio\": %.4f, \"correct\": %s, \"fuse_prec\": \"%s\", \"fuse\": [",
              TSR_VERSION, n, threads, reps, copy_bw / 1e9, stencil_bw / 1e9, cps, ratio,
              bad ? "false" : "true", prec == TSR_PREC_SINGLE ? "single" : "double");
      for (int i = 0; i < nfr; ++i) {
        const double limit = fr[i].copy_bw / (2.0 * (double)tsr_prec_size(prec));
        fprintf(fp, "%s{\"dim\": %d, \"n\": %d, \"copy_GBps\": %.4f, \"limit_cells_per_s\": %.6g, "
                    "\"correct\": %s, \"m\": [",
                i ? ", " : "", fr[i].dim, fr[i].n, fr[i].copy_bw / 1e9, limit,
                fr[i].ok ? "true" : "false");
        for (int q = 0; q < NFUSE; ++q)
          fprintf(fp, "%s{\"m\": %d, \"cells_steps_per_s\": %.6g, \"vs_m1\": %.4f, "
                      "\"vs_limit\": %.4f, \"bytes_per_cell_step\": %.3f, \"cells_steps_per_cpu_s\": %.6g}",
                  q ? ", " : "", fuse_m[q], fr[i].rate[q], fr[i].rate[q] / fr[i].rate[0],
                  fr[i].rate[q] / limit, fr[i].copy_bw / fr[i].rate[q], fr[i].cpu_rate[q]);
        fprintf(fp, "]}");
      }
      fprintf(fp, "]}\n");
      fclose(fp);
    }
  }
  return bad ? 1 : 0;
}
