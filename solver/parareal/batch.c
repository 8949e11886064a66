/* solver/parareal/batch.h: the launch groups' rule and TESSERA_PARAREAL_BATCH, for every build;
 * without CUDA no batch is ever made. */
#include "solver/parareal/batch.h"
#include "solver/parareal/coarse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tsr_pr_batch_group(int n, size_t slice_bytes, size_t l2) {
  if (n < 1) return 1;
  if (slice_bytes == 0 || (size_t)n * slice_bytes <= l2 || 2 * slice_bytes > l2) return n;
  /* groups of equal size, so that no last group of a few slices runs on a GPU it cannot fill */
  const int most = (int)(l2 / slice_bytes), ngroups = (n + most - 1) / most;
  return (n + ngroups - 1) / ngroups;
}

tsr_err tsr_pr_batch_env(const char *v, int *on, int *group) {
  *on = 1;
  *group = 0;
  if (!v || !*v || !strcmp(v, "auto") || !strcmp(v, "on")) return TSR_OK;
  if (!strcmp(v, "off")) {
    *on = 0;
    return TSR_OK;
  }
  char *end = NULL;
  errno = 0;
  const long g = strtol(v, &end, 10);
  if (errno || !isdigit((unsigned char)*v) || *end || g < 1 || g > 1000000)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "TESSERA_PARAREAL_BATCH=%s: expected off, auto (or on), "
                       "or the number of time slices a batched launch takes (a whole number >= 1); "
                       "unset it for the default (auto: as many as fit in the GPU's L2 cache)",
                       v);
  *group = (int)g;
  return TSR_OK;
}

#ifndef TSR_HAVE_CUDA
tsr_err tsr_pr_batch_create(struct tsr_run_ctx *fx, int n, tsr_pr_batch **b) {
  (void)fx;
  (void)n;
  *b = NULL;
  int on, group, mode; /* read all the same: a mistyped value is said wherever the run is */
  TSR_CALL(tsr_pr_batch_env(getenv("TESSERA_PARAREAL_BATCH"), &on, &group));
  return tsr_pr_block_mode("TESSERA_PARAREAL_FINE_BLOCK", &mode);
}

tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out) {
  (void)b, (void)na, (void)act, (void)steps, (void)in, (void)out;
  return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__, "parareal batches need CUDA");
}

int tsr_pr_batch_group_of(const tsr_pr_batch *b) {
  (void)b;
  return 0;
}

int tsr_pr_batch_block(const tsr_pr_batch *b) {
  (void)b;
  return 0;
}

tsr_block_shape tsr_pr_batch_block_shape(const tsr_pr_batch *b) {
  (void)b;
  return (tsr_block_shape){0, 0, 0};
}

void tsr_pr_batch_destroy(tsr_pr_batch **b) {
  if (b) *b = NULL;
}
#endif
