/* The run driver (solver/run.h, tsr_run): one sequence for every method (solver/method.h). */
#include <string.h>

#include "solver/method.h"
#include "solver/run_internal.h"
#include "solver/watchdog.h"

const tsr_method_ops *tsr_method_of(const tsr_case *c) {
  if (c->method == TSR_METHOD_PINN) return &tsr_method_pinn;
  if (c->decomp.time_slices > 1) return &tsr_method_parareal;
  if (c->method == TSR_METHOD_IMPLICIT) return &tsr_method_implicit;
  return &tsr_method_explicit;
}

/* From here on a rank that stops (crash, hang, lost GPU) stops the job instead of leaving its
 * peers waiting: the watchdog names the ranks this rank would wait for. */
static tsr_err watch(tsr_run_ctx *x) {
  int peers[64];
  int n = x->m->peers ? x->m->peers(x, peers, 64) : -1;
  return n < 0 ? TSR_OK : tsr_watchdog_start(x->rank, x->c->comm.timeout, peers, n);
}

static tsr_err drive(tsr_run_ctx *x, tsr_run_result *res) {
  const tsr_method_ops *m = x->m;
  double t0 = MPI_Wtime();
  TSR_CALL(tsr_run_agree(x->comm, m->setup(x)));
  x->phase[PH_SETUP] = MPI_Wtime() - t0;
  TSR_CALL(tsr_run_agree(x->comm, watch(x)));
  if (x->opts.write_output) TSR_CALL(tsr_run_prepare_outdir_ctx(x));
  if (tsr_run_relaunch_fresh(x->comm, x->opts.restart, x->out_dir)) x->opts.restart = NULL;
  if (x->opts.write_output && !x->opts.restart)
    TSR_CALL(tsr_run_refuse_earlier(x->comm, x->out_dir));
  TSR_CALL(tsr_run_agree(x->comm, m->start(x)));
  TSR_CALL(m->advance(x, res));
  /* stopped early: the checkpoint holds the state; final.h5 and the report are the end's */
  if (!x->opts.write_output || res->stopped) return TSR_OK;
  return m->finish(x, res);
}

tsr_err tsr_run(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts, tsr_run_result *res) {
  return tsr_run_method(c, comm, opts, tsr_method_of(c), res);
}

tsr_err tsr_run_method(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts,
                       const tsr_method_ops *m, tsr_run_result *res) {
  tsr_run_ctx x;
  tsr_run_ctx_init(&x, c, comm, opts);
  x.m = m;
  memset(res, 0, sizeof *res);
  tsr_err err = drive(&x, res);
  /* before the method's teardown: the watchdog's abort hook may name its communicators */
  tsr_watchdog_stop();
  if (x.m->teardown) x.m->teardown(&x);
  tsr_run_ctx_end(&x, err);
  return err;
}
