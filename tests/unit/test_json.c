/* tsr_json: exact text of small documents, escapes, non-finite numbers, round trips. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/json.h"

/* Everything written to fp so far, as a NUL-terminated string the caller frees. */
static char *slurp(FILE *fp) {
  long n = ftell(fp);
  assert_true(n >= 0);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  rewind(fp);
  assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
  s[n] = '\0';
  return s;
}

static void test_nested_document(void **state) {
  (void)state;
  FILE *fp = tmpfile();
  assert_non_null(fp);
  tsr_json j;
  tsr_json_init(&j, fp);
  tsr_json_object_begin(&j, NULL);
  tsr_json_string(&j, "name", "heat3d");
  tsr_json_int(&j, "ranks", 4);
  tsr_json_int(&j, "big", INT64_MIN);
  tsr_json_bool(&j, "ok", 1);
  tsr_json_bool(&j, "gpu", 0);
  tsr_json_number(&j, "dt", 0.5);
  tsr_json_number(&j, "nan", NAN);
  tsr_json_number(&j, "inf", -INFINITY);
  tsr_json_array_begin(&j, "cells");
  tsr_json_int(&j, NULL, 8);
  tsr_json_array_begin(&j, NULL);
  tsr_json_number(&j, NULL, 1e300);
  tsr_json_array_end(&j);
  tsr_json_object_begin(&j, NULL);
  tsr_json_string(&j, "k", NULL);
  tsr_json_object_end(&j);
  tsr_json_array_end(&j);
  tsr_json_object_begin(&j, "empty");
  tsr_json_object_end(&j);
  tsr_json_array_begin(&j, "none");
  tsr_json_array_end(&j);
  tsr_json_object_end(&j);
  char *got = slurp(fp);
  const char *want = "{\n"
                     "  \"name\": \"heat3d\",\n"
                     "  \"ranks\": 4,\n"
                     "  \"big\": -9223372036854775808,\n"
                     "  \"ok\": true,\n"
                     "  \"gpu\": false,\n"
                     "  \"dt\": 0.5,\n"
                     "  \"nan\": null,\n"
                     "  \"inf\": null,\n"
                     "  \"cells\": [\n"
                     "    8,\n"
                     "    [\n"
                     "      1.0000000000000001e+300\n"
                     "    ],\n"
                     "    {\n"
                     "      \"k\": null\n"
                     "    }\n"
                     "  ],\n"
                     "  \"empty\": {},\n"
                     "  \"none\": []\n"
                     "}\n";
  assert_string_equal(got, want);
  assert_int_equal(j.depth, 0);
  free(got);
  fclose(fp);
}

static void test_string_escapes(void **state) {
  (void)state;
  FILE *fp = tmpfile();
  assert_non_null(fp);
  tsr_json j;
  tsr_json_init(&j, fp);
  tsr_json_object_begin(&j, NULL);
  tsr_json_string(&j, "q\"k", "a\"b\\c/d\n\t\r\b\f\x01\x1f\x7f end \xc3\xa9");
  tsr_json_object_end(&j);
  char *got = slurp(fp);
  const char *want = "{\n"
                     "  \"q\\\"k\": \"a\\\"b\\\\c/d\\n\\t\\r\\b\\f\\u0001\\u001f\x7f end "
                     "\xc3\xa9\"\n"
                     "}\n";
  assert_string_equal(got, want);
  free(got);
  fclose(fp);
}

/* %.17g must give back the very same double, which %g (6 digits) would not. */
static void test_number_round_trip(void **state) {
  (void)state;
  const double values[] = {0.1, 1.0 / 3.0, -2.5e-310, 6.02214076e23, 0x1.fffffffffffffp+1023};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; ++i) {
    FILE *fp = tmpfile();
    assert_non_null(fp);
    tsr_json j;
    tsr_json_init(&j, fp);
    tsr_json_number(&j, NULL, values[i]);
    char *got = slurp(fp);
    assert_int_equal(got[strlen(got) - 1], '\n');
    char *endp;
    double back = strtod(got, &endp);
    assert_int_equal(*endp, '\n');
    assert_memory_equal(&back, &values[i], sizeof back);
    if (i == 0) assert_string_equal(got, "0.10000000000000001\n");
    free(got);
    fclose(fp);
  }
}

/* An extra end must not write a stray bracket or drive the depth negative. */
static void test_unbalanced_end_ignored(void **state) {
  (void)state;
  FILE *fp = tmpfile();
  assert_non_null(fp);
  tsr_json j;
  tsr_json_init(&j, fp);
  tsr_json_array_begin(&j, NULL);
  tsr_json_int(&j, NULL, 1);
  tsr_json_int(&j, NULL, 2);
  tsr_json_array_end(&j);
  tsr_json_array_end(&j);
  char *got = slurp(fp);
  assert_string_equal(got, "[\n  1,\n  2\n]\n");
  assert_int_equal(j.depth, 0);
  free(got);
  fclose(fp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nested_document),
      cmocka_unit_test(test_string_escapes),
      cmocka_unit_test(test_number_round_trip),
      cmocka_unit_test(test_unbalanced_end_ignored),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
