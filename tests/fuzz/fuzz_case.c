/* libFuzzer target: the case reader. The input is the case file's text, then NUL-separated
 * --set options (so "model: heat\0time.end=2" is a file and one override), read as
 * `tessera run` and `check` read them: load, validate, compile every expression. A case that
 * can run (it loads and its expressions compile) must also survive the round trip through a
 * checkpoint's record (tsr_case_record, then tsr_case_load_record) with no resolved key
 * changed. Anything but a clean success or a reported input error (a crash, a leak, a hang,
 * an exit(), an internal error, an error with no message) is a finding. Built by
 * tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case.h"

#define MAX_OVERRIDES 8

/* A reported error must be an input error (or out of memory) with a message. */
static void expect_reported(tsr_err err, const char *what) {
  if (err == TSR_OK) return;
  if ((err == TSR_ERR_INPUT || err == TSR_ERR_MEMORY) && tsr_err_message()[0]) return;
  fprintf(stderr, "fuzz_case: %s returned %s with message '%s'\n", what, tsr_err_name(err),
          tsr_err_message());
  abort();
}

static void round_trip(const tsr_case *c) {
  char *record = tsr_case_record(c);
  if (!record) return; /* out of memory */
  tsr_case *back = NULL;
  tsr_err err = tsr_case_load_record("record", record, &back);
  if (err) {
    fprintf(stderr, "fuzz_case: a loaded case's record does not load: %s\nrecord:\n%s\n",
            tsr_err_message(), record);
    abort();
  }
  tsr_case_changes d;
  if (tsr_case_diff(c, back, &d) == TSR_OK && d.n) {
    fprintf(stderr, "fuzz_case: the record reads back with %d keys changed, first %s: %s -> %s\n",
            d.n, d.item[0].key, d.item[0].a, d.item[0].b);
    abort();
  }
  tsr_case_changes_free(&d);
  tsr_case_destroy(&back);
  free(record);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *overrides[MAX_OVERRIDES];
  int n = 0;
  for (char *p = buf + strlen(buf); p < buf + size && n < MAX_OVERRIDES; p += strlen(p))
    overrides[n++] = ++p;
  tsr_case *c = NULL;
  tsr_err err = tsr_case_load_string("fuzz.yaml", buf, n, overrides, &c);
  expect_reported(err, "tsr_case_load_string");
  if (err && c) {
    fprintf(stderr, "fuzz_case: an error left a case behind\n");
    abort();
  }
  if (c) {
    tsr_err xerr = tsr_case_check_expressions(c);
    expect_reported(xerr, "tsr_case_check_expressions");
    if (!xerr) round_trip(c); /* a case whose expressions fail never runs, so never records */
    tsr_case_destroy(&c);
  }
  tsr_err_clear();
  free(buf);
  return 0;
}
