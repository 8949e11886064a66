/* PETSc's own structured-grid path, for method implicit's comparison (bench/implicit_dmda.sh):
 * the 3D heat equation u_t = kappa lap u on the unit cube, N^3 cells, cell-centred, Dirichlet 0
 * through a ghost of -u (as tessera's boundary fill), u(0) = sin(pi x) sin(pi y) sin(pi z), the
 * 7-point Laplacian; a DMDA owns the cells, TS steps with a fixed dt (BDF2 by default, any
 * -ts_type), the Jacobian shift I - kappa L assembled and kept while the shift is (tessera does
 * the same), ksponly with CG + GAMG by default; every PETSc option works (-log_view).
 *
 *   mpiexec -n R implicit_dmda -n 64 -dt 1.6e-2 -steps 10 [-kappa 1] [PETSc options]
 *
 * Prints one JSON line: the TSSolve time and per step, linear iterations per step, and the
 * error against exp(-3 pi^2 kappa t) sin sin sin (max and root mean square over the cells). */
#define _DEFAULT_SOURCE
#include <math.h>
#include <petscdmda.h>
#include <petscts.h>
#include <stdio.h>

typedef struct {
  DM da;
  PetscInt n;
  PetscReal h, kappa, shift;
  Mat L; /* kappa * the Laplacian with its boundary, assembled once */
  int ready;
} ctx_t;

/* the 7-point Laplacian of cell (i,j,k): a neighbour beyond a face is the ghost -u */
static PetscErrorCode ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *p) {
  ctx_t *c = p;
  Vec Ul;
  const PetscScalar ***u, ***ud;
  PetscScalar ***f;
  PetscInt xs, ys, zs, xm, ym, zm;
  const PetscInt n = c->n;
  const PetscReal w = c->kappa / (c->h * c->h);
  PetscFunctionBeginUser;
  PetscCall(DMGetLocalVector(c->da, &Ul));
  PetscCall(DMGlobalToLocalBegin(c->da, U, INSERT_VALUES, Ul));
  PetscCall(DMGlobalToLocalEnd(c->da, U, INSERT_VALUES, Ul));
  PetscCall(DMDAVecGetArrayRead(c->da, Ul, &u));
  PetscCall(DMDAVecGetArrayRead(c->da, Udot, &ud));
  PetscCall(DMDAVecGetArray(c->da, F, &f));
  PetscCall(DMDAGetCorners(c->da, &xs, &ys, &zs, &xm, &ym, &zm));
  for (PetscInt k = zs; k < zs + zm; ++k)
    for (PetscInt j = ys; j < ys + ym; ++j)
      for (PetscInt i = xs; i < xs + xm; ++i) {
        const PetscScalar uc = u[k][j][i];
        PetscScalar s = -6.0 * uc;
        s += i > 0 ? u[k][j][i - 1] : -uc;
        s += i < n - 1 ? u[k][j][i + 1] : -uc;
        s += j > 0 ? u[k][j - 1][i] : -uc;
        s += j < n - 1 ? u[k][j + 1][i] : -uc;
        s += k > 0 ? u[k - 1][j][i] : -uc;
        s += k < n - 1 ? u[k + 1][j][i] : -uc;
        f[k][j][i] = ud[k][j][i] - w * s;
      }
  PetscCall(DMDAVecRestoreArray(c->da, F, &f));
  PetscCall(DMDAVecRestoreArrayRead(c->da, Udot, &ud));
  PetscCall(DMDAVecRestoreArrayRead(c->da, Ul, &u));
  PetscCall(DMRestoreLocalVector(c->da, &Ul));
  PetscFunctionReturn(0);
}

static PetscErrorCode assemble_laplacian(ctx_t *c, Mat A) {
  PetscInt xs, ys, zs, xm, ym, zm;
  const PetscInt n = c->n;
  const PetscReal w = c->kappa / (c->h * c->h);
  PetscFunctionBeginUser;
  PetscCall(DMDAGetCorners(c->da, &xs, &ys, &zs, &xm, &ym, &zm));
  for (PetscInt k = zs; k < zs + zm; ++k)
    for (PetscInt j = ys; j < ys + ym; ++j)
      for (PetscInt i = xs; i < xs + xm; ++i) {
        MatStencil row = {.i = i, .j = j, .k = k}, col[7];
        PetscScalar v[7];
        PetscInt nc = 0;
        PetscScalar diag = -6.0 * w;
        const PetscInt nb[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0},
                                   {0, 1, 0},  {0, 0, -1}, {0, 0, 1}};
        for (int q = 0; q < 6; ++q) {
          PetscInt a = i + nb[q][0], b = j + nb[q][1], d = k + nb[q][2];
          if (a < 0 || a >= n || b < 0 || b >= n || d < 0 || d >= n) {
            diag -= w; /* the ghost -u */
            continue;
          }
          col[nc] = (MatStencil){.i = a, .j = b, .k = d};
          v[nc++] = w;
        }
        col[nc] = row;
        v[nc++] = diag;
        PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, v, INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* shift I - kappa L; left as it is while the shift is the same (the preconditioner is kept) */
static PetscErrorCode ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A,
                                Mat P, void *p) {
  ctx_t *c = p;
  PetscFunctionBeginUser;
  if (c->ready && shift == c->shift) PetscFunctionReturn(0);
  if (!c->L) {
    PetscCall(DMCreateMatrix(c->da, &c->L));
    PetscCall(assemble_laplacian(c, c->L));
  }
  PetscCall(MatCopy(c->L, P, c->ready ? SAME_NONZERO_PATTERN : DIFFERENT_NONZERO_PATTERN));
  PetscCall(MatScale(P, -1.0));
  PetscCall(MatShift(P, shift));
  c->shift = shift;
  c->ready = 1;
  if (A != P) {
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode fill(ctx_t *c, Vec U, PetscReal amp) {
  PetscScalar ***u;
  PetscInt xs, ys, zs, xm, ym, zm;
  PetscFunctionBeginUser;
  PetscCall(DMDAVecGetArray(c->da, U, &u));
  PetscCall(DMDAGetCorners(c->da, &xs, &ys, &zs, &xm, &ym, &zm));
  for (PetscInt k = zs; k < zs + zm; ++k)
    for (PetscInt j = ys; j < ys + ym; ++j)
      for (PetscInt i = xs; i < xs + xm; ++i)
        u[k][j][i] = amp * sin(PETSC_PI * (i + 0.5) * c->h) * sin(PETSC_PI * (j + 0.5) * c->h) *
                     sin(PETSC_PI * (k + 0.5) * c->h);
  PetscCall(DMDAVecRestoreArray(c->da, U, &u));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  ctx_t c = {.n = 64, .kappa = 1.0};
  PetscReal dt = 1.6e-2;
  PetscInt steps = 10;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &c.n, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-dt", &dt, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-steps", &steps, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-kappa", &c.kappa, NULL));
  c.h = 1.0 / (PetscReal)c.n;
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE,
                         DMDA_STENCIL_STAR, c.n, c.n, c.n, PETSC_DECIDE, PETSC_DECIDE,
                         PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &c.da));
  PetscCall(DMSetUp(c.da));
  Vec U, E;
  Mat P;
  PetscCall(DMCreateGlobalVector(c.da, &U));
  PetscCall(VecDuplicate(U, &E));
  PetscCall(DMCreateMatrix(c.da, &P));
  PetscCall(fill(&c, U, 1.0));
  TS ts;
  SNES snes;
  KSP ksp;
  PC pc;
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetDM(ts, c.da));
  PetscCall(TSSetProblemType(ts, TS_LINEAR));
  PetscCall(TSSetType(ts, TSBDF));
  PetscCall(TSBDFSetOrder(ts, 2));
  PetscCall(TSSetIFunction(ts, NULL, ifunction, &c));
  PetscCall(TSSetIJacobian(ts, P, P, ijacobian, &c));
  PetscCall(TSSetTimeStep(ts, dt));
  PetscCall(TSSetMaxSteps(ts, steps));
  PetscCall(TSSetMaxTime(ts, (PetscReal)steps * dt * (1.0 + 1e-9)));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_STEPOVER));
  PetscCall(TSGetSNES(ts, &snes));
  PetscCall(SNESSetType(snes, SNESKSPONLY));
  PetscCall(SNESGetKSP(snes, &ksp));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  PetscCall(PCGAMGSetUseSAEstEig(pc, PETSC_FALSE)); /* as tessera (solver/implicit/run_petsc.c) */
  TSAdapt adapt;
  PetscCall(TSGetAdapt(ts, &adapt));
  PetscCall(TSAdaptSetType(adapt, TSADAPTNONE));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSetSolution(ts, U));
  PetscCall(TSSetUp(ts));
  PetscCall(PetscBarrier((PetscObject)ts));
  double t0 = MPI_Wtime();
  PetscCall(TSSolve(ts, U));
  double wall = MPI_Wtime() - t0, mx;
  MPI_Allreduce(&wall, &mx, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  PetscInt done, its;
  PetscReal t, emax, e2;
  PetscCall(TSGetStepNumber(ts, &done));
  PetscCall(TSGetKSPIterations(ts, &its));
  PetscCall(TSGetTime(ts, &t));
  PetscCall(fill(&c, E, exp(-3.0 * PETSC_PI * PETSC_PI * c.kappa * t)));
  PetscCall(VecAXPY(E, -1.0, U));
  PetscCall(VecNorm(E, NORM_INFINITY, &emax));
  PetscCall(VecNorm(E, NORM_2, &e2));
  const char *tt, *kt, *pt;
  PetscCall(TSGetType(ts, &tt));
  PetscCall(KSPGetType(ksp, &kt));
  PetscCall(PCGetType(pc, &pt));
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "{\"program\": \"implicit_dmda\", \"n\": %d, \"ranks\": %d, \"ts\": \"%s\", "
                        "\"ksp\": \"%s\", \"pc\": \"%s\", \"dt\": %g, \"steps\": %d, \"t\": %.9g, "
                        "\"ts_solve_s\": %.6f, \"per_step_s\": %.6f, "
                        "\"linear_its_per_step\": %.3f, \"error_linf\": %.6e, "
                        "\"error_rms\": %.6e}\n",
                        (int)c.n, size, tt, kt, pt, (double)dt, (int)done, (double)t, mx,
                        done ? mx / (double)done : 0.0, done ? (double)its / (double)done : 0.0,
                        (double)emax, (double)(e2 / pow((double)c.n, 1.5))));
  PetscCall(MatDestroy(&c.L));
  PetscCall(MatDestroy(&P));
  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&E));
  PetscCall(TSDestroy(&ts));
  PetscCall(DMDestroy(&c.da));
  PetscCall(PetscFinalize());
  return 0;
}
