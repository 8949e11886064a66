/* PINN networks (kernels/net.h), host backend: the value channel against a plain evaluation,
 * the derivative channels against finite differences in the inputs, the parameter gradients
 * against finite differences of L = sum dU .* U, float against double, repeatability, the
 * initial parameters, and misuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "kernels/net.h"

/* ---- the tests' own random numbers (independent of tsr_net_init) -------------------------- */

static uint64_t g_rng = 12345;

static double urand(double lo, double hi) {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * (double)(z >> 11) * 0x1p-53;
}

/* ---- shapes -------------------------------------------------------------------------------- */

/* Every combination of nin 1..3, with and without time (nd2 = nin - 1 or nin), depth 1..4,
 * width 1, 5, 16, both activations and nout 1, 2; then inputs left out of the derivatives. */
static int all_shapes(tsr_net_shape *out) {
  static const int widths[] = {1, 5, 16};
  int n = 0;
  for (int nin = 1; nin <= 3; ++nin)
    for (int time = 0; time <= 1; ++time)
      for (int depth = 1; depth <= 4; ++depth)
        for (int wi = 0; wi < 3; ++wi)
          for (int act = 0; act <= 1; ++act)
            for (int nout = 1; nout <= 2; ++nout)
              out[n++] = (tsr_net_shape){nin, nout, widths[wi], depth, (tsr_net_act)act, nin,
                                         time ? nin - 1 : nin, 0};
  out[n++] = (tsr_net_shape){3, 2, 5, 2, TSR_NET_TANH, 2, 1, 0};
  out[n++] = (tsr_net_shape){2, 1, 5, 3, TSR_NET_SIN, 1, 0, 0};
  out[n++] = (tsr_net_shape){2, 2, 16, 2, TSR_NET_TANH, 0, 0, 0};
  out[n++] = (tsr_net_shape){4, 3, 8, 2, TSR_NET_TANH, 4, 3, 0};
  /* the Laplacian mode (lap, the last field): 2D, 3D, 2D+t, 1D+t, 3D+t, in both activations;
   * a width-1 depth-4 network; no second derivatives (no Laplacian channel) */
  static const tsr_net_shape lap[] = {
      {2, 1, 16, 3, TSR_NET_TANH, 2, 2, 1}, {2, 2, 5, 2, TSR_NET_SIN, 2, 2, 1},
      {3, 1, 16, 3, TSR_NET_SIN, 3, 3, 1},  {3, 2, 5, 4, TSR_NET_TANH, 3, 3, 1},
      {3, 1, 16, 2, TSR_NET_TANH, 3, 2, 1}, {3, 2, 5, 3, TSR_NET_SIN, 3, 2, 1},
      {2, 1, 16, 3, TSR_NET_SIN, 2, 1, 1},  {2, 2, 5, 2, TSR_NET_TANH, 2, 1, 1},
      {4, 1, 8, 2, TSR_NET_TANH, 4, 3, 1},  {2, 1, 1, 4, TSR_NET_TANH, 2, 2, 1},
      {2, 1, 5, 2, TSR_NET_TANH, 2, 0, 1},
  };
  for (size_t k = 0; k < sizeof lap / sizeof lap[0]; ++k) out[n++] = lap[k];
  return n;
}
#define MAX_SHAPES 320

static tsr_net_opts make_opts(const tsr_net_shape *s, int npts, int single) {
  tsr_net_opts o = {.shape = *s, .single = single, .npts = npts};
  for (int j = 0; j < s->nin; ++j) {
    /* boxes from 0.2 to 10 long, anywhere: xhat = scale x + shift */
    o.in_scale[j] = urand(0.2, 10.0) * (j == 1 ? -1 : 1);
    o.in_shift[j] = urand(-3.0, 3.0);
  }
  return o;
}

/* Glorot weights and random biases (zero biases would leave their gradients' paths and the
 * bias-on-value-channel-only rule untested). */
static double *make_theta(const tsr_net_shape *s, uint64_t seed) {
  size_t np = tsr_net_nparam(s);
  double *th = malloc(np * sizeof *th);
  tsr_net_init(s, seed, th);
  for (int l = 0; l <= s->depth; ++l) {
    int no;
    size_t boff;
    tsr_net_layer(s, l, &no, NULL, NULL, &boff);
    for (int i = 0; i < no; ++i) th[boff + i] = urand(-0.5, 0.5);
  }
  return th;
}

/* Physical points whose normalised inputs lie in [-1.2, 1.2]. */
static double *make_points(const tsr_net_opts *o, int npts) {
  const int nin = o->shape.nin;
  double *X = malloc((size_t)nin * npts * sizeof *X);
  for (int p = 0; p < npts; ++p)
    for (int j = 0; j < nin; ++j)
      X[j + nin * p] = (urand(-1.2, 1.2) - o->in_shift[j]) / o->in_scale[j];
  return X;
}

static size_t u_len(const tsr_net_opts *o, int npts) {
  return (size_t)o->shape.nout * tsr_net_channels(&o->shape) * npts;
}

static void forward(tsr_net *n, const double *th, const double *X, int npts, double *U) {
  tsr_err e = tsr_net_forward(n, th, X, npts, U);
  if (e) fail_msg("forward: %d %s", (int)e, tsr_err_message());
}

static tsr_net *create(const tsr_net_opts *o) {
  tsr_net *n = NULL;
  tsr_err e = tsr_net_create(o, &n);
  if (e) fail_msg("create: %d %s", (int)e, tsr_err_message());
  return n;
}

/* ||a - b|| / max(||b||, floor) over count entries at stride apart. */
static double rel_err(const double *a, const double *b, size_t count, double floor) {
  double num = 0, den = 0;
  for (size_t k = 0; k < count; ++k) {
    num += (a[k] - b[k]) * (a[k] - b[k]);
    den += b[k] * b[k];
  }
  return sqrt(num) / fmax(sqrt(den), floor);
}

static void shape_text(const tsr_net_shape *s, char *buf, size_t len) {
  snprintf(buf, len, "nin %d nout %d width %d depth %d %s nd1 %d nd2 %d%s", s->nin, s->nout,
           s->width, s->depth, s->act == TSR_NET_TANH ? "tanh" : "sin", s->nd1, s->nd2,
           s->lap ? " lap" : "");
}

/* ---- the value channel against a plain evaluation, point by point ----------------------- */

static double act(tsr_net_act a, double x) { return a == TSR_NET_TANH ? tanh(x) : sin(x); }

static void plain_eval(const tsr_net_opts *o, const double *th, const double *x, double *u) {
  const tsr_net_shape *s = &o->shape;
  double in[64], out[64];
  for (int j = 0; j < s->nin; ++j) in[j] = o->in_scale[j] * x[j] + o->in_shift[j];
  for (int l = 0; l <= s->depth; ++l) {
    int no, ni;
    size_t wo, bo;
    tsr_net_layer(s, l, &no, &ni, &wo, &bo);
    for (int i = 0; i < no; ++i) {
      double a = th[bo + i];
      for (int j = 0; j < ni; ++j) a += th[wo + i + (size_t)j * no] * in[j];
      out[i] = l == s->depth ? a : act(s->act, a);
    }
    memcpy(in, out, sizeof in);
  }
  memcpy(u, in, (size_t)s->nout * sizeof *u);
}

static void test_value_channel(void **state) {
  (void)state;
  tsr_net_shape shapes[MAX_SHAPES];
  const int ns = all_shapes(shapes), npts = 23;
  double worst = 0;
  for (int k = 0; k < ns; ++k) {
    tsr_net_opts o = make_opts(&shapes[k], npts, 0);
    tsr_net *n = create(&o);
    double *th = make_theta(&o.shape, 100 + k), *X = make_points(&o, npts);
    double *U = malloc(u_len(&o, npts) * sizeof *U), *ref = malloc(u_len(&o, npts) * sizeof *U);
    forward(n, th, X, npts, U);
    const int nout = o.shape.nout;
    for (int p = 0; p < npts; ++p) plain_eval(&o, th, X + o.shape.nin * p, ref + nout * p);
    double e = rel_err(U, ref, (size_t)nout * npts, 1e-300);
    worst = fmax(worst, e);
    if (!(e <= 1e-13)) {
      char t[128];
      shape_text(&o.shape, t, sizeof t);
      fail_msg("%s: value channel differs from a plain evaluation by %.3g", t, e);
    }
    free(th), free(X), free(U), free(ref);
    tsr_net_destroy(&n);
    assert_null(n);
  }
  print_message("value channel vs plain evaluation: worst relative error %.3g\n", worst);
}

/* ---- (a) derivative channels against finite differences in the inputs ------------------- */

/* Channel c of U (nout x npts, contiguous) against fd (same layout); fails with the shape.
 * The norm-wise error's floor: 1e-3 of the value channel's norm times in_scale[j]^order, the
 * size of the derivative when the normalised one is 1e-3 of the value. Rounding in the
 * differences (below) costs at most ~1e-9 of that, and a channel far smaller than the value
 * (a nearly unused input of a width-1 network) is checked to that absolute level. */
static double check_channel(const tsr_net_opts *o, const double *U, int c, int npts,
                            const double *fd, double tol, const char *what, int j) {
  const int nout = o->shape.nout;
  const size_t nv = (size_t)nout * npts;
  double value = 0;
  for (size_t q = 0; q < nv; ++q) value += U[q] * U[q];
  const double floor = 1e-3 * sqrt(value) * pow(fabs(o->in_scale[j]), what[0] == 's' ? 2 : 1);
  double e = rel_err(fd, U + nv * c, nv, floor);
  if (!(e <= tol)) {
    char t[128];
    shape_text(&o->shape, t, sizeof t);
    fail_msg("%s: %s derivative in input %d: relative error %.3g > %.1g", t, what, j, e, tol);
  }
  return e;
}

/* The central difference of the value channel in input j with step h (first or second
 * derivative): U_vals holds the value channel at X, out gets nout x npts entries. */
static void central_diff(tsr_net *n, const double *th, double *X, int nin, int npts, int j,
                         double h, int second, const double *U, double *Up, double *Um,
                         size_t nv, double *out) {
  for (int p = 0; p < npts; ++p) X[j + nin * p] += h;
  forward(n, th, X, npts, Up);
  for (int p = 0; p < npts; ++p) X[j + nin * p] -= 2 * h;
  forward(n, th, X, npts, Um);
  for (int p = 0; p < npts; ++p) X[j + nin * p] += h;
  for (size_t q = 0; q < nv; ++q)
    out[q] = second ? (Up[q] - 2 * U[q] + Um[q]) / (h * h) : (Up[q] - Um[q]) / (2 * h);
}

/* A Laplacian-mode network (o) against the diagonal-mode network of the same theta: the value
 * and first-derivative channels agree, and the Laplacian channel is the sum of the diagonal
 * channels, to rounding. Returns the worst relative error. */
static double check_lap_twin(const tsr_net_opts *o, const double *th, const double *X,
                             int npts, const double *U) {
  tsr_net_opts od = *o;
  od.shape.lap = 0;
  tsr_net *n = create(&od);
  const int nd1 = o->shape.nd1, nd2 = o->shape.nd2;
  const size_t nv = (size_t)o->shape.nout * npts;
  double *Ud = malloc(u_len(&od, npts) * sizeof *Ud), *sum = calloc(nv, sizeof *sum);
  forward(n, th, X, npts, Ud);
  char t[128];
  shape_text(&o->shape, t, sizeof t);
  double worst = 0;
  for (int c = 0; c <= nd1; ++c) {
    double e = rel_err(U + nv * c, Ud + nv * c, nv, 1e-300);
    worst = fmax(worst, e);
    if (!(e <= 1e-12)) fail_msg("%s: channel %d differs from the diagonal mode's by %.3g", t, c, e);
  }
  if (nd2 > 0) {
    for (int j = 0; j < nd2; ++j)
      for (size_t q = 0; q < nv; ++q) sum[q] += Ud[nv * (1 + nd1 + j) + q];
    double e = rel_err(U + nv * (1 + nd1), sum, nv, 1e-300);
    worst = fmax(worst, e);
    if (!(e <= 1e-12))
      fail_msg("%s: the Laplacian channel differs from the sum of the diagonal mode's second "
               "derivatives by %.3g", t, e);
  }
  free(Ud), free(sum);
  tsr_net_destroy(&n);
  return worst;
}

static void test_derivative_channels(void **state) {
  (void)state;
  tsr_net_shape shapes[MAX_SHAPES];
  const int ns = all_shapes(shapes), npts = 17;
  double worst1 = 0, worst2 = 0, worst_twin = 0;
  for (int k = 0; k < ns; ++k) {
    tsr_net_opts o = make_opts(&shapes[k], npts, 0);
    tsr_net *n = create(&o);
    const int nin = o.shape.nin, nout = o.shape.nout, lap = o.shape.lap;
    const size_t len = u_len(&o, npts), nv = (size_t)nout * npts;
    double *th = make_theta(&o.shape, 200 + k), *X = make_points(&o, npts);
    double *U = malloc(len * sizeof *U), *Up = malloc(len * sizeof *U),
           *Um = malloc(len * sizeof *U), *fd = malloc(nv * sizeof *fd),
           *fd2 = malloc(nv * sizeof *fd), *fdlap = calloc(nv, sizeof *fd);
    int jbig = 0; /* the Laplacian's floor: the input of the largest scale */
    forward(n, th, X, npts, U);
    for (int j = 0; j < o.shape.nd1; ++j)
      for (int second = 0; second <= (j < o.shape.nd2); ++second) {
        /* Richardson's (4 D(h/2) - D(h)) / 3 cancels the h^2 error of the central differences,
         * so steps (in normalised units) large against rounding can be taken: observed worst
         * 3e-10 (first) and 3e-7 (second, a width-1 depth-4 tanh network: its h^4 term, which
         * halving h shrinks while rounding grows elsewhere) */
        const double h = (second ? 4e-3 : 1e-3) / fabs(o.in_scale[j]);
        central_diff(n, th, X, nin, npts, j, h, second, U, Up, Um, nv, fd);
        central_diff(n, th, X, nin, npts, j, h / 2, second, U, Up, Um, nv, fd2);
        for (size_t q = 0; q < nv; ++q) fd[q] = (4 * fd2[q] - fd[q]) / 3;
        if (!second) {
          worst1 = fmax(worst1, check_channel(&o, U, 1 + j, npts, fd, 1e-6, "first", j));
        } else if (lap) {
          for (size_t q = 0; q < nv; ++q) fdlap[q] += fd[q];
          if (fabs(o.in_scale[j]) > fabs(o.in_scale[jbig])) jbig = j;
        } else {
          worst2 = fmax(worst2, check_channel(&o, U, 1 + o.shape.nd1 + j, npts, fd, 1e-5,
                                              "second", j));
        }
      }
    if (lap && o.shape.nd2 > 0)
      worst2 = fmax(worst2, check_channel(&o, U, 1 + o.shape.nd1, npts, fdlap, 1e-5,
                                          "second (their sum, the Laplacian)", jbig));
    if (lap) worst_twin = fmax(worst_twin, check_lap_twin(&o, th, X, npts, U));
    free(th), free(X), free(U), free(Up), free(Um), free(fd), free(fd2), free(fdlap);
    tsr_net_destroy(&n);
  }
  print_message("derivative channels vs central differences: worst relative error %.3g "
                "(first), %.3g (second); Laplacian mode vs the diagonal mode's sum %.3g\n",
                worst1, worst2, worst_twin);
}

/* ---- (b) parameter gradients against finite differences --------------------------------- */

static double loss(tsr_net *n, const double *th, const double *X, int npts, const double *dU,
                   double *U, size_t len) {
  forward(n, th, X, npts, U);
  long double L = 0; /* the differences of two nearby sums keep more digits */
  for (size_t q = 0; q < len; ++q) L += (long double)dU[q] * U[q];
  return (double)L;
}

static void test_gradients(void **state) {
  (void)state;
  tsr_net_shape shapes[MAX_SHAPES];
  const int ns = all_shapes(shapes), npts = 11, max_checked = 120;
  double worst = 0, worst_each = 0;
  for (int k = 0; k < ns; ++k) {
    tsr_net_opts o = make_opts(&shapes[k], npts, 0);
    tsr_net *n = create(&o);
    const size_t len = u_len(&o, npts), np = tsr_net_nparam(&o.shape);
    double *th = make_theta(&o.shape, 300 + k), *X = make_points(&o, npts);
    double *U = malloc(len * sizeof *U), *dU = malloc(len * sizeof *dU);
    double *g = malloc(np * sizeof *g), *gs = malloc(np * sizeof *g), *fd = malloc(np * sizeof *g);
    for (size_t q = 0; q < len; ++q) dU[q] = urand(-1, 1);
    forward(n, th, X, npts, U);
    for (size_t q = 0; q < np; ++q) g[q] = NAN; /* overwritten, not accumulated */
    assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_OK);
    /* all parameters of small networks, a random subset of larger ones */
    size_t m = 0;
    double gmax = 0;
    for (size_t q = 0; q < np; ++q) gmax = fmax(gmax, fabs(g[q]));
    for (size_t c = 0; c < (np < (size_t)max_checked ? np : (size_t)max_checked); ++c) {
      size_t q = np <= (size_t)max_checked ? c : (size_t)urand(0, (double)np);
      const double h = 1e-5, keep = th[q];
      th[q] = keep + h;
      double Lp = loss(n, th, X, npts, dU, U, len);
      th[q] = keep - h;
      double Lm = loss(n, th, X, npts, dU, U, len);
      th[q] = keep;
      fd[m] = (Lp - Lm) / (2 * h);
      gs[m] = g[q];
      /* entry by entry, with a floor at 1e-3 of the largest gradient entry */
      double each = fabs(fd[m] - gs[m]) / fmax(fabs(gs[m]), 1e-3 * gmax);
      worst_each = fmax(worst_each, each);
      if (!(each <= 1e-5)) {
        char t[128];
        shape_text(&o.shape, t, sizeof t);
        fail_msg("%s: parameter %zu: gradient %.10g, finite difference %.10g", t, q, gs[m], fd[m]);
      }
      ++m;
    }
    double e = rel_err(fd, gs, m, 1e-300);
    worst = fmax(worst, e);
    if (!(e <= 1e-6)) {
      char t[128];
      shape_text(&o.shape, t, sizeof t);
      fail_msg("%s: gradient vs finite differences: relative error %.3g", t, e);
    }
    free(th), free(X), free(U), free(dU), free(g), free(gs), free(fd);
    tsr_net_destroy(&n);
  }
  print_message("gradients vs central differences: worst norm-wise relative error %.3g, worst "
                "entry %.3g\n", worst, worst_each);
}

/* ---- (c) float against double; repeatability ------------------------------------------- */

static float *to_float(const double *a, size_t n) {
  float *f = malloc(n * sizeof *f);
  for (size_t k = 0; k < n; ++k) f[k] = (float)a[k];
  return f;
}

static void test_single_vs_double(void **state) {
  (void)state;
  tsr_net_shape shapes[MAX_SHAPES];
  const int ns = all_shapes(shapes), npts = 29;
  double worst_u = 0, worst_g = 0;
  for (int k = 0; k < ns; ++k) {
    tsr_net_opts od = make_opts(&shapes[k], npts, 0), of = od;
    of.single = 1;
    tsr_net *nd = create(&od), *nf = create(&of);
    const int K = tsr_net_channels(&od.shape), nout = od.shape.nout;
    const size_t len = u_len(&od, npts), np = tsr_net_nparam(&od.shape);
    double *th = make_theta(&od.shape, 400 + k), *X = make_points(&od, npts);
    /* both precisions from the same (float-representable) inputs */
    for (size_t q = 0; q < np; ++q) th[q] = (float)th[q];
    for (size_t q = 0; q < (size_t)od.shape.nin * npts; ++q) X[q] = (float)X[q];
    float *thf = to_float(th, np), *Xf = to_float(X, (size_t)od.shape.nin * npts);
    double *U = malloc(len * sizeof *U), *Ud = malloc(len * sizeof *U);
    double *dU = malloc(len * sizeof *U), *g = malloc(np * sizeof *g), *gd = malloc(np * sizeof *g);
    float *Uf = malloc(len * sizeof *Uf), *dUf = malloc(len * sizeof *Uf);
    float *gf = malloc(np * sizeof *gf);
    forward(nd, th, X, npts, U);
    assert_int_equal(tsr_net_forward(nf, thf, Xf, npts, Uf), TSR_OK);
    for (size_t q = 0; q < len; ++q) {
      Ud[q] = Uf[q];
      dU[q] = (float)urand(-1, 1);
      dUf[q] = (float)dU[q];
    }
    char t[128];
    shape_text(&od.shape, t, sizeof t);
    for (int c = 0; c < K; ++c) {
      size_t at = (size_t)nout * c * npts, cnt = (size_t)nout * npts;
      double e = rel_err(Ud + at, U + at, cnt, 1e-8);
      worst_u = fmax(worst_u, e);
      if (!(e <= 2e-5)) fail_msg("%s: channel %d: float vs double relative error %.3g", t, c, e);
    }
    assert_int_equal(tsr_net_backward(nd, th, dU, g), TSR_OK);
    assert_int_equal(tsr_net_backward(nf, thf, dUf, gf), TSR_OK);
    for (size_t q = 0; q < np; ++q) gd[q] = gf[q];
    double e = rel_err(gd, g, np, 1e-8);
    worst_g = fmax(worst_g, e);
    if (!(e <= 1e-5)) fail_msg("%s: gradient: float vs double relative error %.3g", t, e);
    free(th), free(X), free(thf), free(Xf), free(U), free(Ud), free(dU), free(g), free(gd);
    free(Uf), free(dUf), free(gf);
    tsr_net_destroy(&nd);
    tsr_net_destroy(&nf);
  }
  print_message("float vs double: worst relative error %.3g (outputs, per channel), %.3g "
                "(gradients)\n", worst_u, worst_g);
}

/* The same calls give the same bits: again on one handle, on a second handle, and on one
 * OpenMP thread (the host backend's bits do not depend on OMP_NUM_THREADS; kernels/net.c,
 * blas_threads). Points enough that the elementwise loops run on several threads. */
static void test_repeatable(void **state) {
  (void)state;
  for (int single = 0; single <= 1; ++single) {
    tsr_net_shape s = {3, 2, 32, 3, TSR_NET_TANH, 3, 2, 0};
    const int npts = 2000;
    tsr_net_opts o = make_opts(&s, npts, single);
    tsr_net *a = create(&o), *b = create(&o);
    const size_t es = single ? sizeof(float) : sizeof(double), len = u_len(&o, npts);
    const size_t np = tsr_net_nparam(&s);
    double *thd = make_theta(&s, 7), *Xd = make_points(&o, npts), *dUd = malloc(len * sizeof *dUd);
    for (size_t q = 0; q < len; ++q) dUd[q] = urand(-1, 1);
    void *th = single ? (void *)to_float(thd, np) : thd;
    void *X = single ? (void *)to_float(Xd, (size_t)3 * npts) : Xd;
    void *dU = single ? (void *)to_float(dUd, len) : dUd;
    unsigned char *U[4], *g[4];
    tsr_net *nets[4] = {a, a, b, b};
    const int threads = omp_get_max_threads();
    for (int r = 0; r < 4; ++r) {
      U[r] = malloc(len * es);
      g[r] = malloc(np * es);
      omp_set_num_threads(r == 3 ? 1 : threads);
      assert_int_equal(tsr_net_forward(nets[r], th, X, npts, U[r]), TSR_OK);
      assert_int_equal(tsr_net_backward(nets[r], th, dU, g[r]), TSR_OK);
    }
    omp_set_num_threads(threads);
    for (int r = 1; r < 4; ++r) {
      assert_memory_equal(U[0], U[r], len * es);
      assert_memory_equal(g[0], g[r], np * es);
    }
    for (int r = 0; r < 4; ++r) free(U[r]), free(g[r]);
    if (single) free(th), free(X), free(dU);
    free(thd), free(Xd), free(dUd);
    tsr_net_destroy(&a);
    tsr_net_destroy(&b);
  }
}

/* One pass over many points (the elementwise loops on several threads, the products over
 * long rows) against passes over chunks of them (serial loops): outputs point by point, and
 * the gradient as the sum of the chunks' gradients. */
static void test_chunks(void **state) {
  (void)state;
  tsr_net_shape s = {3, 2, 24, 3, TSR_NET_SIN, 3, 2, 0};
  const int npts = 1500, chunk = 60, K = tsr_net_channels(&s), nout = s.nout;
  tsr_net_opts o = make_opts(&s, npts, 0);
  tsr_net *big = create(&o), *small;
  tsr_net_opts oc = o;
  oc.npts = chunk;
  small = create(&oc);
  const size_t len = u_len(&o, npts), np = tsr_net_nparam(&s);
  double *th = make_theta(&s, 9), *X = make_points(&o, npts);
  double *U = malloc(len * sizeof *U), *dU = malloc(len * sizeof *U), *g = malloc(np * sizeof *g);
  double *Uc = malloc(u_len(&oc, chunk) * sizeof *U), *dUc = malloc(u_len(&oc, chunk) * sizeof *U);
  double *gc = malloc(np * sizeof *g), *gsum = calloc(np, sizeof *g);
  for (size_t q = 0; q < len; ++q) dU[q] = urand(-1, 1);
  forward(big, th, X, npts, U);
  assert_int_equal(tsr_net_backward(big, th, dU, g), TSR_OK);
  double worst = 0;
  for (int p0 = 0; p0 < npts; p0 += chunk) {
    for (int c = 0; c < K; ++c)
      for (int p = 0; p < chunk; ++p)
        for (int i = 0; i < nout; ++i)
          dUc[i + nout * (c * chunk + p)] = dU[i + nout * (c * npts + p0 + p)];
    forward(small, th, X + (size_t)s.nin * p0, chunk, Uc);
    assert_int_equal(tsr_net_backward(small, th, dUc, gc), TSR_OK);
    for (size_t q = 0; q < np; ++q) gsum[q] += gc[q];
    for (int c = 0; c < K; ++c)
      for (int p = 0; p < chunk; ++p)
        for (int i = 0; i < nout; ++i) {
          double a = U[i + nout * (c * npts + p0 + p)], b = Uc[i + nout * (c * chunk + p)];
          worst = fmax(worst, fabs(a - b) / fmax(fabs(b), 1e-3));
        }
  }
  double eg = rel_err(g, gsum, np, 1e-300);
  print_message("one pass vs chunks: worst output difference %.3g, gradient %.3g\n", worst, eg);
  assert_true(worst <= 1e-13);
  assert_true(eg <= 1e-12);
  free(th), free(X), free(U), free(dU), free(g), free(Uc), free(dUc), free(gc), free(gsum);
  tsr_net_destroy(&big);
  tsr_net_destroy(&small);
}

/* ---- (d) misuse ------------------------------------------------------------------------- */

static void expect_create_error(const tsr_net_opts *o, tsr_err want) {
  tsr_net *n = (tsr_net *)(uintptr_t)1; /* overwritten with NULL on failure */
  assert_int_equal(tsr_net_create(o, &n), want);
  assert_null(n);
  assert_true(strlen(tsr_err_message()) > 0);
}

static void test_misuse(void **state) {
  (void)state;
  tsr_net_shape s = {2, 1, 4, 2, TSR_NET_TANH, 2, 1, 0};
  tsr_net_opts o = make_opts(&s, 10, 0);
  tsr_net *n = create(&o);
  const size_t np = tsr_net_nparam(&s);
  double *th = make_theta(&s, 1), *X = make_points(&o, 11);
  double U[1 * 4 * 11], dU[1 * 4 * 11] = {0}, g[64];
  assert_true(np <= 64);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_ERR_STATE);
  assert_int_equal(tsr_net_forward(n, th, X, 11, U), TSR_ERR_INPUT);
  assert_int_equal(tsr_net_forward(n, th, X, -1, U), TSR_ERR_INPUT);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_ERR_STATE); /* failed passes count not */
  assert_int_equal(tsr_net_forward(n, th, X, 10, U), TSR_OK);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_OK);
  assert_int_equal(tsr_net_forward(n, th, X, 11, U), TSR_ERR_INPUT);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_ERR_STATE); /* nor a stale one */
  assert_int_equal(tsr_net_forward(n, th, X, 10, U), TSR_OK);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_OK);
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_OK); /* again: the pass is kept */
  /* zero points: a valid pass with a zero gradient */
  assert_int_equal(tsr_net_forward(n, th, X, 0, U), TSR_OK);
  g[0] = 1;
  assert_int_equal(tsr_net_backward(n, th, dU, g), TSR_OK);
  for (size_t q = 0; q < np; ++q) assert_true(g[q] == 0);
  tsr_net_destroy(&n);
  tsr_net_destroy(&n); /* NULL accepted */
  tsr_net_destroy(NULL);
  free(th), free(X);

  const tsr_net_shape bad[] = {
      {0, 1, 4, 2, TSR_NET_TANH, 0, 0, 0},  {5, 1, 4, 2, TSR_NET_TANH, 2, 1, 0},
      {2, 0, 4, 2, TSR_NET_TANH, 2, 1, 0},  {2, TSR_MAX_COMP + 1, 4, 2, TSR_NET_TANH, 2, 1, 0},
      {2, 1, 0, 2, TSR_NET_TANH, 2, 1, 0},  {2, 1, 4, 0, TSR_NET_TANH, 2, 1, 0},
      {2, 1, 4, 2, (tsr_net_act)7, 2, 1, 0}, {2, 1, 4, 2, TSR_NET_TANH, 3, 1, 0},
      {2, 1, 4, 2, TSR_NET_TANH, 1, 2, 0},  {2, 1, 4, 2, TSR_NET_TANH, 2, -1, 0},
      {2, 1, 4, 2, TSR_NET_TANH, -1, 0, 0}, {2, 1, 4, 2, TSR_NET_TANH, 2, 2, 2},
      {2, 1, 4, 2, TSR_NET_TANH, 2, 2, -1},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    tsr_net_opts b = o;
    b.shape = bad[k];
    expect_create_error(&b, TSR_ERR_INPUT);
  }
  tsr_net_opts b = o;
  b.npts = 0;
  expect_create_error(&b, TSR_ERR_INPUT);
  b = o;
  b.in_scale[1] = 0;
  expect_create_error(&b, TSR_ERR_INPUT);
  b = o;
  b.in_shift[0] = NAN;
  expect_create_error(&b, TSR_ERR_INPUT);
  b = o;
  b.npts = 1 << 30; /* beyond one BLAS product's int sizes */
  expect_create_error(&b, TSR_ERR_INPUT);
  b = o;
  b.shape.depth = 1 << 30; /* sizes that would wrap */
  b.shape.width = 1 << 15;
  b.npts = 1;
  expect_create_error(&b, TSR_ERR_INPUT);
#ifndef TSR_HAVE_CUDA
  b = o;
  b.device = 1;
  expect_create_error(&b, TSR_ERR_UNSUPPORTED);
  assert_non_null(strstr(tsr_err_message(), "CUDA"));
#endif
}

/* The Laplacian mode's channel counts and workspace: one second-derivative channel whatever
 * nd2 (none with nd2 = 0), and a workspace of K channels. */
static void test_lap_channels(void **state) {
  (void)state;
  static const struct { tsr_net_shape s; int K; } want[] = {
      {{2, 1, 8, 2, TSR_NET_TANH, 2, 2, 1}, 4}, {{2, 1, 8, 2, TSR_NET_TANH, 2, 2, 0}, 5},
      {{3, 1, 8, 2, TSR_NET_TANH, 3, 3, 1}, 5}, {{3, 1, 8, 2, TSR_NET_TANH, 3, 3, 0}, 7},
      {{3, 1, 8, 2, TSR_NET_TANH, 3, 2, 1}, 5}, {{2, 1, 8, 2, TSR_NET_TANH, 2, 1, 1}, 4},
      {{2, 1, 8, 2, TSR_NET_TANH, 2, 0, 1}, 3}, {{4, 1, 8, 2, TSR_NET_TANH, 4, 3, 1}, 6},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; ++k) {
    assert_int_equal(tsr_net_channels(&want[k].s), want[k].K);
    /* each channel: 2 depth + 2 arrays of width x npts (8 x 1000 doubles: 64-byte multiples) */
    tsr_net_opts o = make_opts(&want[k].s, 1000, 0), one = o;
    one.shape.nd1 = one.shape.nd2 = 0;
    assert_int_equal(tsr_net_workspace_bytes(&o) - tsr_net_workspace_bytes(&one),
                     (size_t)(want[k].K - 1) * (2 * 2 + 2) * 8 * 1000 * 8);
  }
}

/* ---- (e) initial parameters ----------------------------------------------------------- */

static void test_init(void **state) {
  (void)state;
  tsr_net_shape s = {4, 1, 200, 2, TSR_NET_TANH, 4, 3, 0};
  const size_t np = tsr_net_nparam(&s);
  assert_int_equal(np, 4 * 200 + 200 + 200 * 200 + 200 + 200 + 1);
  double *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
  tsr_net_init(&s, 42, a);
  tsr_net_init(&s, 42, b);
  assert_memory_equal(a, b, np * sizeof *a);
  tsr_net_init(&s, 43, b);
  size_t same = 0;
  for (size_t q = 0; q < np; ++q) same += a[q] == b[q];
  assert_true(same == 200 + 200 + 1); /* the zero biases only */
  for (int l = 0; l <= s.depth; ++l) {
    int no, ni;
    size_t wo, bo;
    tsr_net_layer(&s, l, &no, &ni, &wo, &bo);
    assert_int_equal(bo, wo + (size_t)no * ni);
    for (int i = 0; i < no; ++i) assert_true(a[bo + i] == 0);
    const size_t m = (size_t)no * ni;
    const double sd = sqrt(2.0 / (ni + no));
    double sum = 0, sq = 0, within = 0;
    for (size_t k = 0; k < m; ++k) {
      sum += a[wo + k];
      sq += a[wo + k] * a[wo + k];
      within += fabs(a[wo + k]) < sd;
    }
    const double mean = sum / m, std = sqrt(sq / m - mean * mean);
    /* 5 standard errors: the mean's sd / sqrt(m), the std's about sd / sqrt(2 m), the share
     * within one sd (0.6827 for a normal) sqrt(0.6827 * 0.3173 / m) */
    assert_true(fabs(mean) <= 5 * sd / sqrt((double)m));
    assert_true(fabs(std / sd - 1) <= 5 / sqrt(2.0 * m));
    assert_true(fabs(within / m - 0.6827) <= 5 * sqrt(0.6827 * 0.3173 / m));
  }
  /* seed 42's first parameters, pinned bits (Python's splitmix64 + Box-Muller with its libm
   * agrees to 1e-15): a change of the generator or of the order shows here */
  tsr_net_shape t = {2, 1, 3, 1, TSR_NET_TANH, 2, 2, 0};
  double th[13];
  tsr_net_init(&t, 42, th);
  const double want[13] = {0x1.0c9638c2fa348p-2,  0x1.a6b2e8186d395p-2, -0x1.20cee14cf1ae8p-1,
                           0x1.ada6cd6efe953p-1,  0x1.180938d55671dp+0, -0x1.30f0fffc25535p+0,
                           0, 0, 0, 0x1.8b124705f023ep-2, -0x1.2beb583f5cc63p+0,
                           -0x1.8726b9b8ecd71p-1, 0};
  for (int k = 0; k < 13; ++k)
    if (th[k] != want[k]) fail_msg("parameter %d of seed 42: %a, pinned %a", k, th[k], want[k]);
  free(a), free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_channel),   cmocka_unit_test(test_derivative_channels),
      cmocka_unit_test(test_gradients),       cmocka_unit_test(test_single_vs_double),
      cmocka_unit_test(test_repeatable),      cmocka_unit_test(test_chunks),
      cmocka_unit_test(test_misuse),          cmocka_unit_test(test_lap_channels),
      cmocka_unit_test(test_init),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
