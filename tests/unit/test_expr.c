/* io/expr: the accepted C subset, its error messages and columns, the canonical C text, and
 * bitwise agreement of muparser's evaluation with the same expression compiled as C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "io/error.h"
#include "io/expr.h"

/* Not const, and its address escapes into env: the compiler cannot fold the references' uses
 * of the params (it would fold libm calls with MPFR, not glibc). */
double P[4] = {0.7, 2.0, -1.25, 3.0};
static const char *const PN[4] = {"kappa", "a", "b", "c"};
static const tsr_expr_env ENV = {4, PN, P};

#define KAPPA P[0]
#define A P[1]
#define B P[2]
#define C P[3]
#define PI 3.14159265358979323846

typedef double (*ref_fn)(double x, double y, double z, double t);

typedef struct {
  const char *text;
  ref_fn ref;
} case_t;

/* Each expression twice: as tessera text, and as the C it must equal bit for bit. */
#define EXPR_CASES(X)                                                                          \
  X(r_mix, "sin(x)*exp(-t)+pow(y,2.5)/fmax(z,1)", sin(x) * exp(-t) + pow(y, 2.5) / fmax(z, 1)) \
  X(r_trig, "sin(x)+cos(y)-tan(z)*atan(t)", sin(x) + cos(y) - tan(z) * atan(t))                \
  X(r_inv, "asin(x/4)+acos(y/4)*atan2(z, x)", asin(x / 4) + acos(y / 4) * atan2(z, x))         \
  X(r_hyp, "sinh(x)-cosh(y)/tanh(z+3)", sinh(x) - cosh(y) / tanh(z + 3))                       \
  X(r_log, "log(fabs(x)+1)*log10(y*y+2)+sqrt(fabs(z))",                                        \
    log(fabs(x) + 1) * log10(y * y + 2) + sqrt(fabs(z)))                                       \
  X(r_round, "cbrt(x)+floor(y*3)-ceil(z*3)+fmod(x*7, y+3)",                                    \
    cbrt(x) + floor(y * 3) - ceil(z * 3) + fmod(x * 7, y + 3))                                 \
  X(r_minmax, "fmin(x,y)*fmax(y,z)+erf(t)", fmin(x, y) * fmax(y, z) + erf(t))                  \
  X(r_pow, "pow(fabs(x)+0.5, y)+pow(kappa, a)", pow(fabs(x) + 0.5, y) + pow(KAPPA, A))         \
  X(r_lit, ".5*x + 1e-3*y - 2.5E+4*z + 3.*t", .5 * x + 1e-3 * y - 2.5E+4 * z + 3. * t)         \
  X(r_sub, "1-2-3+x-y-z", 1. - 2. - 3. + x - y - z)                                            \
  X(r_div, "8/4/2/x/y", 8. / 4. / 2. / x / y)                                                  \
  X(r_negmul, "2*-x + -x*x - -y + +z", 2. * -x + -x * x - -y + +z)                             \
  X(r_negpar, "-(x+1)*-(y-1)/-z", -(x + 1.) * -(y - 1.) / -z)                                  \
  X(r_assoc, "x+(y+z)-(x-(y-z))", x + (y + z) - (x - (y - z)))                                 \
  X(r_params, "kappa*x + a*y*b - c/pi", KAPPA * x + A * y * B - C / PI)                        \
  X(r_pi, "sin(pi*x)*sin(pi*y)*sin(pi*z)*exp(-3*pi*pi*kappa*t)",                               \
    sin(PI * x) * sin(PI * y) * sin(PI * z) * exp(-3. * PI * PI * KAPPA * t))                  \
  /* patterns muparser's bytecode optimiser rewrites when it sees bare variables */            \
  X(r_opt1, "2*(3*x+1) + (x+1)+x", 2. * (3. * x + 1.) + (x + 1.) + x)                          \
  X(r_opt2, "x*0 + 4*y/2 - (z+z)", x * 0. + 4. * y / 2. - (z + z))                             \
  X(r_opt3, "x*x*x + y*2 + 3 - z*3", x * x * x + y * 2. + 3. - z * 3.)                         \
  X(r_fold, "2*3*x + x*2*3 + (1+2)*y", 2. * 3. * x + x * 2. * 3. + (1. + 2.) * y)

#define DEFINE_REF(name, text, cexpr)                                                          \
  static double name(double x, double y, double z, double t) {                                 \
    (void)x, (void)y, (void)z, (void)t;                                                        \
    return cexpr;                                                                              \
  }
EXPR_CASES(DEFINE_REF)
#define LIST_CASE(name, text, cexpr) {text, name},
static const case_t CASES[] = {EXPR_CASES(LIST_CASE)};
#define NCASES (sizeof CASES / sizeof CASES[0])

static tsr_expr *compile_ok(const char *text) {
  tsr_expr *e = NULL;
  int col = -2;
  tsr_err err = tsr_expr_compile(text, &ENV, &e, &col);
  if (err != TSR_OK) fail_msg("'%s' refused at column %d: %s", text, col, tsr_err_message());
  assert_non_null(e);
  return e;
}

/* Same bits, or both NaN (which NaN C propagates depends on operand order in registers). */
static void assert_same(const char *text, double got, double want, double x, double y,
                        double z, double t) {
  uint64_t g, w;
  memcpy(&g, &got, 8);
  memcpy(&w, &want, 8);
  if (g == w || (isnan(got) && isnan(want))) return;
  fail_msg("'%s' at (%.17g, %.17g, %.17g, %.17g): muparser %.17g, C %.17g", text, x, y, z, t,
           got, want);
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static double uniform(double lo, double hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) * 0x1.0p-53;
}

static void test_fixed_points(void **state) {
  (void)state;
  static const double pts[][4] = {{0.5, 1.5, 2.5, 0.25}, {-1.75, 0.3, -0.9, 1.0},
                                  {1e-3, -2.0, 3.0, 0.0},   {-0.0, 0.0, -0.0, 2.0},
                                  {-1.0, 1.0, 0.6, 0.5},    {3.25, -3.5, 1e-5, 10.0}};
  for (size_t c = 0; c < NCASES; c++) {
    tsr_expr *e = compile_ok(CASES[c].text);
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
      const double *q = pts[i];
      assert_same(CASES[c].text, tsr_expr_eval(e, q[0], q[1], q[2], q[3]),
                  CASES[c].ref(q[0], q[1], q[2], q[3]), q[0], q[1], q[2], q[3]);
    }
    tsr_expr_destroy(&e);
    assert_null(e);
  }
}

static void test_random_points(void **state) {
  (void)state;
  enum { N = 1000 };
  static double x[N], y[N], z[N], out[N];
  for (size_t c = 0; c < NCASES; c++) {
    tsr_expr *e = compile_ok(CASES[c].text);
    double t = uniform(0, 2);
    for (int i = 0; i < N; i++) x[i] = uniform(-3, 3), y[i] = uniform(-3, 3), z[i] = uniform(-3, 3);
    tsr_expr_eval_many(e, N, x, y, z, t, out);
    for (int i = 0; i < N; i++)
      assert_same(CASES[c].text, out[i], CASES[c].ref(x[i], y[i], z[i], t), x[i], y[i], z[i], t);
    tsr_expr_eval_many(e, N, x, y, NULL, t, out); /* 2D: z is 0 */
    for (int i = 0; i < N; i++)
      assert_same(CASES[c].text, out[i], CASES[c].ref(x[i], y[i], 0.0, t), x[i], y[i], 0.0, t);
    tsr_expr_destroy(&e);
  }
}

/* The cases where muparser's optimiser, if it saw bare variables, gives other bits than C. */
static void test_optimiser_traps(void **state) {
  (void)state;
  volatile double big = 0.6e308, m1 = -1.0, nz = -0.0;
  tsr_expr *e = compile_ok("4*x/2");
  assert_true(isinf(tsr_expr_eval(e, big, 0, 0, 0))); /* 4x overflows in C; 2x would not */
  tsr_expr_destroy(&e);
  e = compile_ok("x*0");
  assert_true(signbit(tsr_expr_eval(e, m1, 0, 0, 0))); /* -0, not -0 + 0 */
  tsr_expr_destroy(&e);
  e = compile_ok("x+x");
  assert_true(signbit(tsr_expr_eval(e, nz, 0, 0, 0)));
  tsr_expr_destroy(&e);
  e = compile_ok("-x");
  assert_true(signbit(tsr_expr_eval(e, 0.0, 0, 0, 0)));
  tsr_expr_destroy(&e);
  e = compile_ok("-0");
  assert_true(signbit(tsr_expr_eval(e, 0, 0, 0, 0)));
  tsr_expr_destroy(&e);
}

static void test_constants_and_literals(void **state) {
  (void)state;
  static const struct {
    const char *text;
    double want;
  } k[] = {{"pi", PI},        {".5", 0.5},     {"1e-3", 1e-3}, {"2.5E+4", 2.5E+4},
           {"3.", 3.},        {"0.1", 0.1},    {"1-2-3", -4},  {"8/4/2", 1},
           {"a", 2.0},        {"-a*a", -4.0},  {"+1", 1},      {"- -1", 1},
           {"1e-400", 0},     {"4.9e-324", 4.9e-324},          {" \t1\n+\r2 ", 3},
           {"sin (0)", 0},    {"2*-3", -6},
           {"123456789012345678901234567890", 123456789012345678901234567890.0}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tsr_expr *e = compile_ok(k[i].text);
    assert_same(k[i].text, tsr_expr_eval(e, 9, 9, 9, 9), k[i].want, 9, 9, 9, 9);
    tsr_expr_destroy(&e);
  }
}

static void test_uses(void **state) {
  (void)state;
  tsr_expr *e = compile_ok("kappa*sin(pi*x) + y");
  assert_int_equal(tsr_expr_uses(e, "kappa"), 1);
  assert_int_equal(tsr_expr_uses(e, "x"), 1);
  assert_int_equal(tsr_expr_uses(e, "y"), 1);
  assert_int_equal(tsr_expr_uses(e, "z"), 0);
  assert_int_equal(tsr_expr_uses(e, "a"), 0);
  assert_int_equal(tsr_expr_uses(e, "kap"), 0);
  assert_int_equal(tsr_expr_uses(e, "sin"), 1);
  assert_int_equal(tsr_expr_uses(e, "pi"), 1);
  assert_int_equal(tsr_expr_depends_on_time(e), 0);
  tsr_expr_destroy(&e);
  e = compile_ok("exp(-t)");
  assert_int_equal(tsr_expr_depends_on_time(e), 1);
  assert_int_equal(tsr_expr_uses(e, "x"), 0);
  tsr_expr_destroy(&e);
  e = compile_ok("2");
  assert_int_equal(tsr_expr_depends_on_time(e), 0);
  tsr_expr_destroy(&e);
}

static void test_to_c(void **state) {
  (void)state;
  static const char *const k[][2] = {
      {"sin(pi*x)*exp(-t)", "sin(3.1415926535897931 * x) * exp((-t))"},
      {"2*-x", "2.0 * (-x)"},
      {"-x*x", "(-x) * x"},
      {"- -x", "(-(-x))"},
      {"-(x+1)", "(-(x + 1.0))"},
      {"+x", "x"},
      {"1-(2-3)", "1.0 - (2.0 - 3.0)"},
      {"(1-2)-3", "1.0 - 2.0 - 3.0"},
      {"x+(y+z)", "x + (y + z)"},
      {"((x*y))*z", "x * y * z"},
      {"x/(y*z)", "x / (y * z)"},
      {"(x+y)*z", "(x + y) * z"},
      {"x + y*z", "x + y * z"},
      {".5 + 1e-3 + 2.5E+4 + 3.", "0.5 + 0.001 + 25000.0 + 3.0"},
      {"0.1*1e20", "0.10000000000000001 * 1e+20"},
      {"pow(kappa, 2)/(a+b)", "pow(kappa, 2.0) / (a + b)"},
      {"atan2( y ,x )", "atan2(y, x)"},
      {"sin(pi*x)*exp(-2*t)", "sin(3.1415926535897931 * x) * exp((-2.0) * t)"},
      {"-(x*y)", "(-(x * y))"},
      {"-sin(x)", "(-sin(x))"},
  };
  char buf[256];
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tsr_expr *e = compile_ok(k[i][0]);
    assert_int_equal(tsr_expr_to_c(e, buf, sizeof buf), TSR_OK);
    assert_string_equal(buf, k[i][1]);
    tsr_expr_destroy(&e);
  }
  tsr_expr *e = compile_ok("x + y");
  assert_int_equal(tsr_expr_to_c(e, buf, 5), TSR_ERR_INTERNAL); /* "x + y" needs 6 */
  assert_int_equal(tsr_expr_to_c(e, buf, 6), TSR_OK);
  assert_string_equal(buf, "x + y");
  tsr_expr_destroy(&e);
}

static void test_malformed(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int col;
    const char *msg;
  } k[] = {
      {"sinn(x)", 0, "unknown function 'sinn' (did you mean 'sin'?)"},
      {"2*kapa", 2, "unknown name 'kapa' (did you mean 'kappa'?)"},
      {"x + PI", 4, "unknown name 'PI' (did you mean 'pi'?)"},
      {"e*x", 0, "unknown name 'e' (did you mean 'exp(1)'?)"},
      {"bessel(x)", 0, "unknown function 'bessel'"},
      {"q", 0, "unknown name 'q'"},
      {"x^2", 1, "'^' is not allowed: use pow(a, b)"},
      {"x**2", 1, "'**' is not allowed: use pow(a, b)"},
      {"1.5f*x", 3, "numbers may not have a suffix ('1.5f'): write 1.5"},
      {"x+0x10", 2, "hexadecimal numbers are not allowed ('0x10')"},
      {"a ? b : c", 2, "'?' is not allowed"},
      {"x < 1", 2, "'<' is not allowed: expressions have no comparisons"},
      {"x >= 1", 2, "'>=' is not allowed"},
      {"sin(x", 3, "unbalanced '(': missing ')'"},
      {"2*(x+1", 2, "unbalanced '(': missing ')'"},
      {"(x+1))", 5, "unbalanced ')'"},
      {"", 0, "empty expression"},
      {"   ", 0, "empty expression"},
      {"x*", 1, "expected an operand after '*'"},
      {"x + * y", 4, "expected an operand after '+', found '*'"},
      {"()", 1, "expected an operand after '(', found ')'"},
      {"pow(x)", 0, "function 'pow' takes 2 arguments, got 1"},
      {"sin(x, y)", 0, "function 'sin' takes 1 argument, got 2"},
      {"fmax(1,2,3)", 0, "function 'fmax' takes 2 arguments, got 3"},
      {"exp()", 0, "function 'exp' takes 1 argument, got 0"},
      {"1 + sin x", 4, "function 'sin' must be followed by '('"},
      {"x(1)", 0, "'x' is not a function"},
      {"2*kappa(1)", 2, "'kappa' is not a function"},
      {"x = 1", 2, "'=' is not allowed"},
      {"x == 1", 2, "'==' is not allowed"},
      {"2 x", 2, "expected an operator between '2' and 'x'"},
      {"sin(x) (y)", 7, "expected an operator between ')' and '('"},
      {"pow(x y, 2)", 6, "expected an operator between 'x' and 'y'"},
      {"(1, 2)", 2, "',' is only allowed between function arguments"},
      {"--x", 0, "'--' is not allowed"},
      {"1e+", 1, "the exponent needs digits"},
      {"1.2.3", 3, "malformed number '1.2.3'"},
      {"1e400", 0, "too large for a double"},
      {"x % 2", 2, "use fmod(a, b)"},
      {"x // 2", 2, "'//' is not allowed"},
      {"x && y", 2, "'&&' is not allowed"},
      {"x;", 1, "unexpected character ';'"},
      {"x + \xc3\xa9", 4, "unexpected byte 0xC3"},
      {"_sin(x)", 0, "unknown function '_sin'"},
      {"kapa^2", 0, "unknown name 'kapa' (did you mean 'kappa'?)"},
      {"sinn (x)", 0, "unknown function 'sinn' (did you mean 'sin'?)"},
      {"Sin(x)", 0, "unknown function 'Sin' (did you mean 'sin'?)"},
      {"ln(x)", 0, "unknown function 'ln' (did you mean 'log'?)"},
      {"abs(x)", 0, "unknown function 'abs' (did you mean 'fabs'?)"},
      {"2e", 1, "malformed number '2e'"},
      {"x.y", 1, "unexpected character '.'"},
      {"pi(2)", 0, "'pi' is not a function"},
      {"sin(1,)", 6, "expected an operand after ',', found ')'"},
      {"[x]", 0, "unexpected character '['"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tsr_expr *e = (tsr_expr *)0x1;
    int col = -2;
    tsr_err err = tsr_expr_compile(k[i].text, &ENV, &e, &col);
    if (err != TSR_ERR_INPUT || col != k[i].col || !strstr(tsr_err_message(), k[i].msg))
      fail_msg("'%s': got %d at column %d: \"%s\"; want %d at column %d: \"%s\"", k[i].text,
               (int)err, col, tsr_err_message(), (int)TSR_ERR_INPUT, k[i].col, k[i].msg);
    assert_null(e);
  }
  /* no suggestion for names far from every known one */
  tsr_expr *e = NULL;
  int col;
  assert_int_equal(tsr_expr_compile("bessel(x)", &ENV, &e, &col), TSR_ERR_INPUT);
  assert_null(strstr(tsr_err_message(), "did you mean"));
}

static void test_env(void **state) {
  (void)state;
  static const char *const bad[] = {"sin", "x", "pi", "2k", "kappa"};
  for (int i = 0; i < 5; i++) {
    const char *names[2] = {"kappa", bad[i]};
    double vals[2] = {1, 2};
    tsr_expr_env env = {2, names, vals};
    tsr_expr *e = NULL;
    int col = 0;
    assert_int_equal(tsr_expr_compile("x", &env, &e, &col), TSR_ERR_INPUT);
    assert_int_equal(col, -1);
    assert_null(e);
  }
  tsr_expr *e = NULL;
  assert_int_equal(tsr_expr_compile("x+1", NULL, &e, NULL), TSR_OK); /* no env, no errcol */
  assert_true(tsr_expr_eval(e, 1, 0, 0, 0) == 2.0);
  tsr_expr_destroy(&e);
  tsr_expr_destroy(&e); /* accepts NULL */
  tsr_expr_destroy(NULL);
  assert_int_equal(tsr_expr_compile("kappa", NULL, &e, NULL), TSR_ERR_INPUT);
}

static void test_long_and_deep(void **state) {
  (void)state;
  static char buf[5000];
  /* long chains are fine: 1+1+...+1, 2000 terms (3999 characters) */
  size_t n = 0;
  for (int i = 0; i < 2000; i++) n += (size_t)sprintf(buf + n, i ? "+1" : "1");
  tsr_expr *e = compile_ok(buf);
  assert_true(tsr_expr_eval(e, 0, 0, 0, 0) == 2000.0);
  tsr_expr_destroy(&e);
  /* and so is the densest muparser rendering: -x*-x*...*-x, 1365 factors */
  n = 0;
  for (int i = 0; i < 1365; i++) n += (size_t)sprintf(buf + n, i ? "*-x" : "-x");
  e = compile_ok(buf);
  assert_true(tsr_expr_eval(e, 1, 0, 0, 0) == -1.0);
  tsr_expr_destroy(&e);
  /* deep nesting is refused rather than overflowing the stack */
  memset(buf, '(', 300);
  buf[300] = 'x';
  memset(buf + 301, ')', 300);
  buf[601] = '\0';
  int col;
  assert_int_equal(tsr_expr_compile(buf, &ENV, &e, &col), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "nested too deeply"));
  assert_int_equal(col, 256);
  memset(buf, 'x', sizeof buf - 1);
  buf[sizeof buf - 1] = '\0';
  assert_int_equal(tsr_expr_compile(buf, &ENV, &e, &col), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "too long"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_points),   cmocka_unit_test(test_random_points),
      cmocka_unit_test(test_optimiser_traps), cmocka_unit_test(test_constants_and_literals),
      cmocka_unit_test(test_uses),           cmocka_unit_test(test_to_c),
      cmocka_unit_test(test_malformed),      cmocka_unit_test(test_env),
      cmocka_unit_test(test_long_and_deep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
