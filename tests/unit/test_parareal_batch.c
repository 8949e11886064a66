/* solver/parareal/batch.h's launch groups: how many slices a batched launch takes for a given
 * L2 size, and TESSERA_PARAREAL_BATCH's values, read or refused by name. Pure functions: no
 * GPU is needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io/error.h"
#include "solver/parareal/batch.h"
#include "solver/parareal/coarse.h"

#define MB ((size_t)1 << 20)

static void test_group(void **state) {
  (void)state;
  const size_t l2 = 50 * MB; /* an H100's or an H200's */
  /* 2D 256^2, SSP-RK3: 4 fields of 258^2 doubles a slice, 16 slices in 33 MB: one group;
   * 32 slices, where 24 fit: two groups of 16, not 24 and 8 */
  const size_t s2 = 4 * 258 * 258 * 8;
  assert_int_equal(tsr_pr_batch_group(16, s2, l2), 16);
  assert_int_equal(tsr_pr_batch_group(32, s2, l2), 16);
  assert_int_equal(tsr_pr_batch_group(27, s2, l2), 14);
  assert_int_equal(tsr_pr_batch_group(8, s2, l2), 8); /* all fit: one group */
  /* 3D 64^3: 4 fields of 66^3 doubles, 8.8 MB a slice, 5 fit: 4 groups of 4 */
  const size_t s3 = 4 * (size_t)66 * 66 * 66 * 8;
  assert_int_equal(tsr_pr_batch_group(16, s3, l2), 4);
  assert_int_equal(tsr_pr_batch_group(5, s3, l2), 5);
  assert_int_equal(tsr_pr_batch_group(6, s3, l2), 3);
  /* a slice larger than half of L2: no group keeps two there, so all at once */
  assert_int_equal(tsr_pr_batch_group(16, 26 * MB, l2), 16);
  assert_int_equal(tsr_pr_batch_group(16, 24 * MB, l2), 2);
  /* the edges: one slice, nothing measured, no L2 reported */
  assert_int_equal(tsr_pr_batch_group(1, s3, l2), 1);
  assert_int_equal(tsr_pr_batch_group(16, 0, l2), 16);
  assert_int_equal(tsr_pr_batch_group(16, s3, 0), 16);
  /* a group is never larger than n; where it is smaller it fits in L2, and the groups are as
   * few as that allows, their sizes at most one apart */
  for (int n = 1; n <= 64; ++n)
    for (size_t s = MB / 4; s <= 64 * MB; s += MB / 4) {
      const int g = tsr_pr_batch_group(n, s, l2);
      assert_true(g >= 1 && g <= n);
      if (g == n) continue;
      const int most = (int)(l2 / s), ng = (n + g - 1) / g;
      assert_true((size_t)g * s <= l2);
      assert_int_equal(ng, (n + most - 1) / most);
      assert_true(n - (ng - 1) * g > g - ng); /* the last group is not left with a few */
    }
}

static void test_env(void **state) {
  (void)state;
  int on = -1, group = -1;
  const char *auto_ok[] = {NULL, "", "auto", "on"};
  for (int i = 0; i < 4; ++i) {
    assert_int_equal(tsr_pr_batch_env(auto_ok[i], &on, &group), TSR_OK);
    assert_int_equal(on, 1);
    assert_int_equal(group, 0);
  }
  assert_int_equal(tsr_pr_batch_env("off", &on, &group), TSR_OK);
  assert_int_equal(on, 0);
  assert_int_equal(tsr_pr_batch_env("3", &on, &group), TSR_OK);
  assert_int_equal(on, 1);
  assert_int_equal(group, 3);
  const char *bad[] = {"0", "-2", "4x", "three", "Off", " 3", "99999999999999999999"};
  for (int i = 0; i < (int)(sizeof bad / sizeof *bad); ++i) {
    assert_int_equal(tsr_pr_batch_env(bad[i], &on, &group), TSR_ERR_INPUT);
    const char *m = tsr_err_message();
    assert_non_null(strstr(m, "TESSERA_PARAREAL_BATCH"));
    assert_non_null(strstr(m, bad[i]));
    assert_non_null(strstr(m, "expected off, auto"));
    tsr_err_clear();
  }
}

/* TESSERA_PARAREAL_COARSE_BLOCK and _FINE_BLOCK (coarse.h): off, auto, on; anything else
 * named back with its variable */
static void test_coarse_env(void **state) {
  (void)state;
  const char *names[] = {"TESSERA_PARAREAL_COARSE_BLOCK", "TESSERA_PARAREAL_FINE_BLOCK"};
  for (int v = 0; v < 2; ++v) {
    const char *nm = names[v];
    int mode = -1;
    const char *auto_ok[] = {NULL, "", "auto"};
    for (int i = 0; i < 3; ++i) {
      assert_int_equal(tsr_pr_block_env(nm, auto_ok[i], &mode), TSR_OK);
      assert_int_equal(mode, 1);
    }
    assert_int_equal(tsr_pr_block_env(nm, "off", &mode), TSR_OK);
    assert_int_equal(mode, 0);
    assert_int_equal(tsr_pr_block_env(nm, "on", &mode), TSR_OK);
    assert_int_equal(mode, 2);
    const char *bad[] = {"1", "yes", "OFF", " on"};
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); ++i) {
      assert_int_equal(tsr_pr_block_env(nm, bad[i], &mode), TSR_ERR_INPUT);
      const char *m = tsr_err_message();
      assert_non_null(strstr(m, nm));
      assert_non_null(strstr(m, bad[i]));
      assert_non_null(strstr(m, "expected off, auto or on"));
      tsr_err_clear();
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_group),
      cmocka_unit_test(test_env),
      cmocka_unit_test(test_coarse_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
