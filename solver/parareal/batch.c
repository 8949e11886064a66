/* solver/parareal/batch.h without CUDA: no batch is ever made. */
#include "solver/parareal/batch.h"

#ifndef TSR_HAVE_CUDA
#include <stddef.h>

tsr_err tsr_pr_batch_create(struct tsr_run_ctx *fx, int n, tsr_pr_batch **b) {
  (void)fx;
  (void)n;
  *b = NULL;
  return TSR_OK;
}

tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out) {
  (void)b, (void)na, (void)act, (void)steps, (void)in, (void)out;
  return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__, "parareal batches need CUDA");
}

void tsr_pr_batch_destroy(tsr_pr_batch **b) {
  if (b) *b = NULL;
}
#else
typedef int tsr_pr_batch_c_is_empty_with_cuda; /* ISO C wants a declaration in every file */
#endif
