/* kernels/expr_cuda without a GPU: the generated device source of case expressions compiles
 * with NVRTC (PTX for compute_90 and a cubin for sm_90 need no device), carries each
 * expression's canonical C text and its params as literals that read back bit for bit, keeps
 * a*b+c unfused (-fmad=false), survives params named like CUDA functions or C++ keywords, and
 * a source NVRTC refuses comes back as TSR_ERR_INTERNAL with NVRTC's log. CUDA builds only
 * (tests/CMakeLists.txt drops *_cuda.c unit tests otherwise). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/error.h"
#include "io/expr.h"
#include "kernels/expr_cuda.h"
#include "kernels/expr_cuda_internal.h"

/* y0, j1 and norm are CUDA math functions, new and class C++ keywords: fine as case params,
 * so the generated source must not use them as C++ names. */
static const char *const PN[] = {"kappa", "y0", "norm", "new", "class", "j1",
                                 "tiny", "huge", "third", "negz", "avog", "three"};
static double PV[] = {0.7, 0.1, -1.25, 2.0, 1e22, -2.5e-300,
                      4.9406564584124654e-324, DBL_MAX, 1.0 / 3.0, -0.0, 6.02214076e23, 3.0};
#define NP ((int)(sizeof PV / sizeof PV[0]))
static const tsr_expr_env ENV = {NP, PN, PV};

/* Every function of the syntax, params, pi, unary minus, literals of every form. */
static const char *const TEXTS[] = {
    "sin(x) + cos(y) - tan(z) * atan(t)",
    "asin(x / 4) + acos(y / 4) * atan2(z, x)",
    "sinh(x) - cosh(y) / tanh(z + 3)",
    "exp(-t) * log(fabs(x) + 1) * log10(y * y + 2) + sqrt(fabs(z))",
    "cbrt(x) + floor(y * 3) - ceil(z * 3) + fmod(x * 7, y + 3)",
    "fmin(x, y) * fmax(y, z) + erf(t) + pow(fabs(x) + 0.5, y)",
    "sin(pi*x)*sin(pi*y)*exp(-3*pi*pi*kappa*t)",
    "-(x+1)*-(y-1)/-z + - -x + 2*-t",
    ".5*x + 1e-3*y - 2.5E+4*z + 3.*t + 1e300",
    "kappa*y0 + norm*new - class/j1 + tiny + huge + third + negz + avog + three",
};
#define NT ((int)(sizeof TEXTS / sizeof TEXTS[0]))

static tsr_expr *compile(const char *text) {
  tsr_expr *e = NULL;
  tsr_err err = tsr_expr_compile(text, &ENV, &e, NULL);
  if (err) fail_msg("'%s': %s", text, tsr_err_message());
  return e;
}

/* noinline: inlined, GCC 12 mistakes the result for a pointer to its local (-Wdangling-pointer) */
__attribute__((noinline)) static char *source_of(int n, tsr_expr **e) {
  char *src = NULL;
  tsr_err err = tsr_expr_cuda_source(n, (const tsr_expr *const *)e, &ENV, &src);
  if (err) fail_msg("tsr_expr_cuda_source: %s", tsr_err_message());
  assert_non_null(src);
  return src;
}

static void compile_ok(const char *src, const char *arch, char **image, size_t *size) {
  tsr_err err = tsr_expr_cuda_compile(src, arch, image, size);
  if (err) fail_msg("NVRTC for %s: %s\n--- source ---\n%s", arch, tsr_err_message(), src);
  assert_non_null(*image);
  assert_true(*size > 0);
}

static void test_source_compiles(void **state) {
  tsr_expr *e[NT + 1];
  for (int i = 0; i < NT; i++) e[i] = compile(TEXTS[i]);
  e[NT] = NULL; /* no expression: evaluates to 0 */
  char *src = source_of(NT + 1, e);
  char want[1200], c[1024];
  for (int i = 0; i <= NT; i++) {
    snprintf(want, sizeof want, "__device__ double tsr_e%d(double x, double y, double z, double t)", i);
    assert_non_null(strstr(src, want));
    snprintf(want, sizeof want, "case %d: return tsr_e%d(x, y, z, t);", i, i);
    assert_non_null(strstr(src, want));
  }
  /* expressions without params appear as their canonical C text */
  for (int i = 0; i < 6; i++) {
    assert_int_equal(tsr_expr_to_c(e[i], c, sizeof c), TSR_OK);
    snprintf(want, sizeof want, "  return %s;\n", c);
    assert_non_null(strstr(src, want));
  }
  assert_non_null(strstr(src, "3.1415926535897931"));
  assert_non_null(strstr(src, "tsr_p_kappa * tsr_p_y0 + tsr_p_norm * tsr_p_new"));
  assert_non_null(strstr(src, "  return 0.0;\n}"));
  assert_null(strstr(src, " y0 ")); /* never a bare clashing name */
  for (const char *k = "tsr_expr_face\0tsr_expr_points\0"; *k; k += strlen(k) + 1) {
    snprintf(want, sizeof want, "extern \"C\" __global__ void %s(", k);
    assert_non_null(strstr(src, want));
  }
  /* the cell kernel, once per storage precision of the field it fills */
  assert_non_null(strstr(src, "extern \"C\" __global__ void NAME(int e, T *u,"));
  assert_non_null(strstr(src, "TSR_EXPR_CELLS(tsr_expr_cells, double)\n"));
  assert_non_null(strstr(src, "TSR_EXPR_CELLS(tsr_expr_cells_f, float)\n"));

  char *img = NULL;
  size_t size = 0;
  compile_ok(src, "compute_90", &img, &size);
  assert_int_equal(img[size - 1], '\0'); /* PTX is text, NUL counted */
  assert_non_null(strstr(img, ".entry tsr_expr_cells"));
  assert_non_null(strstr(img, ".entry tsr_expr_face"));
  assert_non_null(strstr(img, ".entry tsr_expr_points"));
  free(img);
  /* a cubin needs no device either */
  compile_ok(src, "sm_90", &img, &size);
  assert_memory_equal(img, "\x7f" "ELF", 4);
  free(img);
  free(src);
  for (int i = 0; i < NT; i++) tsr_expr_destroy(&e[i]);
}

static void test_param_literals(void **state) {
  tsr_expr *e = compile(TEXTS[NT - 1]);
  char *src = source_of(1, &e);
  for (int k = 0; k < NP; k++) {
    char decl[64];
    snprintf(decl, sizeof decl, "  const double tsr_p_%s = ", PN[k]);
    const char *p = strstr(src, decl);
    if (!p) fail_msg("no declaration of param %s in\n%s", PN[k], src);
    p += strlen(decl);
    char *end;
    double v = strtod(p, &end);
    assert_int_equal(*end, ';');
    /* a double literal, so C++ never reads it as an integer */
    assert_true(memchr(p, '.', (size_t)(end - p)) || memchr(p, 'e', (size_t)(end - p)));
    if (memcmp(&v, &PV[k], sizeof v))
      fail_msg("param %s = %.17g reads back as %.17g from '%.*s'", PN[k], PV[k], v,
               (int)(end - p), p);
  }
  /* only the params an expression uses are declared in it */
  tsr_expr *f = compile("kappa * x");
  char *s2 = source_of(1, &f);
  assert_non_null(strstr(s2, "tsr_p_kappa = 0.69999999999999996;"));
  assert_null(strstr(s2, "tsr_p_norm"));
  free(s2);
  free(src);
  tsr_expr_destroy(&e);
  tsr_expr_destroy(&f);
}

/* The bitwise contract: with -fmad=false, a*b+c stays a multiply and an add, in the user's
 * arithmetic and in the cell-centre formula lo + (i + 0.5) * h. (The math functions use
 * explicit fma internally, so the check needs an expression without them.) */
static void test_no_contraction(void **state) {
  tsr_expr *e = compile("x*y + z*t + 2*x*x - kappa*y");
  char *src = source_of(1, &e), *img = NULL;
  size_t size = 0;
  compile_ok(src, "compute_90", &img, &size);
  assert_null(strstr(img, "fma."));
  assert_true(strstr(img, "mul.rn.f64") || strstr(img, "mul.f64"));
  free(img);
  free(src);
  tsr_expr_destroy(&e);
}

static void test_broken_source(void **state) {
  char *img = (char *)1;
  size_t size = 7;
  const char *bad = "__device__ double f(double x) { return x + undefined_name_q; }\n";
  assert_int_equal(tsr_expr_cuda_compile(bad, "compute_90", &img, &size), TSR_ERR_INTERNAL);
  assert_null(img);
  assert_int_equal(size, 0);
  const char *msg = tsr_err_message();
  assert_non_null(strstr(msg, "NVRTC could not compile"));
  assert_non_null(strstr(msg, "tessera_expr.cu(1)")); /* the log's position */
  assert_non_null(strstr(msg, "undefined_name_q"));
  /* an architecture NVRTC does not know is refused with its log too */
  assert_int_equal(tsr_expr_cuda_compile("", "sm_1", &img, &size), TSR_ERR_INTERNAL);
  assert_non_null(strstr(tsr_err_message(), "sm_1"));
}

static void test_misuse_and_empty(void **state) {
  char *src = (char *)1;
  assert_int_equal(tsr_expr_cuda_source(-1, NULL, NULL, &src), TSR_ERR_INTERNAL);
  assert_null(src);
  assert_int_equal(tsr_expr_cuda_source(2, NULL, NULL, &src), TSR_ERR_INTERNAL);
  /* no expressions: the kernels still compile (every index gives 0) */
  assert_int_equal(tsr_expr_cuda_source(0, NULL, NULL, &src), TSR_OK);
  char *img = NULL;
  size_t size = 0;
  compile_ok(src, "compute_90", &img, &size);
  free(img);
  free(src);
  tsr_expr_destroy(NULL);
  tsr_expr_cuda_destroy(NULL);
  tsr_expr_cuda *m = NULL;
  tsr_expr_cuda_destroy(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_source_compiles), cmocka_unit_test(test_param_literals),
      cmocka_unit_test(test_no_contraction),  cmocka_unit_test(test_broken_source),
      cmocka_unit_test(test_misuse_and_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
