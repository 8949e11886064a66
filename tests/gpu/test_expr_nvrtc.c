/* Case expressions compiled with NVRTC (kernels/expr_cuda) against muparser on the host:
 * every function of the syntax and a few composite expressions with params at 10000 random
 * points in sensible domains agree to 1e-14 relative (CUDA's math library is not glibc's, so
 * not bit for bit; the largest relative difference per function is printed); a polynomial
 * (only + - * /, whose rounding -fmad=false makes C's) over the cells of a box in 2D and 3D
 * and over every face of it is bitwise the host's, coordinates included, with ghosts and
 * other components untouched; plus misuse errors. Rank 0 only (the 2-rank run checks that
 * other ranks stay out of the way); exits non-zero on failure. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/case.h"
#include "io/expr.h"
#include "kernels/expr_cuda.h"
#include "solver/boundary.h"

static int failures;
static char current[200] = "set-up";

#define EXPECT(cond, ...)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      if (failures++ < 30) {                                                                   \
        fprintf(stderr, "%s:%d: [%s] ", __FILE__, __LINE__, current);                          \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, "\n");                                                                 \
      }                                                                                        \
    }                                                                                          \
  } while (0)

#define MUST(expr)                                                                             \
  do {                                                                                         \
    tsr_err e_ = (expr);                                                                       \
    if (e_ != TSR_OK) {                                                                        \
      fprintf(stderr, "[%s] %s failed: %s: %s\n", current, #expr, tsr_err_name(e_),           \
              tsr_err_message());                                                              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

#define CUDA_MUST(expr)                                                                        \
  do {                                                                                         \
    cudaError_t e_ = (expr);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "[%s] %s failed: %s\n", current, #expr, cudaGetErrorString(e_));        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

/* Params; not const, so nothing folds them on the host side either. */
static const char *const PN[] = {"kappa", "a", "b", "y0"};
static double PV[] = {0.7, 2.5, 0.3, 1.25};
static const tsr_expr_env ENV = {4, PN, PV};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * ((double)(rng >> 11) * 0x1.0p-53);
}

/* Domains: x and y uniform in [xlo, xhi] and [ylo, yhi], or log-uniform (positive, many
 * decades) when logx / logy; z in [0.05, 1]. */
typedef struct {
  const char *name, *text;
  double xlo, xhi, ylo, yhi;
  int logx, logy;
  double t;
} fcase;

static const fcase CASES[] = {
    {"sin", "sin(x)", -10, 10, 0, 0, 0, 0, 0},
    {"cos", "cos(x)", -10, 10, 0, 0, 0, 0, 0},
    {"tan", "tan(x)", -1.5, 1.5, 0, 0, 0, 0, 0},
    {"asin", "asin(x)", -1, 1, 0, 0, 0, 0, 0},
    {"acos", "acos(x)", -1, 1, 0, 0, 0, 0, 0},
    {"atan", "atan(x)", -100, 100, 0, 0, 0, 0, 0},
    {"atan2", "atan2(y, x)", -10, 10, -10, 10, 0, 0, 0},
    {"sinh", "sinh(x)", -20, 20, 0, 0, 0, 0, 0},
    {"cosh", "cosh(x)", -20, 20, 0, 0, 0, 0, 0},
    {"tanh", "tanh(x)", -10, 10, 0, 0, 0, 0, 0},
    {"exp", "exp(x)", -50, 50, 0, 0, 0, 0, 0},
    {"log", "log(x)", -20, 14, 0, 0, 1, 0, 0},
    {"log10", "log10(x)", -20, 14, 0, 0, 1, 0, 0},
    {"sqrt", "sqrt(x)", -20, 14, 0, 0, 1, 0, 0},
    {"cbrt", "cbrt(x)", -1e6, 1e6, 0, 0, 0, 0, 0},
    {"fabs", "fabs(x)", -1e3, 1e3, 0, 0, 0, 0, 0},
    {"floor", "floor(x)", -100, 100, 0, 0, 0, 0, 0},
    {"ceil", "ceil(x)", -100, 100, 0, 0, 0, 0, 0},
    {"pow", "pow(x, y)", -5, 2.3, -5, 5, 1, 0, 0},
    {"fmin", "fmin(x, y)", -10, 10, -10, 10, 0, 0, 0},
    {"fmax", "fmax(x, y)", -10, 10, -10, 10, 0, 0, 0},
    {"fmod", "fmod(x, y)", -100, 100, 0.1, 10, 0, 0, 0},
    {"erf", "erf(x)", -5, 5, 0, 0, 0, 0, 0},
    {"arith", "(x*y - 3/x + y/7)*(-x) + -(y - 0.1)", 0.5, 2, 0.5, 2, 0, 0, 0},
    {"heat", "sin(pi*x)*sin(pi*y)*sin(pi*z)*exp(-3*pi*pi*kappa*t)", 0.05, 1, 0.05, 1, 0, 0, 0.37},
    {"gauss", "exp(-(x*x + y*y)/(4*kappa*t))/(4*pi*kappa*t)", 0.05, 1, 0.05, 1, 0, 0, 0.21},
    {"powsum", "pow(x, a) + b*sqrt(y) + y0*cbrt(z)", 0.05, 3, 0.05, 3, 0, 0, 0},
    {"hyp", "cosh(x)/sinh(y + 10) + tanh(z)*tanh(z) + atan2(y, x)*kappa", 0.05, 1, 0.05, 1, 0, 0, 0},
    {"mixed", "fmax(erf(x*t), fmin(y, z)) + log10(1 + x*y) + fmod(x*31, y0) + floor(a*x)", 0.05, 5,
     0.05, 5, 0, 0, 0.83},
};
#define NCASE ((int)(sizeof CASES / sizeof CASES[0]))
#define NPTS 10000

static int agree(double a, double b, double *rel) {
  if (a == b || (isnan(a) && isnan(b))) {
    *rel = 0;
    return 1;
  }
  double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
  *rel = m > 0 ? d / m : d;
  return d <= 1e-14 * m || d <= 1e-300;
}

static void check_functions(tsr_expr_cuda *m, tsr_expr **e) {
  double *hx = malloc(3 * NPTS * sizeof(double)), *hy = hx + NPTS, *hz = hy + NPTS;
  double *got = malloc(NPTS * sizeof(double)), *dx, *dout;
  CUDA_MUST(cudaMalloc((void **)&dx, 3 * NPTS * sizeof(double)));
  CUDA_MUST(cudaMalloc((void **)&dout, NPTS * sizeof(double)));
  printf("%-7s %-12s %-8s  %s\n", "case", "max rel diff", "bitwise", "expression");
  for (int c = 0; c < NCASE; c++) {
    const fcase *fc = &CASES[c];
    snprintf(current, sizeof current, "points: %s", fc->text);
    for (int i = 0; i < NPTS; i++) {
      hx[i] = fc->logx ? exp(uniform(fc->xlo, fc->xhi)) : uniform(fc->xlo, fc->xhi);
      hy[i] = fc->logy ? exp(uniform(fc->ylo, fc->yhi)) : uniform(fc->ylo, fc->yhi);
      hz[i] = uniform(0.05, 1);
    }
    /* the domain's edges, where the functions are least kind */
    if (!strcmp(fc->name, "asin") || !strcmp(fc->name, "acos")) hx[0] = -1, hx[1] = 1, hx[2] = 0;
    CUDA_MUST(cudaMemcpy(dx, hx, 3 * NPTS * sizeof(double), cudaMemcpyHostToDevice));
    MUST(tsr_expr_cuda_eval_points(m, c, NPTS, dx, dx + NPTS, dx + 2 * NPTS, fc->t, dout, 0));
    CUDA_MUST(cudaMemcpy(got, dout, NPTS * sizeof(double), cudaMemcpyDeviceToHost));
    double worst = 0;
    int same = 0;
    for (int i = 0; i < NPTS; i++) {
      double want = tsr_expr_eval(e[c], hx[i], hy[i], hz[i], fc->t), rel;
      int ok = agree(got[i], want, &rel);
      same += !memcmp(&got[i], &want, sizeof want);
      if (rel > worst) worst = rel;
      EXPECT(ok, "at (%.17g, %.17g, %.17g, t=%.17g): device %.17g, host %.17g (rel %.3g)",
             hx[i], hy[i], hz[i], fc->t, got[i], want, rel);
    }
    printf("%-7s %-12.3g %7.2f%%  %s\n", fc->name, worst, 100.0 * same / NPTS, fc->text);
  }
  /* no z: 0 */
  snprintf(current, sizeof current, "points with z NULL");
  MUST(tsr_expr_cuda_eval_points(m, NCASE, 3, dx, dx + NPTS, NULL, 0.5, dout, 0));
  CUDA_MUST(cudaMemcpy(got, dout, 3 * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 3; i++) {
    double want = tsr_expr_eval(e[NCASE], hx[i], hy[i], 0.0, 0.5);
    EXPECT(!memcmp(&got[i], &want, sizeof want), "point %d: device %.17g, host %.17g", i,
           got[i], want);
  }
  cudaFree(dx);
  cudaFree(dout);
  free(hx);
  free(got);
}

/* A polynomial in x, y, z, t (index NCASE) and a second one (NCASE + 1): bitwise. */
static const char *const POLY[2] = {"x*x*y - 3*z*x + 0.5*t*y*y + x/7 - (y - z)*(x + 0.25)",
                                    "kappa*(x - y)*(y + z) - b*t*t/3 + 1e-3"};

static void fill_bytes(tsr_field *f, unsigned char byte) {
  CUDA_MUST(cudaMemset(f->data, byte, (size_t)f->ncomp * f->scomp * sizeof(double)));
}

static void check_cells(tsr_expr_cuda *m, tsr_expr **e, int dim) {
  tsr_case c;
  memset(&c, 0, sizeof c);
  c.dim = dim;
  int cells[3] = {13, 11, dim == 3 ? 9 : 1};
  double lo[3] = {-0.3, 0.1, dim == 3 ? 2.0 : 0.0}, hi[3] = {1.7, 0.9, dim == 3 ? 2.5 : 1.0};
  for (int d = 0; d < 3; d++) c.cells[d] = cells[d], c.lo[d] = lo[d], c.hi[d] = hi[d];
  tsr_expr_grid g = tsr_expr_grid_make(dim, lo, hi, cells, NULL);
  tsr_box box = {{2, 1, dim == 3 ? 3 : 0}, {11, 10, dim == 3 ? 8 : 1}};
  tsr_field *f;
  MUST(tsr_field_create_in(dim, &box, 2, 3, TSR_MEM_DEVICE, &f));
  size_t total = (size_t)f->ncomp * f->scomp;
  double *host = malloc(total * sizeof(double));
  const unsigned char sentinel = 0xA5;
  double t = 0.3;
  for (int q = 0; q < 2; q++) {
    snprintf(current, sizeof current, "cells %dD, expression '%s'", dim, POLY[q]);
    fill_bytes(f, sentinel);
    int comp = q + 1;
    MUST(tsr_expr_cuda_eval_cells(m, NCASE + q, &g, t, NULL, f, comp, NULL, 0));
    CUDA_MUST(cudaMemcpy(host, f->data, total * sizeof(double), cudaMemcpyDeviceToHost));
    int wrong = 0, touched = 0;
    for (int cc = 0; cc < f->ncomp; cc++)
      for (int k = f->gbox.lo[2]; k < f->gbox.hi[2]; k++)
        for (int j = f->gbox.lo[1]; j < f->gbox.hi[1]; j++)
          for (int i = f->gbox.lo[0]; i < f->gbox.hi[0]; i++) {
            const double *v = &host[tsr_field_at(f, cc, i, j, k)];
            int owned = i >= box.lo[0] && i < box.hi[0] && j >= box.lo[1] && j < box.hi[1] &&
                        k >= box.lo[2] && k < box.hi[2];
            if (cc == comp && owned) {
              double want = tsr_expr_eval(e[NCASE + q], tsr_cell_center(&c, 0, i),
                                          tsr_cell_center(&c, 1, j), tsr_cell_center(&c, 2, k), t);
              if (memcmp(v, &want, sizeof want) && wrong++ < 5)
                EXPECT(0, "cell (%d, %d, %d): device %.17g, host %.17g", i, j, k, *v, want);
            } else {
              unsigned char b[sizeof(double)];
              memcpy(b, v, sizeof b);
              for (size_t s = 0; s < sizeof b; s++) touched += b[s] != sentinel;
            }
          }
    EXPECT(!wrong, "%d owned cells differ from the host", wrong);
    EXPECT(!touched, "%d bytes outside the owned cells of component %d were written", touched,
           comp);
  }
  /* misuse */
  snprintf(current, sizeof current, "cells misuse");
  EXPECT(tsr_expr_cuda_eval_cells(m, NCASE + 2, &g, t, NULL, f, 0, NULL, 0) == TSR_ERR_INTERNAL,
         "expression out of range accepted");
  EXPECT(tsr_expr_cuda_eval_cells(m, 0, &g, t, NULL, f, 3, NULL, 0) == TSR_ERR_INTERNAL,
         "component out of range accepted");
  tsr_field *hf;
  MUST(tsr_field_create(dim, &box, 1, 1, &hf));
  EXPECT(tsr_expr_cuda_eval_cells(m, 0, &g, t, NULL, hf, 0, NULL, 0) == TSR_ERR_STATE,
         "host field accepted");
  tsr_field_destroy(&hf);

  /* faces: every side of the box, as solver/boundary.c evaluates them; a third component
   * without expression gives 0 */
  for (int d = 0; d < dim; d++)
    for (int side = 0; side < 2; side++) {
      snprintf(current, sizeof current, "face %dD axis %d side %d", dim, d, side);
      tsr_bc_face fi = {.axis = d, .side = side, .type = TSR_GHOST_DIRICHLET};
      fi.t1 = (d + 1) % 3;
      fi.t2 = (d + 2) % 3;
      fi.n1 = tsr_box_len(&box, fi.t1);
      fi.n2 = tsr_box_len(&box, fi.t2);
      fi.h = g.h[d];
      int ncomp = 3, idx[3] = {NCASE, NCASE + 1, -1};
      size_t n = (size_t)fi.n1 * fi.n2;
      double *dv, *hv = malloc(ncomp * n * sizeof(double));
      CUDA_MUST(cudaMalloc((void **)&dv, ncomp * n * sizeof(double)));
      CUDA_MUST(cudaMemset(dv, sentinel, ncomp * n * sizeof(double)));
      MUST(tsr_expr_cuda_eval_face(m, idx, ncomp, &fi, &box, &g, t, NULL, dv, 0));
      CUDA_MUST(cudaMemcpy(hv, dv, ncomp * n * sizeof(double), cudaMemcpyDeviceToHost));
      int wrong = 0;
      double xyz[3];
      xyz[d] = d < c.dim ? (side == 0 ? c.lo[d] : c.hi[d]) : 0.0;
      for (int q = 0; q < ncomp; q++)
        for (int b = 0; b < fi.n2; b++)
          for (int a = 0; a < fi.n1; a++) {
            xyz[fi.t1] = tsr_cell_center(&c, fi.t1, box.lo[fi.t1] + a);
            xyz[fi.t2] = tsr_cell_center(&c, fi.t2, box.lo[fi.t2] + b);
            double want = idx[q] >= 0 ? tsr_expr_eval(e[idx[q]], xyz[0], xyz[1], xyz[2], t) : 0.0;
            double got = hv[q * n + (size_t)b * fi.n1 + a];
            if (memcmp(&got, &want, sizeof want) && wrong++ < 5)
              EXPECT(0, "comp %d point (%d, %d): device %.17g, host %.17g", q, a, b, got, want);
          }
      EXPECT(!wrong, "%d face values differ from the host", wrong);
      int bad[2] = {NCASE + 2, 0};
      EXPECT(tsr_expr_cuda_eval_face(m, bad, 2, &fi, &box, &g, t, NULL, dv, 0) == TSR_ERR_INTERNAL,
             "expression out of range accepted");
      EXPECT(tsr_expr_cuda_eval_face(m, idx, 5, &fi, &box, &g, t, NULL, dv, 0) == TSR_ERR_INTERNAL,
             "5 components accepted");
      cudaFree(dv);
      free(hv);
    }
  free(host);
  tsr_field_destroy(&f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    int ndev = 0;
    CUDA_MUST(cudaGetDeviceCount(&ndev));
    CUDA_MUST(cudaSetDevice(0));
    tsr_expr *e[NCASE + 2];
    for (int c = 0; c < NCASE + 2; c++) {
      const char *text = c < NCASE ? CASES[c].text : POLY[c - NCASE];
      snprintf(current, sizeof current, "compile '%s'", text);
      MUST(tsr_expr_compile(text, &ENV, &e[c], NULL));
    }
    snprintf(current, sizeof current, "build");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tsr_expr_cuda *m;
    MUST(tsr_expr_cuda_build(NCASE + 2, (const tsr_expr *const *)e, &ENV, &m));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("NVRTC build of %d expressions: %.3f s\n", NCASE + 2,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    check_functions(m, e);
    check_cells(m, e, 3);
    check_cells(m, e, 2);
    snprintf(current, sizeof current, "points misuse");
    EXPECT(tsr_expr_cuda_eval_points(m, -1, 0, NULL, NULL, NULL, 0, NULL, 0) == TSR_ERR_INTERNAL,
           "expression -1 accepted");
    CUDA_MUST(cudaDeviceSynchronize());
    tsr_expr_cuda_destroy(&m);
    EXPECT(m == NULL, "destroy did not clear the handle");
    for (int c = 0; c < NCASE + 2; c++) tsr_expr_destroy(&e[c]);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}
