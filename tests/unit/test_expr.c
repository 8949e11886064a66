/* io/expr: the accepted C subset, its error messages and columns, the canonical C text,
 * bitwise agreement of muparser's evaluation with the same expression compiled as C, and of
 * the grid evaluation (tsr_expr_eval_grid) with muparser point by point. */
#include <glob.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "io/case.h"
#include "io/case_expr.h"
#include "io/error.h"
#include "io/expr.h"
#include "solver/boundary.h"

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

/* ---- grid evaluation against muparser point by point ------------------------------------- */

static int same_bits(double a, double b) {
  uint64_t u, v;
  memcpy(&u, &a, 8);
  memcpy(&v, &b, 8);
  return u == v || (isnan(a) && isnan(b));
}

/* Evaluates e over g with nthreads threads and compares every point with tsr_expr_eval;
 * returns the number of finite values. The output array has guard values around the
 * points, which must stay untouched. */
static size_t check_grid(tsr_expr *e, const char *text, const tsr_expr_points *g, double t,
                         int nthreads) {
  size_t span = 1, finite = 0;
  for (int d = 0; d < 3; d++) span += (size_t)(g->n[d] - 1) * (size_t)g->stride[d];
  double *out = malloc((span + 2) * sizeof *out);
  assert_non_null(out);
  for (size_t i = 0; i < span + 2; i++) out[i] = -12345.0;
  int saved = omp_get_max_threads();
  omp_set_num_threads(nthreads);
  tsr_err err = tsr_expr_eval_grid(e, g, t, out + 1);
  omp_set_num_threads(saved);
  if (err) fail_msg("'%s': tsr_expr_eval_grid failed: %s", text, tsr_err_message());
  assert_true(out[0] == -12345.0 && out[span + 1] == -12345.0);
  for (int k = 0; k < g->n[2]; k++)
    for (int j = 0; j < g->n[1]; j++)
      for (int i = 0; i < g->n[0]; i++) {
        double x = g->coord[0] ? g->coord[0][i] : 0.0, y = g->coord[1] ? g->coord[1][j] : 0.0;
        double z = g->coord[2] ? g->coord[2][k] : 0.0;
        double got = out[1 + i * g->stride[0] + j * g->stride[1] + k * g->stride[2]];
        double want = tsr_expr_eval(e, x, y, z, t);
        if (!same_bits(got, want))
          fail_msg("'%s' at (%.17g, %.17g, %.17g, %.17g), %d x %d x %d, %d threads: grid "
                   "%.17g, muparser %.17g", text, x, y, z, t, g->n[0], g->n[1], g->n[2],
                   nthreads, got, want);
        finite += isfinite(want) != 0;
      }
  free(out);
  return finite;
}

/* A grid of sizes n with random coordinates in [lo, hi]; layout 0: x fastest, 1: x slowest
 * (x is not contiguous in the output), 2: x fastest with padded rows and planes. */
typedef struct {
  tsr_expr_points g;
  double c[3][160];
} test_grid;

static void make_grid(test_grid *tg, const int *n, int layout, int no_z, double lo, double hi) {
  memset(tg, 0, sizeof *tg);
  for (int d = 0; d < 3; d++) {
    tg->g.n[d] = n[d];
    for (int i = 0; i < n[d]; i++) tg->c[d][i] = uniform(lo, hi);
    tg->g.coord[d] = tg->c[d];
  }
  if (no_z) tg->g.coord[2] = NULL;
  if (layout == 1)
    tg->g.stride[2] = 1, tg->g.stride[1] = n[2], tg->g.stride[0] = (ptrdiff_t)n[2] * n[1];
  else if (layout == 2)
    tg->g.stride[0] = 1, tg->g.stride[1] = n[0] + 3,
    tg->g.stride[2] = (ptrdiff_t)(n[0] + 3) * (n[1] + 2);
  else
    tg->g.stride[0] = 1, tg->g.stride[1] = n[0], tg->g.stride[2] = (ptrdiff_t)n[0] * n[1];
}

/* the last one is large enough for tsr_expr_eval_grid to use threads for its rows */
static const int SIZES[][3] = {{1, 1, 1},  {7, 1, 1},  {1, 5, 3},  {5, 3, 1},   {13, 7, 5},
                               {3, 1, 11}, {2, 2, 2},  {33, 17, 3}, {17, 1, 9}, {61, 37, 19}};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])
static const int THREADS[] = {1, 2, 3, 5};

/* The fixed cases (every registered function, params, pi, t, the optimiser patterns) on
 * odd sizes, all layouts, with and without z, on 1, 2, 3 and 5 threads. */
static void test_grid_cases(void **state) {
  (void)state;
  test_grid tg;
  for (size_t c = 0; c < NCASES; c++) {
    tsr_expr *e = compile_ok(CASES[c].text);
    for (size_t s = 0; s < NSIZES; s++) {
      int layout = (int)((c + s) % 3), no_z = (c + s) % 4 == 0;
      make_grid(&tg, SIZES[s], layout, no_z, -3, 3);
      check_grid(e, CASES[c].text, &tg.g, uniform(0, 2), THREADS[(c + s) % 4]);
    }
    tsr_expr_destroy(&e);
  }
}

/* Subexpressions over planes large enough for threads (libm over a y-z plane, arithmetic
 * over an x-y one), and whole rows, on 1, 2, 3 and 5 threads. */
static void test_grid_threads(void **state) {
  (void)state;
  static const char *const k[] = {"sin(y*z)*x + pow(fabs(y), z)*c",
                                  "cos(x*y)*kappa - erf(y - z)/(1 + x*x)",
                                  "(3*pi*pi*kappa - 1)*exp(-t)*sin(pi*x)*sin(pi*y)*sin(pi*z)"};
  static const int sz[][3] = {{3, 129, 131}, {131, 129, 3}, {61, 37, 19}};
  test_grid tg;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tsr_expr *e = compile_ok(k[i]);
    for (size_t s = 0; s < 3; s++) {
      make_grid(&tg, sz[s], (int)(s % 2), 0, -2, 2);
      for (int th = 0; th < 4; th++) check_grid(e, k[i], &tg.g, uniform(0, 1), THREADS[th]);
    }
    tsr_expr_destroy(&e);
  }
}

/* Values where muparser's optimiser, or a sloppy evaluator, would change the bits. */
static void test_grid_traps(void **state) {
  (void)state;
  static const char *const k[] = {"4*x/2", "x*0", "x+x", "-x", "-0", "x*y*0", "-(x*y)",
                                  "2*(3*x+1) + y", "fmin(x, y) - fmax(-0, z)", "x/y/z",
                                  "sqrt(x*y)", "pow(x, y)*t", "1e308*x*y*z", "t", "3"};
  static const double v[] = {0.6e308, -1.0, -0.0, 0.0, 1e-310, 3.25, -2.5};
  test_grid tg;
  int n[3] = {7, 7, 7};
  make_grid(&tg, n, 0, 0, 0, 1);
  for (int d = 0; d < 3; d++)
    for (int i = 0; i < 7; i++) tg.c[d][i] = v[(i + 2 * d) % 7];
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tsr_expr *e = compile_ok(k[i]);
    check_grid(e, k[i], &tg.g, -0.0, 1 + (int)(i % 3));
    check_grid(e, k[i], &tg.g, 0.6e308, 2);
    tsr_expr_destroy(&e);
  }
}

/* A random expression of the subset into b (at most depth levels); every function, variable,
 * param, pi, unary signs, grouping, literals. */
static const char *const FUNS1[] = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                                    "cosh", "tanh", "exp", "log", "log10", "sqrt", "cbrt",
                                    "fabs", "floor", "ceil", "erf"};
static const char *const FUNS2[] = {"atan2", "pow", "fmin", "fmax", "fmod"};
static const char *const LEAVES[] = {"x", "y", "z", "t", "pi", "kappa", "a", "b", "c",
                                     "0.5", "2", "1e-3", "3.25", ".75", "7"};

static void gen(char *b, size_t cap, int depth) {
  size_t l = strlen(b);
  int r = (int)uniform(0, depth <= 0 ? 3 : 12);
  if (r < 3) {
    snprintf(b + l, cap - l, "%s", LEAVES[(int)uniform(0, 15)]);
    return;
  }
  if (r < 5) {
    snprintf(b + l, cap - l, "%s(", FUNS1[(int)uniform(0, 18)]);
    gen(b, cap, depth - 1);
    strncat(b, ")", cap - strlen(b) - 1);
  } else if (r < 6) {
    snprintf(b + l, cap - l, "%s(", FUNS2[(int)uniform(0, 5)]);
    gen(b, cap, depth - 1);
    strncat(b, ", ", cap - strlen(b) - 1);
    gen(b, cap, depth - 1);
    strncat(b, ")", cap - strlen(b) - 1);
  } else if (r < 7) {
    strncat(b, r & 1 ? "-" : "-(", cap - l - 1);
    gen(b, cap, depth - 1);
    if (!(r & 1)) strncat(b, ")", cap - strlen(b) - 1);
  } else {
    static const char ops[] = "+-*/";
    int paren = uniform(0, 1) < 0.4;
    if (paren) strncat(b, "(", cap - l - 1);
    gen(b, cap, depth - 1);
    l = strlen(b);
    snprintf(b + l, cap - l, " %c ", ops[(int)uniform(0, 4)]);
    gen(b, cap, depth - 1);
    if (paren) strncat(b, ")", cap - strlen(b) - 1);
  }
}

static void test_grid_random(void **state) {
  (void)state;
  enum { NEXPR = 400 };
  char text[4096];
  test_grid tg;
  size_t finite = 0, total = 0;
  for (int c = 0; c < NEXPR; c++) {
    text[0] = '\0';
    gen(text, sizeof text, 5);
    tsr_expr *e = compile_ok(text);
    for (int rep = 0; rep < 2; rep++) {
      const int *n = SIZES[(c + rep) % NSIZES];
      make_grid(&tg, n, (c + rep) % 3, c % 5 == 0, -2, 2);
      double t = rep ? uniform(0, 3) : uniform(-1, 1);
      finite += check_grid(e, text, &tg.g, t, THREADS[(c + rep) % 4]);
      total += (size_t)n[0] * n[1] * n[2];
    }
    tsr_expr_destroy(&e);
  }
  /* most values are numbers, or the comparison above proved little */
  if (finite * 2 < total) fail_msg("only %zu of %zu values finite", finite, total);
}

/* Every expression of the example cases and the test cases, on the case's own cell centres
 * (cells: the box the host backend evaluates on 1 rank; faces: as solver/boundary.c). */
static void check_case_expr(const tsr_case *c, const tsr_case_expr *ce, int face) {
  if (!ce->text) return;
  tsr_expr *e = NULL;
  if (tsr_case_compile(c, ce, &e)) fail_msg("%s: %s", ce->key, tsr_err_message());
  static double coords[3][512];
  tsr_expr_points g;
  for (int d = 0; d < 3; d++) {
    g.n[d] = d < c->dim ? c->cells[d] : 1;
    if (g.n[d] > 512) g.n[d] = 512;
    for (int i = 0; i < g.n[d]; i++) coords[d][i] = tsr_cell_center(c, d, i);
    g.coord[d] = coords[d];
  }
  if (face >= 0) { /* the face's own coordinate: the domain's edge */
    int d = face / 2;
    g.n[d] = 1;
    coords[d][0] = d < c->dim ? (face % 2 == 0 ? c->lo[d] : c->hi[d]) : 0.0;
  }
  g.stride[0] = 1, g.stride[1] = g.n[0], g.stride[2] = (ptrdiff_t)g.n[0] * g.n[1];
  double t = c->time.end > 0 ? 0.5 * c->time.end : 0.37;
  check_grid(e, ce->text, &g, t, 2);
  check_grid(e, ce->text, &g, 0.0, 3);
  tsr_expr_destroy(&e);
}

static void test_grid_case_files(void **state) {
  (void)state;
  const char *src = getenv("TESSERA_SOURCE");
  if (!src) src = ".";
  char pat[2][1024];
  snprintf(pat[0], sizeof pat[0], "%s/cases/*.yaml", src);
  snprintf(pat[1], sizeof pat[1], "%s/tests/cases/*.yaml", src);
  int ncase = 0, nexpr = 0;
  for (int p = 0; p < 2; p++) {
    glob_t gl;
    if (glob(pat[p], 0, NULL, &gl)) fail_msg("no case files match %s", pat[p]);
    for (size_t f = 0; f < gl.gl_pathc; f++) {
      tsr_case *c = NULL;
      if (tsr_case_load(gl.gl_pathv[f], 0, NULL, &c))
        fail_msg("%s: %s", gl.gl_pathv[f], tsr_err_message());
      for (int q = 0; q < c->ncomp; q++) {
        check_case_expr(c, &c->initial[q], -1);
        check_case_expr(c, &c->source[q], -1);
        check_case_expr(c, &c->exact[q], -1);
        nexpr += !!c->initial[q].text + !!c->source[q].text + !!c->exact[q].text;
        for (int fc = 0; fc < 2 * c->dim; fc++) {
          check_case_expr(c, &c->bc[fc].value[q], fc);
          nexpr += !!c->bc[fc].value[q].text;
        }
      }
      ncase++;
      tsr_case_destroy(&c);
    }
    globfree(&gl);
  }
  assert_true(ncase >= 20 && nexpr >= 60);
}

static void test_grid_misuse(void **state) {
  (void)state;
  tsr_expr *e = compile_ok("x + y");
  double x = 1.0, out[2] = {7.0, 7.0};
  tsr_expr_points g = {{0, 1, 1}, {&x, &x, &x}, {1, 1, 1}};
  assert_int_equal(tsr_expr_eval_grid(e, &g, 0.0, out), TSR_OK); /* empty: writes nothing */
  assert_true(out[0] == 7.0);
  g.n[0] = 1;
  assert_int_equal(tsr_expr_eval_grid(e, &g, 0.0, out), TSR_OK);
  assert_true(out[0] == 2.0 && out[1] == 7.0);
  assert_int_equal(tsr_expr_eval_grid(e, NULL, 0.0, out), TSR_ERR_INTERNAL);
  assert_int_equal(tsr_expr_eval_grid(e, &g, 0.0, NULL), TSR_ERR_INTERNAL);
  tsr_expr_destroy(&e);
}

/* tsr_expr_find_nonfinite: the first point, x fastest, where a value is not finite, in a later
 * plane too; none where all are finite; a coordinate without values reads as 0 */
static void test_find_nonfinite(void **state) {
  (void)state;
  const double xs[4] = {0.125, 0.375, 0.625, 0.875}, ys[3] = {0.0, 0.5, 1.0},
               zs[2] = {0.25, 0.75};
  tsr_expr_points g = {{4, 3, 2}, {xs, ys, zs}, {0, 0, 0}};
  double at[3], v = 0.0;
  int found = -1;
  tsr_expr *e = compile_ok("sqrt(0.5 - x) + y");
  assert_int_equal(tsr_expr_find_nonfinite(e, &g, 0.0, &found, at, &v), TSR_OK);
  assert_int_equal(found, 1);
  assert_true(at[0] == 0.625 && at[1] == 0.0 && at[2] == 0.25 && isnan(v));
  tsr_expr_destroy(&e);
  e = compile_ok("(y + 1) / (z - 0.75) + t");
  assert_int_equal(tsr_expr_find_nonfinite(e, &g, 2.0, &found, at, &v), TSR_OK);
  assert_int_equal(found, 1);
  assert_true(at[0] == 0.125 && at[1] == 0.0 && at[2] == 0.75 && isinf(v) && v > 0);
  tsr_expr_destroy(&e);
  e = compile_ok("x * y - z");
  assert_int_equal(tsr_expr_find_nonfinite(e, &g, 0.0, &found, at, &v), TSR_OK);
  assert_int_equal(found, 0);
  g.coord[2] = NULL; /* z is 0: log(z) is -inf at the first point */
  tsr_expr_destroy(&e);
  e = compile_ok("log(z)");
  assert_int_equal(tsr_expr_find_nonfinite(e, &g, 0.0, &found, at, &v), TSR_OK);
  assert_true(found == 1 && at[0] == 0.125 && at[2] == 0.0 && isinf(v) && v < 0);
  tsr_expr_destroy(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_find_nonfinite),
      cmocka_unit_test(test_fixed_points),   cmocka_unit_test(test_random_points),
      cmocka_unit_test(test_optimiser_traps), cmocka_unit_test(test_constants_and_literals),
      cmocka_unit_test(test_uses),           cmocka_unit_test(test_to_c),
      cmocka_unit_test(test_malformed),      cmocka_unit_test(test_env),
      cmocka_unit_test(test_long_and_deep),  cmocka_unit_test(test_grid_cases),
      cmocka_unit_test(test_grid_traps),     cmocka_unit_test(test_grid_random),
      cmocka_unit_test(test_grid_case_files), cmocka_unit_test(test_grid_misuse),
      cmocka_unit_test(test_grid_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
