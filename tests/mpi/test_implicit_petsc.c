/* Method implicit's operator (solver/implicit/operator.h) on 1 to 4 ranks: the assembled
 * Jacobian against central differences of the right-hand side, J v against (F(U + h v) -
 * F(U - h v)) / 2h for random U and v, for every model with an implicit form (heat,
 * advection_diffusion, allen_cahn, gray_scott), in 2D and 3D, with every boundary type
 * (Dirichlet and Neumann values that depend on x, y, z; periodic axes; a mix), for the whole
 * right-hand side and for ARKIMEX's two parts, which must add up to it. A wrong stencil
 * weight, sign of a boundary mirror, ghost column across ranks or periodic faces, or a
 * missing partial shows as a difference far above the tolerance (1e-6 relative; the
 * differences' own error is about 1e-9). Exits non-zero (MPI_Abort) on a failure. */
#include <math.h>
#include <mpi.h>
#include <petscmat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case.h"
#include "solver/implicit/implicit.h"
#include "solver/implicit/operator.h"

static int g_rank, g_size;
#include "tests/check.h"

static const char *const models[] = {
    "model: heat\nparams: {kappa: 0.7}\ninitial: {u: \"0\"}\n",
    "model: advection_diffusion\nparams: {kappa: 0.05, vx: 1.3, vy: -0.6, vz: 0.4}\n"
    "initial: {u: \"0\"}\nsource: {u: \"x*y\"}\n",
    "model: allen_cahn\nparams: {eps: 0.1, gamma: 2.0}\ninitial: {u: \"0\"}\n",
    "model: gray_scott\nparams: {Du: 0.02, Dv: 0.01, F: 0.04, k: 0.06}\n"
    "initial: {u: \"0\", v: \"0\"}\n",
};

/* boundary sets: all Dirichlet, all Neumann, all periodic, and a mix */
static const char *const bcs[] = {
    "boundary: {default: {type: dirichlet, value: \"1 + 0.5*x - y\"}}\n",
    "boundary: {default: {type: neumann, value: \"0.3*x + y\"}}\n",
    "grid_periodic: true\n",
    "boundary: {xlo: {type: periodic}, ylo: {type: neumann, value: \"x\"}, "
    "yhi: {type: dirichlet, value: \"0.2\"}, default: {type: dirichlet, value: \"y\"}}\n",
};

static double urand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (double)((*s >> 8) & 0xffffff) / 16777216.0;
}

/* fills v with values in [lo, lo + w) from a stream that depends on the rank */
static void fill_random(Vec v, unsigned seed, double lo, double w) {
  PetscInt n;
  PetscScalar *a;
  VecGetLocalSize(v, &n);
  VecGetArray(v, &a);
  unsigned s = seed * 7919u + (unsigned)g_rank * 104729u;
  for (PetscInt i = 0; i < n; ++i) a[i] = lo + w * urand(&s);
  VecRestoreArray(v, &a);
}

static double vmax(Vec v) {
  PetscReal r;
  VecNorm(v, NORM_INFINITY, &r);
  return r;
}

static void check_case(const char *text, const char *label) {
  tsr_case *c = NULL;
  CHECK(tsr_case_load_string(label, text, 0, NULL, &c) == TSR_OK, "case %s", label);
  tsr_run_ctx x;
  tsr_run_opts ro = tsr_run_opts_default();
  ro.write_output = 0;
  ro.quiet = 1;
  tsr_run_ctx_init(&x, c, MPI_COMM_WORLD, &ro);
  CHECK(tsr_run_setup(&x) == TSR_OK, "setup %s", label);
  tsr_implicit_op *op = NULL;
  CHECK(tsr_implicit_op_create(&x, &op) == TSR_OK, "operator %s", label);
  Vec U, V, Up, Um, Fp, Fm, Jv, F[3];
  Mat J;
  CHECK(tsr_implicit_op_vec(op, &U) == TSR_OK, "vec");
  VecDuplicate(U, &V);
  VecDuplicate(U, &Up);
  VecDuplicate(U, &Um);
  VecDuplicate(U, &Fp);
  VecDuplicate(U, &Fm);
  VecDuplicate(U, &Jv);
  for (int p = 0; p < 3; ++p) VecDuplicate(U, &F[p]);
  CHECK(tsr_implicit_op_mat(op, &J) == TSR_OK, "mat");
  const double t = 0.3, h = 1e-6;
  for (int trial = 0; trial < 2; ++trial) {
    fill_random(U, 11u + trial, 0.2, 0.6);
    fill_random(V, 23u + trial, -1.0, 2.0);
    for (int p = 0; p < 3; ++p) {
      tsr_implicit_part part = (tsr_implicit_part)p;
      CHECK(tsr_implicit_op_rhs(op, part, t, U, F[p]) == TSR_OK, "rhs");
      CHECK(tsr_implicit_op_jacobian(op, part, t, U, J) == TSR_OK, "jacobian");
      MatMult(J, V, Jv);
      VecWAXPY(Up, h, V, U);
      VecWAXPY(Um, -h, V, U);
      CHECK(tsr_implicit_op_rhs(op, part, t, Up, Fp) == TSR_OK, "rhs+");
      CHECK(tsr_implicit_op_rhs(op, part, t, Um, Fm) == TSR_OK, "rhs-");
      VecAXPY(Fp, -1.0, Fm);
      VecScale(Fp, 1.0 / (2.0 * h)); /* the central difference */
      double scale = vmax(Jv) + 1.0;
      VecAXPY(Fp, -1.0, Jv);
      double err = vmax(Fp) / scale;
      CHECK(err < 1e-6, "%s part %d trial %d: |J v - FD| / (|J v| + 1) = %.3g", label, p, trial,
            err);
    }
    /* the two parts of ARKIMEX add up to the whole */
    VecAXPY(F[1], 1.0, F[2]);
    VecAXPY(F[1], -1.0, F[0]);
    double split = vmax(F[1]) / (vmax(F[0]) + 1.0);
    CHECK(split < 1e-12, "%s: stiff + nonstiff - full = %.3g", label, split);
  }
  /* the Jacobian's rows: one block of ncomp per cell, the stencil's columns at most */
  MatInfo info;
  MatGetInfo(J, MAT_GLOBAL_SUM, &info);
  PetscInt N;
  MatGetSize(J, &N, NULL);
  CHECK(info.nz_used <= (double)N * (2 * c->dim + 1) * c->ncomp, "%s: %g nonzeros", label,
        info.nz_used);
  VecDestroy(&U);
  VecDestroy(&V);
  VecDestroy(&Up);
  VecDestroy(&Um);
  VecDestroy(&Fp);
  VecDestroy(&Fm);
  VecDestroy(&Jv);
  for (int p = 0; p < 3; ++p) VecDestroy(&F[p]);
  MatDestroy(&J);
  tsr_implicit_op_destroy(&op);
  tsr_run_ctx_free(&x);
  tsr_case_destroy(&c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  CHECK(tsr_implicit_init(MPI_COMM_WORLD, 0, NULL) == TSR_OK, "PETSc");
  int ncase = 0;
  for (int dim = 2; dim <= 3; ++dim)
    for (size_t m = 0; m < sizeof models / sizeof *models; ++m)
      for (size_t b = 0; b < sizeof bcs / sizeof *bcs; ++b) {
        char text[2048], label[128];
        const char *grid = dim == 2 ? "[7, 6]" : "[5, 4, 6]";
        const char *lo = dim == 2 ? "[0, -1]" : "[0, -1, 0.5]";
        const char *hi = dim == 2 ? "[1.5, 1]" : "[1.5, 1, 1.3]";
        int periodic = strncmp(bcs[b], "grid_periodic", 13) == 0;
        snprintf(text, sizeof text,
                 "method: implicit\n%sgrid: {cells: %s, lo: %s, hi: %s%s}\n%s"
                 "time: {scheme: beuler, dt: 0.01, steps: 1}\n",
                 models[m], grid, lo, hi, periodic ? ", periodic: true" : "",
                 periodic ? "" : bcs[b]);
        snprintf(label, sizeof label, "%dD model %zu boundary set %zu", dim, m, b);
        check_case(text, label);
        ++ncase;
      }
  if (g_rank == 0) printf("implicit operator: %d cases on %d ranks: Jacobian = FD of F\n", ncase,
                          g_size);
  tsr_implicit_finalize();
  MPI_Finalize();
  return 0;
}
