/* Multilayer perceptrons for the PINN method (kernels/net.h): shapes, the initial parameters,
 * and the host backend (BLAS products, OpenMP elementwise loops) in float and double. The CUDA
 * backend (kernels/net_cuda.c) sits behind the same calls when opts.device. */
#include "kernels/net.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "kernels/net_act.h"
#include "kernels/net_impl.h"

/* ---- shapes ---------------------------------------------------------------------------- */

int tsr_net_channels(const tsr_net_shape *s) {
  return 1 + s->nd1 + (s->lap ? s->nd2 > 0 : s->nd2);
}

static int layer_in(const tsr_net_shape *s, int l) { return l == 0 ? s->nin : s->width; }
static int layer_out(const tsr_net_shape *s, int l) { return l == s->depth ? s->nout : s->width; }

void tsr_net_layer(const tsr_net_shape *s, int l, int *n_out, int *n_in, size_t *woff,
                   size_t *boff) {
  size_t off = 0;
  for (int k = 0; k < l; ++k) off += (size_t)layer_out(s, k) * (size_t)(layer_in(s, k) + 1);
  const int no = layer_out(s, l), ni = layer_in(s, l);
  if (n_out) *n_out = no;
  if (n_in) *n_in = ni;
  if (woff) *woff = off;
  if (boff) *boff = off + (size_t)no * (size_t)ni;
}

size_t tsr_net_nparam(const tsr_net_shape *s) {
  int no;
  size_t boff;
  tsr_net_layer(s, s->depth, &no, NULL, NULL, &boff);
  return boff + (size_t)no;
}

/* ---- initial parameters ------------------------------------------------------------------
 * The stream: splitmix64 from the seed gives 64-bit words; each pair of words (w1, w2) gives
 * u1 = ((w1 >> 11) + 1) 2^-53 in (0, 1], u2 = (w2 >> 11) 2^-53 in [0, 1) and, by Box-Muller,
 * the two normals r cos(2 pi u2) then r sin(2 pi u2), r = sqrt(-2 log u1). The weights take
 * the normals in order: layer 0, 1, ..., depth, each layer's weights in storage order
 * (column-major), times that layer's standard deviation; biases take none; the unused half of
 * the last pair is dropped. log, cos and sin are tessera's own (series in +, -, *, / and the
 * exact frexp), and sqrt is correctly rounded, so the bits do not depend on the C library. */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* log u for u > 0: u = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m-1)/(m+1)). */
static double net_log(double u) {
  int e;
  double m = frexp(u, &e);
  if (m < 0.70710678118654752) {
    m *= 2;
    e -= 1;
  }
  const double t = (m - 1) / (m + 1), t2 = t * t; /* t2 < 0.0295: 13 terms reach 1e-20 */
  double sum = 0, pow = t;
  for (int k = 0; k < 13; ++k) {
    sum += pow / (2 * k + 1);
    pow *= t2;
  }
  return e * 0.69314718055994531 + 2 * sum;
}

/* cos and sin of 2 pi u for u in [0, 1), by Taylor series at an angle in [-pi, pi). */
static void net_cos_sin_2pi(double u, double *c, double *s) {
  const double x = 6.283185307179586477 * (u < 0.5 ? u : u - 1), x2 = x * x;
  double tc = 1, ts = x, sc = 0, ss = 0;
  for (int k = 0; k < 16; ++k) { /* pi^33 / 33! < 1e-20 */
    sc += tc;
    ss += ts;
    tc *= -x2 / ((2 * k + 1) * (2 * k + 2));
    ts *= -x2 / ((2 * k + 2) * (2 * k + 3));
  }
  *c = sc;
  *s = ss;
}

typedef struct {
  uint64_t state;
  int have;     /* spare holds the pair's second normal */
  double spare;
} net_normals;

static double net_normal(net_normals *g) {
  if (g->have) {
    g->have = 0;
    return g->spare;
  }
  const double u1 = (double)((splitmix64(&g->state) >> 11) + 1) * 0x1p-53;
  const double u2 = (double)(splitmix64(&g->state) >> 11) * 0x1p-53;
  const double r = sqrt(-2 * net_log(u1));
  double c, s;
  net_cos_sin_2pi(u2, &c, &s);
  g->spare = r * s;
  g->have = 1;
  return r * c;
}

void tsr_net_init(const tsr_net_shape *s, uint64_t seed, double *theta) {
  net_normals g = {seed, 0, 0};
  for (int l = 0; l <= s->depth; ++l) {
    int no, ni;
    size_t wo, bo;
    tsr_net_layer(s, l, &no, &ni, &wo, &bo);
    const double sd = sqrt(2.0 / (ni + no));
    for (size_t k = 0; k < (size_t)no * ni; ++k) theta[wo + k] = sd * net_normal(&g);
    for (int i = 0; i < no; ++i) theta[bo + i] = 0;
  }
}

/* ---- options and workspace ---------------------------------------------------------------- */

static tsr_err check_opts(const tsr_net_opts *o) {
  const tsr_net_shape *s = &o->shape;
  TSR_CHECK(s->nin >= 1 && s->nin <= 4 && s->nout >= 1 && s->nout <= TSR_MAX_COMP,
            TSR_ERR_INPUT, "network shape: %d inputs and %d outputs, allowed 1..4 and 1..%d",
            s->nin, s->nout, TSR_MAX_COMP);
  TSR_CHECK(s->width >= 1 && s->depth >= 1, TSR_ERR_INPUT,
            "network shape: width %d, depth %d; both must be at least 1", s->width, s->depth);
  TSR_CHECK(s->act == TSR_NET_TANH || s->act == TSR_NET_SIN, TSR_ERR_INPUT,
            "network shape: unknown activation %d (tanh or sin)", (int)s->act);
  TSR_CHECK(s->nd2 >= 0 && s->nd2 <= s->nd1 && s->nd1 <= s->nin, TSR_ERR_INPUT,
            "network shape: derivative channels nd1 %d, nd2 %d for %d inputs; need 0 <= nd2 <= "
            "nd1 <= nin", s->nd1, s->nd2, s->nin);
  TSR_CHECK(s->lap == 0 || s->lap == 1, TSR_ERR_INPUT,
            "network shape: lap %d; 1 carries one Laplacian channel, 0 the diagonal second "
            "derivatives", s->lap);
  TSR_CHECK(o->npts >= 1, TSR_ERR_INPUT, "network capacity npts %d; must be at least 1",
            o->npts);
  const int K = tsr_net_channels(s);
  TSR_CHECK((long long)K * o->npts <= 0x7fffffff / (s->width > s->nout ? s->width : s->nout),
            TSR_ERR_INPUT,
            "network capacity: %d points x %d channels x %d units exceed the 2^31 entries of "
            "one BLAS product; use fewer points per pass", o->npts, K, s->width);
  /* sizes whose counts in size_t cannot wrap: no workable network comes near */
  const double params = ((double)s->width + 1) * (s->width * (double)s->depth + s->nin + s->nout),
               entries = (2.0 * s->depth + 3) * s->width * K * (double)o->npts;
  TSR_CHECK(params < 1e15 && entries < 1e17, TSR_ERR_INPUT,
            "network size: width %d, depth %d and %d points need %.3g parameters and %.3g "
            "workspace entries; use a smaller network", s->width, s->depth, o->npts, params,
            entries);
  for (int j = 0; j < s->nin; ++j)
    TSR_CHECK(isfinite(o->in_scale[j]) && o->in_scale[j] != 0 && isfinite(o->in_shift[j]),
              TSR_ERR_INPUT,
              "network input %d: normalisation scale %g, shift %g; the scale must be finite and "
              "non-zero (2 / (hi - lo) maps the box to [-1, 1])", j, o->in_scale[j],
              o->in_shift[j]);
  return TSR_OK;
}

/* The host workspace: per hidden layer A and Z (blk entries each), two buffers for the reverse
 * pass, the normalised inputs; one allocation, each array 64-byte aligned. */
typedef struct {
  void *A, *Z, *D[2], *xhat;
  size_t blk; /* width * K * capacity */
} net_host;

static size_t round64(size_t b) { return (b + 63) / 64 * 64; }

size_t tsr_net_workspace_bytes(const tsr_net_opts *o) {
  const tsr_net_shape *s = &o->shape;
  const size_t es = o->single ? sizeof(float) : sizeof(double);
  const size_t blk = (size_t)s->width * tsr_net_channels(s) * o->npts * es;
  return (2 * (size_t)s->depth + 2) * round64(blk) + round64((size_t)s->nin * o->npts * es) +
         round64(sizeof(net_host));
}

/* OpenBLAS (Debian's pthreads build) has a thread pool of its own beside OpenMP's, one thread
 * per core of the node unless told, whose threads spin a while after each product, into the
 * OpenMP loops that follow; and its products' bits change with its thread count (seen: 1
 * against 2 threads, gradients). So the products run on one thread per rank and the OpenMP
 * loops, whose bits depend on no thread count, share the rank's cores: results then do not
 * depend on OMP_NUM_THREADS. OPENBLAS_NUM_THREADS, when set, is left to rule (faster products
 * on many cores per rank; bits repeat only for the same value). */
static void blas_threads(void) {
  if (!getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
}

static tsr_err host_create(tsr_net *n) {
  const size_t bytes = tsr_net_workspace_bytes(&n->o);
  unsigned char *mem = aligned_alloc(64, bytes);
  TSR_CHECK(mem, TSR_ERR_MEMORY,
            "out of memory allocating %zu bytes for a network's workspace (width %d, depth %d, "
            "%d channels, %d points): use fewer points per pass or a smaller network",
            bytes, n->o.shape.width, n->o.shape.depth, n->K, n->o.npts);
  const size_t es = n->o.single ? sizeof(float) : sizeof(double);
  net_host *h = (net_host *)mem;
  h->blk = (size_t)n->o.shape.width * n->K * n->o.npts;
  const size_t b = round64(h->blk * es), depth = (size_t)n->o.shape.depth;
  unsigned char *p = mem + round64(sizeof(net_host));
  h->A = p;
  h->Z = p + depth * b;
  h->D[0] = p + 2 * depth * b;
  h->D[1] = p + (2 * depth + 1) * b;
  h->xhat = p + (2 * depth + 2) * b;
  n->host = h;
  blas_threads();
  return TSR_OK;
}

/* ---- the host passes, in double and in float (kernels/net_host_tmpl.h) --------------------- */

#define NET_R double
#define NET_FN(name) net_##name##_d
#define NET_GEMM cblas_dgemm
#define NET_ACT_SFX d
#include "kernels/net_host_tmpl.h"
#undef NET_R
#undef NET_FN
#undef NET_GEMM
#undef NET_ACT_SFX
#undef NET_ACT_CAT
#undef NET_ACT_CAT2
#undef NET_OMP_MIN

#define NET_R float
#define NET_FN(name) net_##name##_s
#define NET_GEMM cblas_sgemm
#define NET_ACT_SFX f
#include "kernels/net_host_tmpl.h"

/* ---- the public calls ------------------------------------------------------------------- */

#ifndef TSR_HAVE_CUDA
static tsr_err no_cuda(void) {
  return tsr_err_set(TSR_ERR_UNSUPPORTED, __FILE__, __LINE__,
                     "a network on the device (opts.device = 1) needs a build with CUDA "
                     "(TESSERA_ENABLE_CUDA=ON); set opts.device = 0 for the host backend");
}
#endif

tsr_err tsr_net_create(const tsr_net_opts *o, tsr_net **out) {
  *out = NULL;
  TSR_CALL(check_opts(o));
  tsr_net *n;
  TSR_ALLOC(n, 1, "a network handle");
  n->o = *o;
  n->K = tsr_net_channels(&o->shape);
  n->nparam = tsr_net_nparam(&o->shape);
  tsr_err err;
#ifdef TSR_HAVE_CUDA
  err = o->device ? tsr_net_cuda_create(n) : host_create(n);
#else
  err = o->device ? no_cuda() : host_create(n);
#endif
  if (err) {
    tsr_net_destroy(&n);
    return err;
  }
  *out = n;
  return TSR_OK;
}

const char *tsr_net_backend(const tsr_net *n) {
#ifdef TSR_HAVE_CUDA
  if (n->o.device) return tsr_net_cuda_path(n);
#endif
  return "host";
}

void tsr_net_destroy(tsr_net **np) {
  if (!np || !*np) return;
  tsr_net *n = *np;
#ifdef TSR_HAVE_CUDA
  if (n->dev) tsr_net_cuda_destroy(n);
#endif
  free(n->host);
  free(n);
  *np = NULL;
}

tsr_err tsr_net_forward(tsr_net *n, const void *theta, const void *X, int npts, void *U) {
  n->forwarded = 0; /* until this pass succeeds: a backward pass must not reverse a stale one */
  TSR_CHECK(npts >= 0 && npts <= n->o.npts, TSR_ERR_INPUT,
            "a network's forward pass on %d points; it was created for 0..%d (opts.npts): "
            "create it with a larger capacity or split the points", npts, n->o.npts);
  n->npts = npts;
  if (n->o.device) {
#ifdef TSR_HAVE_CUDA
    TSR_CALL(tsr_net_cuda_forward(n, theta, X, npts, U));
#else
    return no_cuda();
#endif
  } else if (npts > 0) {
    if (n->o.single)
      net_forward_s(n, theta, X, npts, U);
    else
      net_forward_d(n, theta, X, npts, U);
  }
  n->forwarded = 1;
  return TSR_OK;
}

tsr_err tsr_net_backward(tsr_net *n, const void *theta, const void *dU, void *grad) {
  TSR_CHECK(n->forwarded, TSR_ERR_STATE,
            "a network's backward pass without a forward pass before it: call tsr_net_forward "
            "on the points first");
  if (n->o.device) {
#ifdef TSR_HAVE_CUDA
    return tsr_net_cuda_backward(n, theta, dU, grad);
#else
    return no_cuda();
#endif
  }
  if (n->npts == 0)
    memset(grad, 0, n->nparam * (n->o.single ? sizeof(float) : sizeof(double)));
  else if (n->o.single)
    net_backward_s(n, theta, dU, grad);
  else
    net_backward_d(n, theta, dU, grad);
  return TSR_OK;
}
