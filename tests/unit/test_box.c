/* Box algebra: intersection, growth, shifts, containment and cell counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decomp/box.h"

static tsr_box B(int x0, int y0, int z0, int x1, int y1, int z1) {
  return (tsr_box){{x0, y0, z0}, {x1, y1, z1}};
}

static void make_and_count(void **s) {
  int c2[3] = {7, 5, 99}, c3[3] = {7, 5, 3};
  tsr_box a = tsr_box_make(2, c2), b = tsr_box_make(3, c3);
  assert_true(tsr_box_equal(&a, &(tsr_box){{0, 0, 0}, {7, 5, 1}}));
  assert_int_equal(tsr_box_cells(&a), 35);
  assert_int_equal(tsr_box_cells(&b), 105);
  tsr_box e = B(3, 0, 0, 3, 5, 1);
  assert_true(tsr_box_empty(&e));
  assert_int_equal(tsr_box_cells(&e), 0);
  tsr_box big = B(0, 0, 0, 100000, 100000, 1000); /* 1e13 cells must not overflow */
  assert_true(tsr_box_cells(&big) == (int64_t)100000 * 100000 * 1000);
}

static void intersect(void **s) {
  tsr_box a = B(0, 0, 0, 10, 10, 1), b = B(5, -3, 0, 15, 4, 1);
  tsr_box i = tsr_box_intersect(&a, &b);
  assert_true(tsr_box_equal(&i, &(tsr_box){{5, 0, 0}, {10, 4, 1}}));
  tsr_box c = B(10, 0, 0, 12, 10, 1); /* touching faces share no cell */
  tsr_box j = tsr_box_intersect(&a, &c);
  assert_true(tsr_box_empty(&j));
  tsr_box k = tsr_box_intersect(&b, &a);
  assert_true(tsr_box_equal(&i, &k)); /* symmetric */
}

static void grow_shift_contains(void **s) {
  tsr_box a = B(2, 3, 0, 6, 8, 1);
  tsr_box g = tsr_box_grow(&a, 2, 2);
  assert_true(tsr_box_equal(&g, &(tsr_box){{0, 1, 0}, {8, 10, 1}})); /* z untouched in 2D */
  tsr_box sh = tsr_box_grow(&g, 2, -2);
  assert_true(tsr_box_equal(&sh, &a));
  tsr_box thin = tsr_box_grow(&a, 2, -3);
  assert_true(tsr_box_empty(&thin));
  int v[3] = {-2, 10, 0};
  tsr_box m = tsr_box_shift(&a, v);
  assert_true(tsr_box_equal(&m, &(tsr_box){{0, 13, 0}, {4, 18, 1}}));
  assert_true(tsr_box_contains(&g, &a));
  assert_false(tsr_box_contains(&a, &g));
  tsr_box e = B(50, 50, 0, 50, 51, 1);
  assert_true(tsr_box_contains(&a, &e)); /* the empty box is everywhere */
  tsr_box g3 = tsr_box_grow(&(tsr_box){{0, 0, 0}, {4, 4, 4}}, 3, 1);
  assert_int_equal(tsr_box_cells(&g3), 216);
  assert_int_equal(tsr_box_len(&g3, 2), 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(make_and_count),
      cmocka_unit_test(intersect),
      cmocka_unit_test(grow_shift_contains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
