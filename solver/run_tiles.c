/* Time tiles: the steps of a fused block (time.fuse > 1) taken several per pass over memory
 * (kernels/steps.h) where the backend can.
 *
 * Where they apply: forward Euler, SSP-RK2, SSP-RK3 and RK4 (a step's stages are levels of
 * the pass, the later stages reading the step's base, and RK4's its running sum, on chip:
 * kernels/steps.h; the run's acc field is left as it was), a stencil of radius 1, boundary
 * values and a source that do not depend on t (a pass refills the physical ghosts on chip from
 * the face values, the same at every stage), and a backend with a kernel for the case's
 * dimension. Elsewhere the block's steps go stage by stage as before.
 *
 * Which steps a pass takes: the block's first step keeps its overlap of the exchange with the
 * interior (it exchanges), unless this rank exchanges no face (one GPU without periodic axes),
 * where the pass starts at the block's first step. A pass writes the result slot of its first
 * step and the slots swap once per step after it, so its length is odd (after an odd number
 * of swaps the state slot is the one it wrote). The lengths are the largest odd numbers the
 * backend takes: with a backend that takes 5, the 5 steps after the exchanging step of a
 * block of 6 are one pass, and a block of 5 that exchanges nothing is one pass. A forward
 * Euler pass takes at least 3 steps (one step is a plain stage); an SSP or RK4 pass may take
 * one (its stages are several levels), and on GPUs takes exactly one.
 *
 * What a pass changes for the loop: the states in the middle of a pass are never in memory,
 * so a block ends where the run needs a state (a monitor, a snapshot, a checkpoint, an
 * injected fault) and a stop that arrives in the middle of a pass is taken at its end. */
#include <stdlib.h>
#include <string.h>

#include "kernels/steps.h"
#include "solver/fault.h"
#include "solver/run_internal.h"
#include "solver/schedule.h"

const char *tsr_run_tiles_refused(const tsr_run_ctx *x, int taken) {
  const char *env = getenv("TESSERA_TIME_TILES");
  if (x->c->method != TSR_METHOD_EXPLICIT) return "not the explicit method";
  if (env && strcmp(env, "off") == 0) return "TESSERA_TIME_TILES=off";
  if (!taken) return "the scheme is not one a pass takes (forward Euler, SSP-RK2, SSP-RK3, RK4)";
  if (x->radius != 1) return "the stencil is wider than one cell";
  if (x->src_timed) return "the source depends on t";
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i)
    if (tsr_bc_face_timed(x->bc, i)) return "a boundary value depends on t";
  return NULL;
}

void tsr_run_tiles_setup(tsr_run_ctx *x) {
  const tsr_scheme_plan *sp = &x->scheme;
  x->tile_max = 0;
  x->tile_why = tsr_run_tiles_refused(
      x, tsr_steps_stages(sp->stage[sp->nstage - 1].kind) == sp->nstage);
  if (!x->tile_why && (!x->be->steps_max || !(x->tile_max = x->be->steps_max(x))))
    x->tile_why = "the backend has no kernel for this dimension, precision, model and scheme, "
                  "or it does not pay";
  if (x->tile_max == 1 && sp->nstage == 1) x->tile_max = 0;
}

static int exchanges_any(const tsr_run_ctx *x) {
  for (int f = 0; f < 6; ++f)
    if (x->exchanged[f]) return 1;
  return 0;
}

int tsr_run_tiles_pass(const tsr_run_ctx *x, int pos) {
  if (!x->tile_max || x->fuse <= 1) return -1;
  if (pos == 0 && exchanges_any(x)) return -1;
  /* the passes before pos, from the block's first step that takes them */
  int p = exchanges_any(x) ? 1 : 0;
  for (;;) {
    int left = x->fuse_len - p, m = left < x->tile_max ? left : x->tile_max;
    if (m % 2 == 0) --m;
    if (p == pos) return m > 1 || x->scheme.nstage > 1 ? m : -1;
    if (p > pos) return 0; /* inside a pass: nothing to issue */
    p += m;
  }
}

/* Whether the run reads the state after `step` steps (so that no pass may end past it). */
static int state_read(const tsr_run_ctx *x, int64_t step) {
  const tsr_case *c = x->c;
  if (step % tsr_run_monitor_every(x) == 0 || step >= x->nsteps) return 1;
  if (x->snap && tsr_schedule_due(&c->output.snapshot_every, step, x->dt)) return 1;
  if (x->opts.write_output && tsr_schedule_due(&c->output.checkpoint_every, step, x->dt))
    return 1;
  const tsr_fault *f = x->opts.fault;
  return f && f->kind != TSR_FAULT_NONE && f->step == step;
}

int tsr_run_tiles_block_len(const tsr_run_ctx *x, int64_t step, int len) {
  if (x->tile_max < 3) return len;
  for (int q = 1; q < len; ++q)
    if (state_read(x, step + q)) return q;
  return len;
}

tsr_err tsr_run_tiles_issue(tsr_run_ctx *x, const tsr_stage_desc *d, int pos, int m,
                            tsr_field *in, tsr_field *out) {
  const tsr_backend_ops *be = x->be;
  double t0 = MPI_Wtime();
  /* a pass starts a block only where nothing is exchanged: no halo, no face part beyond */
  TSR_CHECK(pos > 0 || !exchanges_any(x), TSR_ERR_INTERNAL,
            "a time tile began a block that exchanges ghosts");
  const tsr_box r = tsr_run_grown(x, (x->fuse_len - pos - m) * x->scheme.nstage * x->radius);
  tsr_field *base = x->slot[TSR_SLOT_U];
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 0, d, &r, in, base, x->src));
  TSR_CALL(be->steps(x, d, m, &r, in, x->src, out));
  if (x->rb) TSR_CALL(tsr_run_rebalance_mark(x, 0, 1, d, &r, in, base, x->src));
  x->phase[PH_COMPUTE] += MPI_Wtime() - t0;
  return TSR_OK;
}

void tsr_run_tiles_report(const tsr_run_ctx *x, tsr_json *j) {
  tsr_json_object_begin(j, "time_tiles");
  tsr_json_int(j, "max_steps", x->tile_max);
  tsr_json_int(j, "passes", x->tile_passes);
  tsr_json_int(j, "tiled_steps", x->tile_steps);
  if (x->tile_why) tsr_json_string(j, "off_because", x->tile_why);
  else if (x->fuse <= 1) /* auto's measurement may have run passes (report.json fuse_auto) */
    tsr_json_string(j, "off_because", x->c->time.fuse == TSR_FUSE_AUTO ? "time.fuse auto chose 1"
                                                                       : "time.fuse is 1");
  tsr_json_object_end(j);
}
