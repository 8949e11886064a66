/* solver/parareal/coarse.h: TESSERA_PARAREAL_COARSE_BLOCK and _FINE_BLOCK for every build;
 * without CUDA the block never applies. */
#include "solver/parareal/coarse.h"

#include <stdlib.h>
#include <string.h>

tsr_err tsr_pr_block_env(const char *name, const char *v, int *mode) {
  *mode = 1;
  if (!v || !*v || !strcmp(v, "auto")) return TSR_OK;
  if (!strcmp(v, "off")) *mode = 0;
  else if (!strcmp(v, "on")) *mode = 2;
  else
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s=%s: expected off, auto or on; unset it for the default (auto: a "
                       "slice's steps in one GPU launch where its fields fit in the blocks' "
                       "shared memory)", name, v);
  return TSR_OK;
}

tsr_err tsr_pr_block_mode(const char *name, int *mode) {
  return tsr_pr_block_env(name, getenv(name), mode);
}

#ifndef TSR_HAVE_CUDA
tsr_err tsr_pr_coarse_block_pick(struct tsr_run_ctx *y, int *on) {
  (void)y;
  *on = 0;
  int mode; /* read all the same: a mistyped value is said wherever the run is */
  return tsr_pr_block_mode("TESSERA_PARAREAL_COARSE_BLOCK", &mode);
}

tsr_err tsr_pr_coarse_block_advance(struct tsr_run_ctx *y, int64_t n) {
  (void)y, (void)n;
  return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__, "parareal's block steps need CUDA");
}
#endif
