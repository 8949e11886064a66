/* bench/host_source: what a time-dependent source costs on CPU ranks, against the stencil.
 *
 * cases/heat3d.yaml (its source, params and grid; cells set to N^3) on one rank's box: one
 * forward-Euler heat stage without a source (the stencil's own cost), the same stage reading a
 * source field, and the source's evaluation into that field three ways: tsr_expr_eval_grid
 * (what the host backend runs), muparser point by point row by row (what it ran before), and
 * muparser's bulk mode (mupEvalBulk, its own OpenMP; the alternative considered, timed only;
 * every variable must then be an array over all cells, t too, filled outside the timing).
 * All variants run in turn within each repetition (interleaved, so that load from other
 * processes falls on all of them alike); medians are reported.
 *   usage: host_source [N,N,...=64,128] [reps=7] [json=path]
 * Prints a table per N and one JSON record per N (a JSON array in the file); exits non-zero
 * when the grid evaluation differs from muparser point by point anywhere (every cell is
 * compared, bit for bit). */
#include <math.h>
#include <muParserDLL.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/case.h"
#include "io/case_expr.h"
#include "io/expr.h"
#include "kernels/models.h"
#include "kernels/stage.h"
#include "solver/boundary.h"
#include "tsr_version.h"

enum { V_STAGE, V_STAGE_SRC, V_GRID, V_POINT, V_BULK, NV };
static const char *const VNAME[NV] = {"stage, no source", "stage reading a source",
                                      "source: eval_grid (now)", "source: muparser per point",
                                      "source: muparser bulk"};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  int n;
  double med[NV]; /* seconds */
  int bad;
} result;

static int run(int n, int reps, result *r) {
  char src[1024], cells[64];
  snprintf(src, sizeof src, "%s/cases/heat3d.yaml", TSR_BENCH_SOURCE);
  snprintf(cells, sizeof cells, "grid.cells=[%d,%d,%d]", n, n, n);
  char *ov[1] = {cells};
  tsr_case *c = NULL;
  tsr_expr *e = NULL;
  if (tsr_case_load(src, 1, ov, &c) || tsr_case_compile(c, &c->source[0], &e)) {
    fprintf(stderr, "host_source: %s\n", tsr_err_message());
    return 1;
  }
  int cells3[3] = {n, n, n};
  tsr_box box = tsr_box_make(3, cells3);
  tsr_field *u = NULL, *v = NULL, *s = NULL;
  if (tsr_field_create(3, &box, 1, 1, &u) || tsr_field_create(3, &box, 1, 1, &v) ||
      tsr_field_create(3, &box, 1, 1, &s)) {
    fprintf(stderr, "host_source: %s\n", tsr_err_message());
    return 1;
  }
  size_t len = (size_t)u->scomp, ncell = (size_t)n * n * n;
  double *ud = u->data, *vd = v->data, *sd = s->data;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < len; ++i) ud[i] = sin(0.001 * (double)i), vd[i] = sd[i] = 0.0;
  double h[3];
  for (int d = 0; d < 3; ++d) h[d] = (c->hi[d] - c->lo[d]) / n;
  tsr_stage_desc d = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 1e-6, {0}};
  tsr_stage_coef_init(&d.coef, TSR_MODEL_HEAT, c->param_value, h, u);

  /* the grid, as solver/backend_host.c builds it: the source field's owned cells in place */
  double *xyz = malloc(3 * (size_t)n * sizeof *xyz);
  double *row = malloc(3 * (size_t)n * sizeof *row), *point = malloc(ncell * sizeof *point);
  /* muparser bulk: every variable is an array over the cells, t included (bulk mode reads
   * each variable at the cell's offset) */
  double *bx = malloc(4 * ncell * sizeof *bx), *bulk = malloc(ncell * sizeof *bulk);
  if (!xyz || !row || !point || !bx || !bulk) {
    fprintf(stderr, "host_source: out of memory\n");
    return 1;
  }
  tsr_expr_points g;
  for (int a = 0; a < 3; ++a) {
    g.n[a] = n;
    g.coord[a] = xyz + (size_t)a * n;
    for (int i = 0; i < n; ++i) xyz[(size_t)a * n + i] = tsr_cell_center(c, a, i);
  }
  g.stride[0] = 1, g.stride[1] = s->sy, g.stride[2] = s->sz;
  double *s0 = sd + tsr_field_at(s, 0, 0, 0, 0);
  for (size_t q = 0; q < ncell; ++q) {
    bx[q] = xyz[q % n];
    bx[ncell + q] = xyz[n + (q / n) % n];
    bx[2 * ncell + q] = xyz[2 * n + q / ((size_t)n * n)];
  }
  muParserHandle_t mp = mupCreate(muBASETYPE_FLOAT);
  mupDefineConst(mp, "kappa", c->param_value[0]);
  mupDefineBulkVar(mp, "x", bx);
  mupDefineBulkVar(mp, "y", bx + ncell);
  mupDefineBulkVar(mp, "z", bx + 2 * ncell);
  mupDefineBulkVar(mp, "t", bx + 3 * ncell);
  mupSetExpr(mp, "(3*_pi*_pi*kappa - 1)*exp(-t)*sin(_pi*x)*sin(_pi*y)*sin(_pi*z)");

  double tm[NV][64];
  if (reps > 64) reps = 64;
  r->n = n;
  r->bad = 0;
  for (int rep = -1; rep < reps; ++rep) {
    double t = 0.01 * (rep + 2), t0, t1; /* a new time each repetition, as at each stage */
    for (size_t q = 0; q < ncell; ++q) bx[3 * ncell + q] = t; /* not timed: bulk's favour */
    for (int k = 0; k < NV; ++k) {
      t0 = now();
      switch (k) {
      case V_STAGE: tsr_stage_host(&d, &box, u, NULL, NULL, NULL, v); break;
      case V_STAGE_SRC: tsr_stage_host(&d, &box, u, NULL, NULL, s, v); break;
      case V_GRID:
        if (tsr_expr_eval_grid(e, &g, t, s0)) {
          fprintf(stderr, "host_source: %s\n", tsr_err_message());
          return 1;
        }
        break;
      case V_POINT: /* the host backend before: rows through tsr_expr_eval_many */
        for (int kk = 0; kk < n; ++kk)
          for (int j = 0; j < n; ++j) {
            for (int i = 0; i < n; ++i) row[n + i] = xyz[n + j], row[2 * n + i] = xyz[2 * n + kk];
            tsr_expr_eval_many(e, (size_t)n, xyz, row + n, row + 2 * n, t,
                               point + ((size_t)kk * n + j) * n);
          }
        break;
      case V_BULK:
        mupEvalBulk(mp, bulk, (int)ncell);
        break;
      }
      t1 = now();
      if (rep >= 0) tm[k][rep] = t1 - t0;
    }
    /* every cell of this repetition: the grid evaluation gives muparser's bits */
    for (int kk = 0; kk < n; ++kk)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          double a = s0[kk * s->sz + j * s->sy + i], b = point[((size_t)kk * n + j) * n + i];
          if (memcmp(&a, &b, sizeof a)) r->bad++;
        }
  }
  if (mupError(mp)) {
    fprintf(stderr, "host_source: muparser bulk: %s\n", mupGetErrorMsg(mp));
    return 1;
  }
  for (int k = 0; k < NV; ++k) {
    qsort(tm[k], (size_t)reps, sizeof(double), cmp);
    r->med[k] = tm[k][reps / 2];
  }
  mupRelease(mp);
  free(xyz), free(row), free(point), free(bx), free(bulk);
  tsr_field_destroy(&u), tsr_field_destroy(&v), tsr_field_destroy(&s);
  tsr_expr_destroy(&e);
  tsr_case_destroy(&c);
  return 0;
}

/* What a source costs per stage: its evaluation plus the stage's extra work to read it. */
static double source_cost(const result *r, int how) {
  return r->med[how] + r->med[V_STAGE_SRC] - r->med[V_STAGE];
}

int main(int argc, char **argv) {
  const char *sizes = argc > 1 ? argv[1] : "64,128";
  int reps = argc > 2 ? atoi(argv[2]) : 7;
  const char *json = argc > 3 ? argv[3] : NULL;
  result res[8];
  int nres = 0, bad = 0;
  for (const char *p = sizes; *p && nres < 8;) {
    int n = atoi(p);
    if (n < 8 || reps < 1) {
      fprintf(stderr, "usage: host_source [N>=8,...] [reps>=1] [json]\n");
      return 2;
    }
    if (run(n, reps, &res[nres])) return 1;
    bad |= res[nres].bad != 0;
    nres++;
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  int threads = omp_get_max_threads();
  FILE *fp = json ? fopen(json, "w") : NULL;
  if (json && !fp) fprintf(stderr, "host_source: cannot write %s\n", json);
  if (fp) fprintf(fp, "[\n");
  for (int q = 0; q < nres; ++q) {
    const result *r = &res[q];
    double cells = (double)r->n * r->n * r->n;
    printf("host_source: cases/heat3d.yaml source, heat stage (forward Euler, fp64), %d^3, "
           "%d threads, %d reps (median, interleaved)\n", r->n, threads, reps);
    printf("  %-28s %10s %12s\n", "", "ms", "Mcells/s");
    for (int k = 0; k < NV; ++k)
      printf("  %-28s %10.3f %12.1f\n", VNAME[k], 1e3 * r->med[k], cells / r->med[k] / 1e6);
    double st = r->med[V_STAGE];
    printf("  stage + source (now)    %8.1f Mcells/s; source / stencil cost = %.3f (goal <= 1)\n",
           cells / (st + source_cost(r, V_GRID)) / 1e6, source_cost(r, V_GRID) / st);
    printf("  stage + source (before) %8.1f Mcells/s; source / stencil cost = %.3f\n",
           cells / (st + source_cost(r, V_POINT)) / 1e6, source_cost(r, V_POINT) / st);
    printf("  stage + source (bulk)   %8.1f Mcells/s; source / stencil cost = %.3f\n",
           cells / (st + source_cost(r, V_BULK)) / 1e6, source_cost(r, V_BULK) / st);
    printf("  grid evaluation == muparser per point: %s\n",
           r->bad ? "NO, RESULT WRONG" : "yes, every cell bit for bit");
    if (fp)
      fprintf(fp,
              "  {\"bench\": \"host_source\", \"version\": \"%s\", \"commit\": \"%s\", \"n\": %d, "
              "\"threads\": %d, \"reps\": %d, \"stage_s\": %.6g, \"stage_src_s\": %.6g, "
              "\"eval_grid_s\": %.6g, \"eval_point_s\": %.6g, \"eval_bulk_s\": %.6g, "
              "\"cells_per_s_stage\": %.6g, \"cells_per_s_with_source\": %.6g, "
              "\"cells_per_s_with_source_before\": %.6g, \"source_over_stencil\": %.4f, "
              "\"source_over_stencil_before\": %.4f, \"source_over_stencil_bulk\": %.4f, "
              "\"correct\": %s}%s\n",
              TSR_VERSION, TSR_BENCH_COMMIT, r->n, threads, reps, st, r->med[V_STAGE_SRC],
              r->med[V_GRID], r->med[V_POINT], r->med[V_BULK], cells / st,
              cells / (st + source_cost(r, V_GRID)), cells / (st + source_cost(r, V_POINT)),
              source_cost(r, V_GRID) / st, source_cost(r, V_POINT) / st,
              source_cost(r, V_BULK) / st, r->bad ? "false" : "true", q + 1 < nres ? "," : "");
  }
  if (fp) {
    fprintf(fp, "]\n");
    fclose(fp);
  }
  return bad ? 1 : 0;
}
