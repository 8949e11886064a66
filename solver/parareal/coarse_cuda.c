/* Parareal's coarse steps in one GPU launch (coarse.h). */
#include "solver/parareal/coarse.h"

#include <stdlib.h>

#include "kernels/block_steps.h"
#include "solver/backend.h"
#include "solver/explicit.h"
#include "solver/run_internal.h"

tsr_block_scheme tsr_pr_block_scheme(const struct tsr_run_ctx *y) {
  const tsr_scheme_plan *sp = &y->scheme;
  tsr_block_scheme sc = {.nstage = sp->nstage, .result = sp->result};
  for (int s = 0; s < sp->nstage; ++s) {
    sc.kind[s] = (int)sp->stage[s].kind;
    sc.in[s] = sp->stage[s].in;
    sc.out[s] = sp->stage[s].out;
  }
  return sc;
}

tsr_field *tsr_pr_block_acc(const struct tsr_run_ctx *y) {
  return y->scheme.uses_acc ? y->acc : NULL;
}

tsr_err tsr_pr_coarse_block_pick(tsr_run_ctx *y, int *on) {
  *on = 0;
  int mode;
  TSR_CALL(tsr_pr_block_mode("TESSERA_PARAREAL_COARSE_BLOCK", &mode));
  if (!mode || y->be != &tsr_backend_cuda || y->size != 1 || y->nshell != 0 || y->rb ||
      y->fuse > 1 || y->radius != 1 || tsr_run_timed(y) ||
      !tsr_box_equal(&y->interior, &y->box) || y->c->ncomp > 2)
    return TSR_OK;
  for (int f = 0; f < 6; ++f)
    if (y->exchanged[f]) return TSR_OK;
  const tsr_block_scheme sc = tsr_pr_block_scheme(y);
  if (mode == 1 && !tsr_block_steps_staged(&sc, y->slot, tsr_pr_block_acc(y))) return TSR_OK;
  /* nothing depends on t: the values of t = 0 serve every step */
  TSR_CALL(tsr_run_source_eval(y, 0.0));
  const tsr_bc_face *faces[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  int nface;
  TSR_CALL(tsr_backend_cuda_faces(y, 0.0, faces, vals, &nface));
  TSR_CALL(y->be->sync(y));
  *on = 1;
  return TSR_OK;
}

tsr_err tsr_pr_coarse_block_advance(tsr_run_ctx *y, int64_t n) {
  const tsr_block_scheme sc = tsr_pr_block_scheme(y);
  const tsr_bc_face *faces[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  int nface;
  TSR_CALL(tsr_backend_cuda_faces(y, 0.0, faces, vals, &nface));
  TSR_CALL(tsr_block_steps_cuda(&y->desc, &sc, y->slot, tsr_pr_block_acc(y), y->src,
                                nface, faces, vals, n, tsr_backend_cuda_stream(y)));
  if (n % 2) tsr_explicit_swap_slots(y);
  return TSR_OK;
}
