/* Method implicit with PETSc (solver/implicit/implicit.h): PETSc's set-up and options, the TS
 * over the operator of solver/implicit/operator.h, and the run on the driver's shared pieces
 * (set-up, initial conditions, monitors, snapshots, report). Checkpoints, final.h5 and restart
 * are solver/implicit/state_petsc.c's. */
#include <inttypes.h>
#include <math.h>
#include <petscts.h>
#include <petscversion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/progress.h"
#include "solver/implicit/implicit.h"
#include "solver/implicit/implicit_impl.h"
#include "solver/implicit/operator.h"
#include "solver/ckpt_writer.h"
#include "solver/fault.h"
#include "solver/method.h"
#include "solver/schedule.h"
#include "solver/stop.h"
#include "solver/watchdog.h"

/* ---- PETSc itself ----------------------------------------------------------------------- */

static int petsc_ours; /* 1: tsr_implicit_init called PetscInitialize */

int tsr_implicit_available(void) { return 1; }

tsr_err tsr_implicit_check(const tsr_case *c) {
  TSR_CHECK(c->precision == TSR_PRECISION_DOUBLE, TSR_ERR_INPUT,
            "%s: method implicit solves in double", c->path);
  /* PETSc numbers the unknowns with PetscInt: past its range they wrap */
  double unknowns = c->ncomp;
  for (int d = 0; d < c->dim; ++d) unknowns *= c->cells[d];
  TSR_CHECK(unknowns <= (double)PETSC_MAX_INT, TSR_ERR_INPUT,
            "%s: grid.cells: %.4g unknowns (cells x %d component%s), more than this PETSc's "
            "%d-bit indices number (%.4g); give fewer cells, or build tessera with a PETSc "
            "configured --with-64-bit-indices", c->path, unknowns, c->ncomp,
            c->ncomp == 1 ? "" : "s", (int)sizeof(PetscInt) * 8, (double)PETSC_MAX_INT);
  /* TS counts steps with PetscInt too (TSSetMaxSteps): past it the count wrapped, and the run
   * ended early as if done */
  const double steps = c->implicit.adaptive ? 0.0
                       : c->time.has_steps  ? (double)c->time.steps
                                            : ceil(c->time.end / c->time.dt * (1.0 - 1e-12));
  TSR_CHECK(steps <= (double)PETSC_MAX_INT, TSR_ERR_INPUT,
            "%s: time: %.4g steps of dt = %g, more than this PETSc's %d-bit step count holds "
            "(%.4g); raise time.dt, or use time.adaptive: true", c->path, steps, c->time.dt,
            (int)sizeof(PetscInt) * 8, (double)PETSC_MAX_INT);
  return TSR_OK;
}

const char *tsr_implicit_describe(char *buf, size_t size) {
  snprintf(buf, size, "%d.%d.%d, %s scalars, %d-bit indices, hypre %s, MUMPS %s, CUDA %s",
           PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR,
#if defined(PETSC_USE_COMPLEX)
           "complex",
#else
           "real double",
#endif
           (int)sizeof(PetscInt) * 8,
#if defined(PETSC_HAVE_HYPRE)
           "yes",
#else
           "no",
#endif
#if defined(PETSC_HAVE_MUMPS)
           "yes (parallel LU and Cholesky)",
#else
           "no",
#endif
#if defined(PETSC_HAVE_CUDA)
           "yes"
#else
           "no (method implicit runs on CPU ranks)"
#endif
  );
  return buf;
}

tsr_err tsr_implicit_init(MPI_Comm comm, int argc, char *const *argv) {
  PetscBool done;
  TSR_PETSC(PetscInitialized(&done));
  if (done) return TSR_OK;
  /* PETSc keeps the arguments: static storage. PETSc's own signal handlers would take
   * SIGTERM from tessera's stop handling (solver/stop.h). */
  static char *args[256];
  static char prog[] = "tessera", nosig[] = "-no_signal_handler";
  int n = 0;
  args[n++] = prog;
  args[n++] = nosig;
  TSR_CHECK(argc < 250, TSR_ERR_INPUT, "too many PETSc options on the command line (%d)", argc);
  for (int i = 0; i < argc; ++i) args[n++] = argv[i];
  args[n] = NULL;
  PETSC_COMM_WORLD = comm;
  int nargs = n;
  char **pargs = args;
  PetscErrorCode pe = PetscInitialize(&nargs, &pargs, NULL, NULL);
  if (pe) return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "PETSc could not start with "
                             "the command line's options (error %d); check them", (int)pe);
  petsc_ours = 1;
  /* errors come back as codes, turned into tessera's messages; no PETSc tracebacks */
  TSR_PETSC(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  return TSR_OK;
}

void tsr_implicit_finalize(void) {
  if (!petsc_ours) return;
  PetscPopErrorHandler();
  PetscFinalize();
  petsc_ours = 0;
}

/* ---- the run ------------------------------------------------------------------------------ */

static tsr_err callback_error(impl *m, tsr_err e) {
  if (!m->err) m->err = e;
  return e;
}

static PetscErrorCode ifunction(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ctx) {
  impl *m = ctx;
  tsr_err e = tsr_implicit_op_rhs(m->op, m->imex ? TSR_IMPLICIT_STIFF : TSR_IMPLICIT_FULL, t, U, F);
  if (e) return callback_error(m, e), PETSC_ERR_LIB;
  PetscCall(VecAYPX(F, -1.0, Udot)); /* G = dU/dt - F(t, U) */
  return 0;
}

static PetscErrorCode rhsfunction(TS ts, PetscReal t, Vec U, Vec F, void *ctx) {
  impl *m = ctx;
  tsr_err e = tsr_implicit_op_rhs(m->op, TSR_IMPLICIT_NONSTIFF, t, U, F);
  if (e) return callback_error(m, e), PETSC_ERR_LIB;
  return 0;
}

/* dG/dU + shift dG/dUdot = shift I - dF/dU. A linear model's dF/dU is assembled once, and the
 * matrix is left as it is (so the preconditioner is kept) while the shift does not change. */
static PetscErrorCode ijacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A,
                                Mat P, void *ctx) {
  impl *m = ctx;
  tsr_implicit_part part = m->imex ? TSR_IMPLICIT_STIFF : TSR_IMPLICIT_FULL;
  const int same = m->linear && m->jac_ready && shift == m->last_shift;
  /* the matrix is left untouched while it is the same, so PETSc keeps its preconditioner
   * (GAMG's hierarchy: "operator is unchanged") */
  if (!same) {
    tsr_err e = TSR_OK;
    if (!m->linear) {
      e = tsr_implicit_op_jacobian(m->op, part, t, U, P);
    } else if (!m->jac_ready) { /* once: dF/dU kept, and P with its pattern */
      e = tsr_implicit_op_jacobian(m->op, part, t, U, m->Jrhs);
      if (!e) e = tsr_implicit_op_jacobian(m->op, part, t, U, P);
    } else {
      PetscErrorCode pe = MatCopy(m->Jrhs, P, SAME_NONZERO_PATTERN);
      if (pe) e = tsr_petsc_err(pe, "MatCopy", __FILE__, __LINE__);
    }
    if (e) return callback_error(m, e), PETSC_ERR_LIB;
    PetscCall(MatScale(P, -1.0));
    PetscCall(MatShift(P, shift));
    m->jac_ready = 1;
    m->last_shift = shift;
  }
  if (A != P) { /* a matrix-free operator (-snes_mf_operator) */
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  }
  return 0;
}

/* The stop at step `step` (a signal, --walltime): a checkpoint there, unless it was just
 * written, and rank 0 says why and how to continue (as solver/run_stop.c). Collective. */
static tsr_err stop_here(impl *m, int64_t step, double t, int why) {
  tsr_run_ctx *x = m->x;
  double t0 = MPI_Wtime();
  if (m->ckpt_step != step) TSR_CALL(tsr_implicit_checkpoint(m, step, t));
  /* the process is about to end, and latest must name it first */
  TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  if (x->rank == 0) tsr_run_stop_say(x, step, "", t, why, MPI_Wtime() - t0);
  return TSR_OK;
}

static tsr_err monitor_line(impl *m, int64_t step, double t) {
  tsr_run_ctx *x = m->x;
  TSR_CALL(tsr_implicit_op_from_vec(m->op, m->U, x->slot[TSR_SLOT_U]));
  TSR_CALL(tsr_run_monitor(x, t, &m->nm));
  char line[2048];
  double el = MPI_Wtime() - m->start;
  double cps = el > 0 ? m->cells * (double)(step - m->first) / el : 0.0;
  x->dt = m->dt_last;
  tsr_run_monitor_line(x, step, t, &m->nm, cps, line, sizeof line);
  size_t w = strlen(line);
  PetscInt s, k;
  TSGetSNESIterations(m->ts, &s);
  TSGetKSPIterations(m->ts, &k);
  if (step > m->first && w < sizeof line)
    snprintf(line + w, sizeof line - w, " | %.3g newton, %.3g linear its/step",
             (double)s / (double)(step - m->first), (double)k / (double)(step - m->first));
  tsr_progress_line(&m->pg, line);
  m->last_line = step;
  if (tsr_run_norms_finite(x, &m->nm)) {
    m->t_ok = t;
    return TSR_OK;
  }
  /* the initial values, a boundary value or a source that is not finite is the case's, not
   * the step's (step 0 said to lower time.dt) */
  const int initial = step == 0;
  TSR_CALL(tsr_run_blame_expressions(x, initial, m->t_ok, t));
  for (int q = 0; q < x->c->ncomp && initial; ++q)
    TSR_CHECK(isfinite(m->nm.min[q]) && isfinite(m->nm.max[q]), TSR_ERR_INPUT,
              "%s: the initial values of %s are not finite (min %g, max %g): check initial.%s "
              "and the params and grid it uses", x->c->path, tsr_models[x->c->model].comp[q],
              m->nm.min[q], m->nm.max[q], tsr_models[x->c->model].comp[q]);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: the solution became non-finite by step %lld (t = %g, dt = %g): lower "
                     "time.dt, or use time.adaptive: true", x->c->path, (long long)step, t,
                     m->dt_last);
}

/* Whether step `step` at t is the run's last. */
static int last_step(const impl *m, int64_t step, double t) {
  const tsr_run_ctx *x = m->x;
  if (m->adaptive) return t >= x->c->time.end * (1.0 - 1e-12);
  return step >= x->nsteps;
}

static tsr_err after_step(impl *m, PetscInt step, double t) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  const double t_before = m->t_prev;
  m->dt_last = m->adaptive ? t - m->t_prev : m->x->dt;
  m->t_prev = t;
  PetscInt s, k;
  TSR_PETSC(TSGetSNESIterations(m->ts, &s));
  TSR_PETSC(TSGetKSPIterations(m->ts, &k));
  if (s - m->snes_prev > m->snes_max) m->snes_max = s - m->snes_prev;
  if (k - m->ksp_prev > m->ksp_max) m->ksp_max = k - m->ksp_prev;
  m->snes_prev = s;
  m->ksp_prev = k;
  if (!m->checked) {
    m->checked = 1;
    TSR_CALL(tsr_run_agree(x->comm, tsr_implicit_options_left(m)));
  }
  tsr_watchdog_beat(step);
  m->beat_step = step;
  double el = MPI_Wtime() - m->start;
  tsr_progress_step(&m->pg, step, t,
                    el > 0 ? m->cells * (double)(step - m->first) / el : 0.0);
  if (step % m->every == 0) TSR_CALL(monitor_line(m, step, t));
  /* by step and dt, as the explicit method; adaptive steps by the times they span */
  const int snap_due = m->adaptive
                           ? tsr_schedule_due_after(&c->output.snapshot_every, step, t_before, t)
                           : tsr_schedule_due(&c->output.snapshot_every, step, m->dt_last);
  const int ckpt_due = m->adaptive
                           ? tsr_schedule_due_after(&c->output.checkpoint_every, step, t_before, t)
                           : tsr_schedule_due(&c->output.checkpoint_every, step, m->dt_last);
  if (x->snap && snap_due) {
    TSR_CALL(tsr_implicit_op_from_vec(m->op, m->U, x->slot[TSR_SLOT_U]));
    TSR_CALL(tsr_run_write_snapshot(x, step, t));
  }
  /* an injected fault strikes with the checkpoints before it on the disk (as the explicit
   * method's loop): every rank has the same fault, so all make these waits or none */
  const tsr_fault *f = x->opts.fault;
  const int fault_now = f && f->kind != TSR_FAULT_NONE && f->step == step;
  if (fault_now) TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  /* none at the last step: final.h5 holds it. Here TSBDF holds the history of the step it
   * takes next (bdf_history) */
  const int last = last_step(m, step, t);
  if (x->opts.write_output && !last && ckpt_due) {
    TSR_CALL(tsr_implicit_checkpoint(m, step, t));
    if (fault_now) TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  }
  tsr_fault_after_step(f, x->rank, step, x->out_dir);
  if (!x->opts.write_output || last) return TSR_OK;
  int why = 0;
  TSR_CALL(tsr_run_stop_poll(x, 0, &why));
  if (why) {
    TSR_CALL(stop_here(m, step, t, why));
    m->stop_why = why;
    m->stop_step = step;
    m->stop_t = t;
  }
  return TSR_OK;
}

/* Each linear iteration beats the watchdog: one implicit step may take longer than
 * comm.timeout, and its solver's collectives are progress. */
static PetscErrorCode ksp_beat(KSP ksp, PetscInt it, PetscReal rnorm, void *ctx) {
  (void)ksp, (void)it, (void)rnorm;
  tsr_watchdog_beat(((impl *)ctx)->beat_step);
  return 0;
}

static PetscErrorCode ts_monitor(TS ts, PetscInt step, PetscReal t, Vec U, void *ctx) {
  impl *m = ctx;
  /* the line of the initial state is printed before the solve */
  if (step <= m->first || m->stop_why) return 0;
  tsr_err e = after_step(m, step, t);
  if (e) return callback_error(m, e), PETSC_ERR_USER;
  /* stopped: TSSolve returns here, before the next step (no TS call ends it from a monitor:
   * TSStep resets the converged reason); solve() tells this from an error by m->stop_why */
  if (m->stop_why) return PETSC_ERR_USER;
  return 0;
}

static const char *obj_type(PetscObject o, char *buf, size_t size) {
  const char *t = NULL;
  PetscObjectGetType(o, &t);
  snprintf(buf, size, "%s", t ? t : "?");
  return buf;
}

static tsr_err setup_ts(impl *m) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  m->linear = c->model == TSR_MODEL_HEAT || c->model == TSR_MODEL_ADVECTION_DIFFUSION;
  m->imex = c->implicit.scheme == TSR_ISCHEME_ARK_IMEX;
  m->adaptive = c->implicit.adaptive;
  TSR_CALL(tsr_implicit_op_create(x, &m->op));
  TSR_CALL(tsr_implicit_op_vec(m->op, &m->U));
  TSR_CALL(tsr_implicit_op_mat(m->op, &m->P));
  if (m->linear) TSR_CALL(tsr_implicit_op_mat(m->op, &m->Jrhs));
  TSR_PETSC(TSCreate(x->comm, &m->ts));
  TS ts = m->ts;
  TSR_PETSC(TSSetProblemType(ts, m->linear ? TS_LINEAR : TS_NONLINEAR));
  switch (c->implicit.scheme) {
  case TSR_ISCHEME_BEULER: TSR_PETSC(TSSetType(ts, TSBEULER)); break;
  case TSR_ISCHEME_CN: TSR_PETSC(TSSetType(ts, TSCN)); break;
  case TSR_ISCHEME_BDF2:
    TSR_PETSC(TSSetType(ts, TSBDF));
    TSR_PETSC(TSBDFSetOrder(ts, 2));
    break;
  case TSR_ISCHEME_ARK_IMEX:
    TSR_PETSC(TSSetType(ts, TSARKIMEX));
    TSR_PETSC(TSARKIMEXSetFullyImplicit(ts, PETSC_FALSE));
    break;
  }
  TSR_PETSC(TSSetIFunction(ts, NULL, ifunction, m));
  TSR_PETSC(TSSetIJacobian(ts, m->P, m->P, ijacobian, m));
  if (m->imex) TSR_PETSC(TSSetRHSFunction(ts, NULL, rhsfunction, m));
  TSR_PETSC(TSSetTimeStep(ts, x->dt));
  TSR_PETSC(TSSetTime(ts, 0.0));
  if (m->adaptive) {
    TSR_PETSC(TSSetMaxTime(ts, c->time.end));
    TSR_PETSC(TSSetMaxSteps(ts, 1000000000));
    TSR_PETSC(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
    TSAdapt adapt;
    TSR_PETSC(TSGetAdapt(ts, &adapt));
    TSR_PETSC(TSAdaptSetType(adapt, TSADAPTBASIC));
    TSR_PETSC(TSSetTolerances(ts, c->implicit.atol, NULL, c->implicit.rtol, NULL));
    TSR_PETSC(TSSetMaxSNESFailures(ts, 10));
  } else {
    /* the driver's whole steps (dt divides time.end): no step clipped at the end */
    TSR_PETSC(TSSetMaxSteps(ts, (PetscInt)x->nsteps));
    TSR_PETSC(TSSetMaxTime(ts, (double)x->nsteps * x->dt * (1.0 + 1e-9)));
    TSR_PETSC(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_STEPOVER));
    TSAdapt adapt;
    TSR_PETSC(TSGetAdapt(ts, &adapt));
    TSR_PETSC(TSAdaptSetType(adapt, TSADAPTNONE));
  }
  /* a failed step ends the run with its reason (TSGetConvergedReason), not an error */
  TSR_PETSC(TSSetErrorIfStepFails(ts, PETSC_FALSE));
  SNES snes;
  KSP ksp;
  PC pc;
  TSR_PETSC(TSGetSNES(ts, &snes));
  if (m->linear) TSR_PETSC(SNESSetType(snes, SNESKSPONLY));
  TSR_PETSC(SNESGetKSP(snes, &ksp));
  TSR_PETSC(KSPGetPC(ksp, &pc));
  /* CG for symmetric diffusion (heat: shift I - kappa lap, symmetric positive definite with
   * every boundary type), GMRES otherwise. The preconditioner, measured on 2 ranks of the
   * loaded 2-core host (bench/README.md, "default preconditioner"): for heat GAMG (64^3, BDF2:
   * 8.2 CG iterations a step against BoomerAMG's 4.1, but 1.6 x faster a step: its V-cycle
   * costs a third of BoomerAMG's, and a linear model sets it up once); for the others
   * hypre's BoomerAMG where PETSc has it (advection-diffusion 48^3: 5 x faster, 2 GMRES
   * iterations a step against GAMG's 19; Allen-Cahn and Gray-Scott, whose Newton steps set the
   * preconditioner up again each time: 1.3 to 1.6 x faster), GAMG without hypre */
  TSR_PETSC(KSPSetType(ksp, c->model == TSR_MODEL_HEAT ? KSPCG : KSPGMRES));
#if defined(PETSC_HAVE_HYPRE)
  if (c->model != TSR_MODEL_HEAT) {
    TSR_PETSC(PCSetType(pc, PCHYPRE));
    TSR_PETSC(PCHYPRESetType(pc, "boomeramg"));
  } else
#endif
    TSR_PETSC(PCSetType(pc, PCGAMG));
  TSR_PETSC(TSMonitorSet(ts, ts_monitor, m, NULL));
  TSR_PETSC(KSPMonitorSet(ksp, ksp_beat, m, NULL));
  TSR_CALL(tsr_implicit_options_insert(m));
  TSR_CALL(tsr_implicit_options_owned(m));
  PetscErrorCode pe = TSSetFromOptions(ts); /* the case's petsc: and the command line win */
  if (pe) return tsr_implicit_options_refused(m, pe, "TSSetFromOptions(ts)");
  /* GAMG (PETSc 3.18) keeps its interpolation when the matrix changes (a new shift: BDF's
   * start, every adaptive step; a Newton iteration) and with it the smoothers' eigenvalue
   * estimates of the first matrix, which it takes from the smoothed aggregation: once the
   * step grew, Chebyshev ran past the spectrum and CG stopped with DIVERGED_INDEFINITE_PC
   * (heat 3D, bdf2, adaptive with rtol 1e-3; PETSc's own DMDA program, bench/implicit_dmda.c,
   * at a fixed step on 2 ranks). Chebyshev estimates them itself on each new matrix (a few
   * iterations). A nonlinear model at a fixed step keeps PETSc's default (its matrix changes
   * little from one Newton iteration to the next; no failure seen). Set here, after the
   * options chose the PC (GAMG by default or by -pc_type), unless they set it themselves */
  PetscBool gamg = PETSC_FALSE, has_esteig = PETSC_FALSE;
  TSR_PETSC(PetscObjectTypeCompare((PetscObject)pc, PCGAMG, &gamg));
  TSR_PETSC(PetscOptionsHasName(NULL, NULL, "-pc_gamg_use_sa_esteig", &has_esteig));
  if (gamg && !has_esteig && (m->linear || m->adaptive))
    TSR_PETSC(PCGAMGSetUseSAEstEig(pc, PETSC_FALSE));
  TSR_PETSC(TSSetSolution(ts, m->U));
  pe = TSSetUp(ts);
  if (pe) return tsr_implicit_options_failed(m, pe, "TSSetUp");
  TSR_PETSC(TSGetSNES(ts, &snes));
  TSR_PETSC(SNESGetKSP(snes, &ksp));
  TSR_PETSC(KSPGetPC(ksp, &pc));
  obj_type((PetscObject)ts, m->ts_type, sizeof m->ts_type);
  obj_type((PetscObject)snes, m->snes_type, sizeof m->snes_type);
  obj_type((PetscObject)ksp, m->ksp_type, sizeof m->ksp_type);
  obj_type((PetscObject)pc, m->pc_type, sizeof m->pc_type);
  m->pc_hypre_type[0] = '\0';
#if defined(PETSC_HAVE_HYPRE)
  PetscBool hypre = PETSC_FALSE;
  TSR_PETSC(PetscObjectTypeCompare((PetscObject)pc, PCHYPRE, &hypre));
  const char *ht = NULL;
  if (hypre && !PCHYPREGetType(pc, &ht) && ht)
    snprintf(m->pc_hypre_type, sizeof m->pc_hypre_type, "%s", ht);
#endif
  m->arkimex_type[0] = '\0';
  if (m->imex) {
    TSARKIMEXType at;
    if (!TSARKIMEXGetType(ts, &at)) snprintf(m->arkimex_type, sizeof m->arkimex_type, "%s", at);
  }
  /* what PETSc will do, when options changed it */
  PetscReal dt;
  TSR_PETSC(TSGetTimeStep(ts, &dt));
  x->dt = dt;
  return TSR_OK;
}

static void report_more(const tsr_run_ctx *x, tsr_json *j) {
  const impl *m = x->method;
  tsr_json_object_begin(j, "implicit");
  tsr_json_string(j, "ts_type", m->ts_type);
  if (m->arkimex_type[0]) tsr_json_string(j, "arkimex_type", m->arkimex_type);
  tsr_json_string(j, "snes_type", m->snes_type);
  tsr_json_string(j, "ksp_type", m->ksp_type);
  tsr_json_string(j, "pc_type", m->pc_type);
  if (m->pc_hypre_type[0]) tsr_json_string(j, "pc_hypre_type", m->pc_hypre_type);
  tsr_json_bool(j, "adaptive", m->adaptive);
  tsr_json_bool(j, "linear", m->linear);
  tsr_json_string(j, "jacobian", "assembled (MPIAIJ)");
  tsr_json_int(j, "steps", m->steps);
  tsr_json_int(j, "rejected_steps", m->rejected);
  double ns = m->steps > m->first ? (double)(m->steps - m->first) : 1.0;
  tsr_json_int(j, "first_step", m->first);
  tsr_json_int(j, "checkpoints", m->nckpt);
  tsr_json_number(j, "checkpoint_seconds", m->ckpt_wall);
  tsr_json_int(j, "restart_bdf_history", m->restored);
  tsr_json_int(j, "nonlinear_iterations", m->snes_its);
  tsr_json_number(j, "nonlinear_iterations_per_step", (double)m->snes_its / ns);
  tsr_json_int(j, "nonlinear_iterations_max_step", m->snes_max);
  tsr_json_int(j, "linear_iterations", m->ksp_its);
  tsr_json_number(j, "linear_iterations_per_step", (double)m->ksp_its / ns);
  tsr_json_int(j, "linear_iterations_max_step", m->ksp_max);
  tsr_json_int(j, "rhs_evaluations", m->times.nrhs);
  tsr_json_int(j, "jacobian_assemblies", m->times.njac);
  /* the slowest rank's seconds; solver: the rest of TSSolve (SNES, KSP, PC, TS's vector work) */
  tsr_json_object_begin(j, "seconds");
  tsr_json_number(j, "ts_solve", m->solve_wall);
  double rhs = m->times.boundary + m->times.halo + m->times.source + m->times.compute;
  tsr_json_number(j, "rhs_function", rhs);
  tsr_json_number(j, "rhs_halo", m->times.halo);
  tsr_json_number(j, "jacobian_assembly", m->times.assembly);
  tsr_json_number(j, "solver", m->solver_rest);
  tsr_json_object_end(j);
  tsr_json_object_end(j);
}

/* The reason of a solve that failed, PETSc's words. */
static tsr_err diverged(impl *m, TSConvergedReason reason) {
  const tsr_case *c = m->x->c;
  SNES snes;
  KSP ksp;
  SNESConvergedReason sr = SNES_CONVERGED_ITERATING;
  KSPConvergedReason kr = KSP_CONVERGED_ITERATING;
  PetscInt step = 0, its = 0;
  PetscReal t = 0.0, dt = 0.0;
  TSGetSNES(m->ts, &snes);
  SNESGetKSP(snes, &ksp);
  SNESGetConvergedReason(snes, &sr);
  SNESGetIterationNumber(snes, &its);
  KSPGetConvergedReason(ksp, &kr);
  TSGetStepNumber(m->ts, &step);
  TSGetTime(m->ts, &t);
  TSGetTimeStep(m->ts, &dt);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: the implicit solve failed in step %lld (from t = %.6g with dt = %.6g): "
                     "TS %s, SNES %s after %lld iterations, KSP %s; lower time.dt, use "
                     "time.adaptive: true, or choose another solver (petsc: snes_type, "
                     "ksp_type, pc_type); nothing was written",
                     c->path, (long long)step + 1, t, dt, TSConvergedReasons[reason],
                     SNESConvergedReasons[sr], (long long)its, KSPConvergedReasons[kr]);
}

static tsr_err solve(impl *m, tsr_run_result *res) {
  tsr_run_ctx *x = m->x;
  const tsr_case *c = x->c;
  tsr_progress_init(&m->pg, x->opts.quiet || x->rank != 0 ? 3 : (int)c->output.progress, stdout,
                    x->nsteps);
  m->every = c->output.monitor_every > 0 ? c->output.monitor_every
                                         : (x->nsteps >= 20 ? x->nsteps / 20 : 1);
  m->cells = (double)tsr_box_cells(&x->layout.global);
  m->dt_last = x->dt;
  PetscReal t0;
  TSR_PETSC(TSGetTime(m->ts, &t0));
  if (m->adaptive) { /* the steps are TS's to choose: x->nsteps (end / dt) was a guess */
    x->steps_by_time = 1;
    tsr_progress_by_time(&m->pg, t0, c->time.end);
  }
  m->t_prev = m->t_ok = t0;
  m->beat_step = m->first;
  m->start = MPI_Wtime();
  TSR_CALL(monitor_line(m, m->first, t0));
  /* a signal during set-up stops the run before its first step */
  int why = 0;
  if (m->first == 0) tsr_fault_after_step(x->opts.fault, x->rank, 0, x->out_dir);
  if (x->opts.write_output) TSR_CALL(tsr_run_stop_poll(x, 1, &why));
  if (why) {
    TSR_CALL(stop_here(m, m->first, t0, why));
    m->stop_why = why, m->stop_step = m->first, m->stop_t = t0;
  }
  PetscErrorCode pe = why ? 0 : TSSolve(m->ts, m->U);
  m->solve_wall = MPI_Wtime() - m->start;
  /* every rank meets the same PETSc errors (collective solves); a callback's is tessera's */
  if (m->err) return m->err;
  if (m->stop_why) { /* the monitor ended TSSolve after the stop's checkpoint */
    tsr_progress_finish(&m->pg);
    res->stopped = m->stop_why;
    res->wall = MPI_Wtime() - m->start;
    res->steps = m->stop_step;
    res->first_step = m->first;
    res->t_final = m->stop_t;
    res->dt = m->dt_last;
    return TSR_OK;
  }
  if (pe) return tsr_implicit_options_failed(m, pe, "TSSolve");
  TSConvergedReason reason;
  TSR_PETSC(TSGetConvergedReason(m->ts, &reason));
  if (reason < 0) { /* a boundary value or source that is not finite fails the solves too */
    PetscReal tf, dtf;
    TSR_PETSC(TSGetTime(m->ts, &tf));
    TSR_PETSC(TSGetTimeStep(m->ts, &dtf));
    TSR_CALL(tsr_run_blame_expressions(x, 0, m->t_ok, tf + dtf));
    return diverged(m, reason);
  }
  PetscReal t;
  TSR_PETSC(TSGetTime(m->ts, &t));
  TSR_PETSC(TSGetStepNumber(m->ts, &m->steps));
  TSR_PETSC(TSGetSNESIterations(m->ts, &m->snes_its));
  TSR_PETSC(TSGetKSPIterations(m->ts, &m->ksp_its));
  TSR_PETSC(TSGetStepRejections(m->ts, &m->rejected));
  if (m->last_line != m->steps) TSR_CALL(monitor_line(m, m->steps, t));
  tsr_progress_finish(&m->pg);
  TSR_CALL(tsr_implicit_op_from_vec(m->op, m->U, x->slot[TSR_SLOT_U]));
  res->wall = MPI_Wtime() - m->start;
  res->steps = m->steps;
  res->first_step = m->first;
  res->t_final = t;
  res->dt = m->dt_last;
  res->cells_per_s = res->wall > 0 ? m->cells * (double)(m->steps - m->first) / res->wall : 0.0;
  tsr_run_result_norms(x, &m->nm, res);
  x->nsteps = m->steps;
  x->dt = m->dt_last;
  /* the times of the report: the slowest rank's */
  m->times = tsr_implicit_op_get_times(m->op);
  double mine[6] = {m->times.boundary, m->times.halo, m->times.source, m->times.compute,
                    m->times.assembly, m->solve_wall}, mx[6];
  MPI_Allreduce(mine, mx, 6, MPI_DOUBLE, MPI_MAX, x->comm);
  m->times.boundary = mx[0], m->times.halo = mx[1], m->times.source = mx[2];
  m->times.compute = mx[3], m->times.assembly = mx[4], m->solve_wall = mx[5];
  x->phase[PH_BOUNDARY] += m->times.boundary;
  x->phase[PH_HALO_WAIT] += m->times.halo;
  x->phase[PH_SOURCE] += m->times.source;
  x->phase[PH_COMPUTE] += m->solve_wall - m->times.boundary - m->times.halo - m->times.source -
                          x->phase[PH_MONITOR] - x->phase[PH_OUTPUT];
  m->solver_rest = m->solve_wall - m->times.boundary - m->times.halo - m->times.source -
                   m->times.compute - m->times.assembly - x->phase[PH_MONITOR] -
                   x->phase[PH_OUTPUT];
  if (m->solver_rest < 0.0) m->solver_rest = 0.0;
  return TSR_OK;
}

/* The end of a run that completed (as tsr_run_finish): final.h5, a checkpoint of the last step
 * with BDF's history (a run continued to a later end goes on from it), final.xmf and
 * report.json. Collective. */
static tsr_err finish(impl *m, tsr_run_result *res) {
  tsr_run_ctx *x = m->x;
  tsr_watchdog_beat(res->steps);
  double t0 = MPI_Wtime();
  TSR_CALL(tsr_implicit_write_final(m, res->steps, res->t_final)); /* after the writer's last */
  if (x->ckpt) tsr_ckpt_writer_report(x->ckpt, res);
  x->phase[PH_OUTPUT] += MPI_Wtime() - t0;
  return tsr_run_report(x, res);
}

/* PETSc, the host backend (PETSc's vectors and matrices live on the host, whatever GPUs there
 * are), the shared set-up, the TS, and what --inject-fault asks of this run: the faults of
 * tessera supervise's recovery (a rank exits or hangs, the newest checkpoint is damaged) and
 * of the stop (a signal); the others test the explicit method's own paths. */
static tsr_err setup(tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  impl *m = calloc(1, sizeof *m);
  TSR_CHECK(m, TSR_ERR_MEMORY, "out of memory");
  m->x = x;
  x->method = m;
  const tsr_fault *f = x->opts.fault;
  const tsr_fault_kind fk = f ? f->kind : TSR_FAULT_NONE;
  TSR_CHECK(!f || fk == TSR_FAULT_SIGNAL || fk == TSR_FAULT_EXIT || fk == TSR_FAULT_HANG ||
                fk == TSR_FAULT_CORRUPT,
            TSR_ERR_INPUT, "--inject-fault: method implicit takes kind=exit, hang, corrupt or "
            "signal (kind=%s tests the explicit method's own paths)", tsr_fault_kind_name(fk));
  TSR_CHECK(!f || !c->implicit.adaptive || fk != TSR_FAULT_CORRUPT, TSR_ERR_INPUT,
            "--inject-fault: kind=corrupt needs a fixed time.dt with method implicit (with "
            "time.adaptive the steps of the checkpoints are not known in advance)");
  TSR_CALL(tsr_implicit_check(c));
  TSR_CALL(tsr_implicit_init(x->comm, 0, NULL));
  x->be = &tsr_backend_host;
  x->scheme_name = tsr_implicit_scheme_name(c->implicit.scheme);
  TSR_CALL(tsr_run_agree(x->comm, tsr_run_setup(x)));
  TSR_CALL(tsr_run_agree(x->comm, setup_ts(m)));
  const tsr_case_every *ckpt = x->opts.write_output ? &c->output.checkpoint_every : NULL;
  if (f && !m->adaptive) return tsr_fault_check(f, x->size, x->nsteps, ckpt, x->dt);
  if (f && tsr_fault_armed())
    TSR_CHECK(f->rank < x->size, TSR_ERR_INPUT, "--inject-fault: rank %d, and the run has %d",
              f->rank, x->size);
  return TSR_OK;
}

/* U and the TS from the checkpoint (with BDF's history and the next step's size), or U from
 * the initial conditions; the snapshots' series. */
static tsr_err start(tsr_run_ctx *x) {
  impl *m = x->method;
  m->ckpt_step = -1;
  if (x->opts.restart) {
    double t0 = 0.0, next_dt = x->dt;
    TSR_CALL(tsr_implicit_restart(m, &t0, &next_dt));
    m->first = (PetscInt)x->start_step;
    TSR_PETSC(TSSetStepNumber(m->ts, m->first));
    TSR_PETSC(TSSetTime(m->ts, t0));
    TSR_PETSC(TSSetTimeStep(m->ts, next_dt));
    if (!m->adaptive) {
      TSR_PETSC(TSSetMaxSteps(m->ts, (PetscInt)x->nsteps));
      TSR_PETSC(TSSetMaxTime(m->ts, (double)x->nsteps * x->dt * (1.0 + 1e-9)));
    }
    TSR_CALL(tsr_implicit_op_from_vec(m->op, m->U, x->slot[TSR_SLOT_U]));
  } else {
    TSR_CALL(tsr_run_agree(x->comm, tsr_run_initial(x)));
    TSR_CALL(tsr_implicit_op_to_vec(m->op, x->slot[TSR_SLOT_U], m->U));
  }
  if (x->opts.write_output && (tsr_schedule_any(&x->c->output.snapshot_every) || x->opts.restart))
    TSR_CALL(tsr_run_start_snapshots(x));
  return TSR_OK;
}

static tsr_err advance(tsr_run_ctx *x, tsr_run_result *res) { return solve(x->method, res); }

static tsr_err finish_run(tsr_run_ctx *x, tsr_run_result *res) { return finish(x->method, res); }

static void teardown(tsr_run_ctx *x) {
  impl *m = x->method;
  if (!m) return;
  if (m->ts) TSDestroy(&m->ts);
  if (m->U) VecDestroy(&m->U);
  if (m->P) MatDestroy(&m->P);
  if (m->Jrhs) MatDestroy(&m->Jrhs);
  tsr_implicit_op_destroy(&m->op);
  free(m->state_buf);
  tsr_implicit_options_clear(m);
  free(m);
  x->method = NULL;
}

const tsr_method_ops tsr_method_implicit = {
    .setup = setup,
    .peers = tsr_run_halo_peers,
    .start = start,
    .advance = advance,
    .finish = finish_run,
    .report = report_more,
    .teardown = teardown,
};
