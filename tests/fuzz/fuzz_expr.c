/* libFuzzer target: the expression parser and validator (io/expr.h). The input is the
 * expression's text, then NUL-separated names of params (as a case's params: section gives
 * them; invalid or clashing names must be refused, not crash). An expression that compiles
 * is evaluated at a few points and rendered as C (tsr_expr_to_c), and that canonical text must
 * compile again to an expression with the same values, bit for bit: the GPU compiles that text
 * with NVRTC, so a rendering that changed the meaning would be a wrong answer on the device.
 * Built by tests/fuzz/run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/expr.h"

#define MAX_PARAMS 8

static const double points[][4] = {
    {0.25, 0.5, 0.75, 0.0}, {0.0, 0.0, 0.0, 1.0}, {-1.5, 2.0, 1e-3, 0.125}, {1e300, -3, 7, 2}};

static void expect_reported(tsr_err err, int errcol, size_t len) {
  if (err == TSR_ERR_MEMORY && tsr_err_message()[0]) return;
  if (err == TSR_ERR_INPUT && tsr_err_message()[0] && errcol >= -1 && errcol <= (long)len) return;
  fprintf(stderr, "fuzz_expr: tsr_expr_compile returned %s, column %d of %zu, message '%s'\n",
          tsr_err_name(err), errcol, len, tsr_err_message());
  abort();
}

static int same(double a, double b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void check_canonical(tsr_expr *e, const tsr_expr_env *env) {
  static char c_text[1 << 16];
  char tiny[4];
  (void)tsr_expr_to_c(e, tiny, sizeof tiny); /* too short: an error, never an overflow (ASan) */
  tsr_err_clear();
  tsr_err err = tsr_expr_to_c(e, c_text, sizeof c_text);
  if (err) {
    fprintf(stderr, "fuzz_expr: tsr_expr_to_c: %s\n", tsr_err_message());
    abort();
  }
  tsr_expr *again = NULL;
  int col = -2;
  err = tsr_expr_compile(c_text, env, &again, &col);
  if (err == TSR_ERR_INPUT && strlen(c_text) > 4096) return; /* the length limit, not a bug */
  /* the nesting limit counts the text's levels, and the canonical text parenthesises every
   * unary minus (so that C never reads "--"): a chain of 130 minus signs, 131 levels as
   * written, is about 260 in C. A limit of the parser, not a wrong value (CI, session 20) */
  if (err == TSR_ERR_INPUT && strstr(tsr_err_message(), "nested too deeply")) return;
  if (err) {
    fprintf(stderr, "fuzz_expr: the canonical text '%s' does not compile: %s (column %d)\n",
            c_text, tsr_err_message(), col);
    abort();
  }
  for (size_t i = 0; i < sizeof points / sizeof *points; ++i) {
    const double *p = points[i];
    double a = tsr_expr_eval(e, p[0], p[1], p[2], p[3]);
    double b = tsr_expr_eval(again, p[0], p[1], p[2], p[3]);
    if (!same(a, b)) {
      fprintf(stderr, "fuzz_expr: the canonical text '%s' gives %.17g, the original %.17g\n",
              c_text, b, a);
      abort();
    }
  }
  if (tsr_expr_depends_on_time(e) != tsr_expr_depends_on_time(again)) abort();
  tsr_expr_destroy(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  const char *names[MAX_PARAMS];
  double values[MAX_PARAMS];
  int n = 0;
  for (char *p = buf + strlen(buf); p < buf + size && n < MAX_PARAMS; p += strlen(p)) {
    names[n] = ++p;
    values[n] = 0.5 + n;
    n++;
  }
  tsr_expr_env env = {n, names, values};
  tsr_expr *e = NULL;
  int col = -2;
  tsr_err err = tsr_expr_compile(buf, &env, &e, &col);
  if (err) {
    expect_reported(err, col, strlen(buf));
    if (e) abort();
  } else {
    double x[3] = {0.1, 0.2, 0.3}, y[3] = {1, 2, 3}, out[3];
    tsr_expr_eval_many(e, 3, x, y, NULL, 0.5, out);
    if (!same(out[1], tsr_expr_eval(e, 0.2, 2, 0, 0.5))) abort();
    (void)tsr_expr_uses(e, "x");
    check_canonical(e, &env);
    tsr_expr_destroy(&e);
  }
  tsr_err_clear();
  free(buf);
  return 0;
}
