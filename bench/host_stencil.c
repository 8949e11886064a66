/* bench/host_stencil: the 3D heat update (7-point, forward Euler, fp64) on this machine's CPU
 * cores, against the memory copy bandwidth measured in the same run.
 *
 * Bytes per cell for the stencil: one read of u and one write of u_new (16 B), the minimum a
 * cache-blocked stencil can move; copy bandwidth counts read + write bytes the same way.
 *   usage: host_stencil [N=256] [reps=10] [json=path]
 * Prints a table and a JSON record; exits non-zero when the stencil result is wrong. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/models.h"
#include "kernels/stage.h"
#include "tsr_version.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  const char *json = argc > 3 ? argv[3] : NULL;
  if (n < 8 || reps < 1) {
    fprintf(stderr, "usage: host_stencil [N>=8] [reps>=1] [json]\n");
    return 2;
  }
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
  if (reps > 64) reps = 64;
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
  if (json) {
    FILE *fp = fopen(json, "w");
    if (fp) {
      fprintf(fp,
              "{\"bench\": \"host_stencil\", \"version\": \"%s\", \"n\": %d, \"threads\": %d, "
              "\"reps\": %d, \"copy_GBps\": %.4f, \"stencil_GBps\": %.4f, \"cells_per_s\": %.6g, "
              "\"ratio\": %.4f, \"correct\": %s}\n",
              TSR_VERSION, n, threads, reps, copy_bw / 1e9, stencil_bw / 1e9, cps, ratio,
              bad ? "false" : "true");
      fclose(fp);
    }
  }
  tsr_field_destroy(&u);
  tsr_field_destroy(&v);
  return bad ? 1 : 0;
}
