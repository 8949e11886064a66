/* kernels/net on GPUs: for networks of several shapes (inputs 1..4, derivative channels in
 * the diagonal and the Laplacian modes,
 * depth 1..4, widths 5..300, tanh and sin, 1 to 3 outputs), on both device paths (the cuBLAS
 * path, TSR_NET_FUSED=0, the fused kernels, TSR_NET_FUSED=1, and the layers path,
 * TSR_NET_FUSED=2, which fall back to cuBLAS where they do not apply: the test asserts which
 * path each shape takes), the device's forward
 * values U and backward gradients agree with the host backend in double (max difference
 * <= 1e-12 of the array's largest magnitude) and, in float, with the host in double (<= 1e-4);
 * the two device paths agree with each other to the same bounds; a second device run gives the
 * same bits; a forward + backward captured in a CUDA graph and replayed gives the same bits as
 * the uncaptured calls; and misuse is refused (backward before forward, more points than the
 * capacity). Only the public interface kernels/net.h is used. Run on 1 and 2 ranks
 * (label gpu; gpu2 for 2), each on the GPU of its local rank. A difference out of tolerance is
 * printed (FAIL) and the shapes go on; the test then exits non-zero (MPI_Abort). Misuse, bits
 * that do not repeat and CUDA errors stop it at once. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/net.h"

static int g_rank;

#include "tests/check.h"

#define CU(call) CHECK((call) == cudaSuccess, "%s", #call)

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double uniform(void) { /* [0, 1) */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * 0x1.0p-53;
}

typedef struct {
  tsr_net_shape s;
  int npts;
  int fused_s, fused_d; /* TSR_NET_FUSED=1 takes the fused path in float, in double */
} net_case;

/* Where TSR_NET_FUSED=2 takes the layers path in float (kernels/net_cuda_internal.h): widths
 * 8, 16, 32, 64, 128; values alone, or the Laplacian mode's PINN sets. */
static int layers_apply(const tsr_net_shape *s) {
  const int w = s->width, lap = s->lap && s->nd2 > 0, set = s->nd1 * 10 + s->nd2;
  if (w < 8 || w > 128 || w % 4 || 256 % (w / 4)) return 0;
  if (s->nd1 == 0 && s->nd2 == 0) return 1;
  return lap && (set == 11 || set == 22 || set == 33 || set == 21 || set == 32 || set == 43);
}

static const char *act_name(tsr_net_act a) { return a == TSR_NET_TANH ? "tanh" : "sin"; }

static void describe(const net_case *c, char *buf, size_t n) {
  snprintf(buf, n, "nin %d nout %d width %d depth %d %s nd1 %d nd2 %d%s npts %d", c->s.nin,
           c->s.nout, c->s.width, c->s.depth, act_name(c->s.act), c->s.nd1, c->s.nd2,
           c->s.lap ? " lap" : "", c->npts);
}

/* A device copy of n doubles as float (single) or double. Owned by the caller (cudaFree). */
static void *to_device(const double *h, size_t n, int single) {
  void *d = NULL;
  size_t es = single ? sizeof(float) : sizeof(double);
  CU(cudaMalloc(&d, n * es + 1));
  if (single) {
    float *f = malloc(n * sizeof *f + 1);
    CHECK(f, "out of memory");
    for (size_t k = 0; k < n; ++k) f[k] = (float)h[k];
    CU(cudaMemcpy(d, f, n * es, cudaMemcpyHostToDevice));
    free(f);
  } else {
    CU(cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice));
  }
  return d;
}

/* n values of a device array (float or double) as doubles in h. */
static void to_host(const void *d, size_t n, int single, double *h) {
  if (single) {
    float *f = malloc(n * sizeof *f + 1);
    CHECK(f, "out of memory");
    CU(cudaMemcpy(f, d, n * sizeof *f, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < n; ++k) h[k] = f[k];
    free(f);
  } else {
    CU(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
  }
}

/* max |got - want| / max |want| (max |got - want| where want is all 0); NaN counts as failure. */
static double rel_diff(const double *got, const double *want, size_t n) {
  double dmax = 0.0, wmax = 0.0;
  int nan = 0;
  for (size_t k = 0; k < n; ++k) {
    double d = fabs(got[k] - want[k]);
    if (d != d) nan = 1; /* a NaN anywhere fails (a later finite d must not hide it) */
    else if (d > dmax) dmax = d;
    if (fabs(want[k]) > wmax) wmax = fabs(want[k]);
  }
  if (nan) return NAN;
  return wmax > 0.0 ? dmax / wmax : dmax;
}

/* The same bits in two device arrays of `bytes` bytes. */
static int same_bits(const void *a, const void *b, size_t bytes) {
  char *ha = malloc(bytes + 1), *hb = malloc(bytes + 1);
  CHECK(ha && hb, "out of memory");
  CU(cudaMemcpy(ha, a, bytes, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(hb, b, bytes, cudaMemcpyDeviceToHost));
  int same = memcmp(ha, hb, bytes) == 0;
  free(ha);
  free(hb);
  return same;
}

static int g_wrong_path; /* networks that took another path than their case says */
static int g_failed;     /* comparisons out of tolerance (each printed as FAIL) */

/* A tolerance failure is printed and counted, and the test goes on: one run shows every shape
 * and path that disagrees, which tells a kernel's fault from a shape's. */
#define SOFT_CHECK(cond, ...)                                                                   \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      g_failed++;                                                                               \
      printf("FAIL: ");                                                                         \
      printf(__VA_ARGS__);                                                                      \
      printf("\n");                                                                             \
    }                                                                                           \
  } while (0)

static void run_case(const net_case *c, cudaStream_t stream) {
  char what[160];
  describe(c, what, sizeof what);
  const tsr_net_shape *s = &c->s;
  const int K = tsr_net_channels(s), npts = c->npts, cap = npts + 5;
  const size_t np = tsr_net_nparam(s);
  const size_t nx = (size_t)s->nin * npts, nu = (size_t)s->nout * K * npts;

  tsr_net_opts o;
  memset(&o, 0, sizeof o);
  o.shape = *s;
  o.npts = cap; /* one pass with fewer points than the capacity: the layout follows npts */
  double *X = malloc(sizeof(double) * nx + 8), *dU = malloc(sizeof(double) * nu + 8);
  double *theta = malloc(sizeof(double) * np), *Uh = malloc(sizeof(double) * nu + 8);
  double *gh = malloc(sizeof(double) * np), *Ud = malloc(sizeof(double) * nu + 8);
  double *gd = malloc(sizeof(double) * np);
  CHECK(X && dU && theta && Uh && gh && Ud && gd, "out of memory");
  for (int j = 0; j < s->nin; ++j) { /* a box [lo, hi] per axis, mapped to [-1, 1] */
    double lo = -1.0 + 2.0 * uniform(), hi = lo + 0.25 + 3.0 * uniform();
    o.in_scale[j] = 2.0 / (hi - lo);
    o.in_shift[j] = -(hi + lo) / (hi - lo);
    for (int p = 0; p < npts; ++p) X[j + (size_t)s->nin * p] = lo + (hi - lo) * uniform();
  }
  /* a loss's gradient carries 1/npts; a positive mean keeps the float sums from cancelling to
   * nothing, so that 1e-4 of the largest gradient measures the products, not the noise */
  for (size_t k = 0; k < nu; ++k) dU[k] = (0.25 + uniform()) / npts;
  tsr_net_init(s, 1234 + (uint64_t)s->width, theta);
  for (size_t k = 0; k < np; ++k) theta[k] *= 1.0 + 0.5 * uniform(); /* not Glorot exactly */
  for (int l = 0; l <= s->depth; ++l) { /* nonzero biases */
    int n_out, n_in;
    size_t wo, bo;
    tsr_net_layer(s, l, &n_out, &n_in, &wo, &bo);
    for (int i = 0; i < n_out; ++i) theta[bo + i] = 0.4 * (uniform() - 0.5);
  }

  /* the host backend in double: the reference */
  tsr_net *host = NULL;
  CHECK(tsr_net_create(&o, &host) == TSR_OK, "host create (%s)", what);
  CHECK(tsr_net_forward(host, theta, X, npts, Uh) == TSR_OK, "host forward (%s)", what);
  CHECK(tsr_net_backward(host, theta, dU, gh) == TSR_OK, "host backward (%s)", what);
  tsr_net_destroy(&host);
  CHECK(host == NULL, "destroy sets the handle to NULL");

  double *Uc = malloc(sizeof(double) * nu + 8), *gc = malloc(sizeof(double) * np + 8);
  CHECK(Uc && gc, "out of memory");
  for (int k = 0; k < 6; ++k) {
    const int single = k / 3, fused = k % 3; /* TSR_NET_FUSED: 0 cuBLAS, 1 fused, 2 layers */
    const size_t es = single ? sizeof(float) : sizeof(double);
    const double tol = single ? 1e-4 : 1e-12;
    o.device = 1;
    o.single = single;
    o.stream = stream;
    tsr_net *dev = NULL;
    setenv("TSR_NET_FUSED", fused == 2 ? "2" : fused ? "1" : "0", 1);
    CHECK(tsr_net_create(&o, &dev) == TSR_OK, "device create (%s, %s)", what,
          single ? "float" : "double");
    unsetenv("TSR_NET_FUSED");
    const char *path = tsr_net_backend(dev);
    const char *want = fused == 1 && (single ? c->fused_s : c->fused_d) ? "fused"
                       : fused == 2 && single && layers_apply(&c->s) ? "layers"
                                                                      : "cublas";
    /* a path other than the table's fails the test at its end, after every shape has been
     * compared on the path it took: one run then shows every shape the plan declines */
    if (strcmp(path, want) != 0) {
      g_wrong_path++;
      printf("WRONG PATH: %s, %s, TSR_NET_FUSED=%d: the %s path, expected %s\n", what,
             single ? "float" : "double", fused, path, want);
    }
    void *dth = to_device(theta, np, single), *dX = to_device(X, nx, single);
    void *ddU = to_device(dU, nu, single);
    void *dUo[3], *dg[3];
    for (int r = 0; r < 3; ++r) {
      CU(cudaMalloc(&dUo[r], nu * es + 1));
      CU(cudaMalloc(&dg[r], np * es + 1));
      /* NaN: every entry must be written. On the network's stream: a cudaMemset on the legacy
       * stream does not order with a non-blocking stream, and could land after a pass's writes */
      CU(cudaMemsetAsync(dUo[r], 0xff, nu * es, stream));
      CU(cudaMemsetAsync(dg[r], 0xff, np * es, stream));
    }
    /* cudaMemcpy from pageable memory may return before its DMA lands, and the network's
     * non-blocking stream does not order after the legacy stream that copy is on: without
     * this, a large shape's first pass read part of dU before it arrived (session 16's and
     * 17's "failures" of the 66,560-point shape, which passed alone) */
    CU(cudaDeviceSynchronize());

    /* misuse: the backward pass before any forward pass, more points than the capacity */
    CHECK(tsr_net_backward(dev, dth, ddU, dg[0]) == TSR_ERR_STATE,
          "backward before forward must be TSR_ERR_STATE (%s)", what);
    CHECK(tsr_net_forward(dev, dth, dX, cap + 1, dUo[0]) == TSR_ERR_INPUT,
          "forward over the capacity must be TSR_ERR_INPUT (%s)", what);

    /* runs 0 and 1: uncaptured; the second must repeat the first's bits */
    for (int r = 0; r < 2; ++r) {
      CHECK(tsr_net_forward(dev, dth, dX, npts, dUo[r]) == TSR_OK, "device forward (%s)", what);
      CHECK(tsr_net_backward(dev, dth, ddU, dg[r]) == TSR_OK, "device backward (%s)", what);
    }
    CU(cudaStreamSynchronize(stream));
    to_host(dUo[0], nu, single, Ud);
    to_host(dg[0], np, single, gd);
    const double eu = rel_diff(Ud, Uh, nu), eg = rel_diff(gd, gh, np);
    if (g_rank == 0)
      printf("%-6s %-6s %s: U %.3g, grad %.3g (tolerance %g)\n", single ? "float" : "double",
             path, what, eu, eg, tol);
    if (!fused) { /* the cuBLAS path's results, for the other paths' runs next */
      memcpy(Uc, Ud, sizeof(double) * nu);
      memcpy(gc, gd, sizeof(double) * np);
    } else {
      const double fu = rel_diff(Ud, Uc, nu), fg = rel_diff(gd, gc, np);
      SOFT_CHECK(fu <= tol && fg <= tol, "%s, %s: the %s path differs from the cuBLAS path by %.3g "
            "(U), %.3g (grad) of the largest value", what, single ? "float" : "double", path, fu,
            fg);
    }
    SOFT_CHECK(eu <= tol, "%s, %s, %s path: device U differs from the host's by %.3g of its largest "
          "value", what, single ? "float" : "double", path, eu);
    if (!(eg <= tol)) { /* where: the parameter whose gradient is furthest off */
      size_t worst = 0;
      for (size_t q = 1; q < np; ++q)
        if (fabs(gd[q] - gh[q]) > fabs(gd[worst] - gh[worst])) worst = q;
      printf("worst gradient: parameter %zu of %zu, device %.9g, host %.9g\n", worst, np,
             gd[worst], gh[worst]);
    }
    SOFT_CHECK(eg <= tol, "%s, %s, %s path: device gradient differs from the host's by %.3g of its "
          "largest value", what, single ? "float" : "double", path, eg);
    CHECK(same_bits(dUo[0], dUo[1], nu * es), "%s, %s: a second forward pass gave other bits",
          what, single ? "float" : "double");
    CHECK(same_bits(dg[0], dg[1], np * es), "%s, %s: a second backward pass gave other bits",
          what, single ? "float" : "double");

    /* run 2: forward + backward captured in a graph, replayed twice */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    tsr_err fe = tsr_net_forward(dev, dth, dX, npts, dUo[2]);
    tsr_err be = tsr_net_backward(dev, dth, ddU, dg[2]);
    CU(cudaStreamEndCapture(stream, &graph));
    CHECK(fe == TSR_OK && be == TSR_OK, "%s: forward/backward under capture", what);
    CU(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 2; ++r) CU(cudaGraphLaunch(exec, stream));
    CU(cudaStreamSynchronize(stream));
    CHECK(same_bits(dUo[0], dUo[2], nu * es), "%s, %s: the graph's forward pass gave other bits",
          what, single ? "float" : "double");
    CHECK(same_bits(dg[0], dg[2], np * es), "%s, %s: the graph's backward pass gave other bits",
          what, single ? "float" : "double");
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));

    for (int r = 0; r < 3; ++r) {
      CU(cudaFree(dUo[r]));
      CU(cudaFree(dg[r]));
    }
    CU(cudaFree(dth));
    CU(cudaFree(dX));
    CU(cudaFree(ddU));
    tsr_net_destroy(&dev);
    CHECK(dev == NULL, "destroy sets the handle to NULL");
  }
  free(Uc);
  free(gc);
  free(X);
  free(dU);
  free(theta);
  free(Uh);
  free(gh);
  free(Ud);
  free(gd);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  /* line by line: a failed CHECK aborts, and the shapes' lines before it must not be lost */
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm node;
  int local_rank;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  int ngpu = 0;
  CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0,
        "no GPU visible: this test needs the GPU machine (ctest -L gpu)");
  CU(cudaSetDevice(local_rank % ngpu));
  cudaStream_t stream;
  CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  /* {nin, nout, width, depth, act, nd1, nd2[, lap]}, npts, fused in float, in double */
  static const net_case cases[] = {
      {{1, 1, 5, 1, TSR_NET_TANH, 1, 1, 0}, 333, 0, 0}, /* width not a multiple of 4 */
      {{1, 2, 7, 3, TSR_NET_SIN, 1, 0, 0}, 1000, 0, 0},
      {{2, 1, 16, 2, TSR_NET_SIN, 2, 2, 0}, 2049, 1, 1},
      {{2, 2, 64, 4, TSR_NET_TANH, 2, 0, 0}, 1500, 0, 0}, /* channels (2, 0): no fused kernel */
      {{3, 1, 20, 2, TSR_NET_SIN, 0, 0, 0}, 777, 1, 1},
      {{3, 2, 32, 3, TSR_NET_TANH, 3, 2, 0}, 4000, 1, 1}, /* x, y, t: second derivatives in space */
      {{3, 1, 64, 4, TSR_NET_SIN, 3, 3, 0}, 1200, 1, 1},
      {{2, 1, 48, 1, TSR_NET_TANH, 1, 0, 0}, 100, 0, 0},
      {{2, 1, 300, 2, TSR_NET_TANH, 2, 2, 0}, 400, 0, 0}, /* wider than a block: tiles of units */
      {{2, 1, 64, 2, TSR_NET_TANH, 2, 2, 0}, 70000, 1, 1}, /* enough points to cap the chunks */
      /* fp64: the fused plan declines this shape on an H100 (nvidia-h100-x2, session 11:
       * the cuBLAS path was taken with TSR_NET_FUSED=1; fp32 takes the fused one) */
      {{1, 1, 64, 4, TSR_NET_TANH, 1, 1, 0}, 3001, 1, 0},
      {{2, 1, 64, 4, TSR_NET_SIN, 2, 1, 0}, 2500, 1, 1},
      {{4, 3, 32, 3, TSR_NET_TANH, 4, 3, 0}, 1111, 1, 1}, /* x, y, z, t */
      {{2, 1, 124, 2, TSR_NET_TANH, 2, 2, 0}, 3000, 1, 0}, /* fp64: the tile is too large */
      {{2, 1, 128, 2, TSR_NET_SIN, 2, 2, 0}, 500, 0, 0},
      {{2, 1, 64, 4, TSR_NET_TANH, 2, 2, 0}, 66560, 1, 1}, /* the Poisson 2D benchmark's shape */
      /* the Laplacian mode ({..., lap = 1}: one second-derivative channel); which path each
       * takes is this table's reading of tsr_net_fused_make_plan (shared memory of an H100,
       * 227 KiB a block), not yet seen on the GPU */
      {{2, 1, 64, 4, TSR_NET_TANH, 2, 2, 1}, 66560, 1, 1}, /* Poisson 2D as the PINN runs it */
      {{2, 1, 16, 2, TSR_NET_SIN, 2, 2, 1}, 2049, 1, 1},
      {{3, 1, 64, 4, TSR_NET_SIN, 3, 3, 1}, 1200, 1, 1},   /* 3D */
      {{3, 2, 32, 3, TSR_NET_TANH, 3, 2, 1}, 4000, 1, 1},  /* 2D + t */
      {{2, 1, 64, 4, TSR_NET_SIN, 2, 1, 1}, 2500, 1, 1},   /* 1D + t: the diagonal kernels */
      {{4, 3, 32, 3, TSR_NET_TANH, 4, 3, 1}, 1111, 1, 1},  /* 3D + t */
      {{3, 1, 20, 2, TSR_NET_SIN, 3, 3, 1}, 777, 1, 1},
      {{2, 1, 64, 2, TSR_NET_TANH, 2, 2, 1}, 70000, 1, 1}, /* enough points to cap the chunks */
      {{2, 1, 124, 2, TSR_NET_TANH, 2, 2, 1}, 3000, 1, 0}, /* fp64: the tile is too large */
      {{2, 2, 64, 4, TSR_NET_TANH, 2, 0, 1}, 1500, 0, 0},  /* no Laplacian channel: K = 3 */
      {{1, 1, 5, 1, TSR_NET_TANH, 1, 1, 1}, 333, 0, 0},
      {{2, 1, 300, 2, TSR_NET_SIN, 2, 2, 1}, 400, 0, 0},
  };
  /* NET_GPU_CASES=3,15 runs those rows of the table alone (to tell a shape's fault from one
   * that an earlier shape's device state causes) */
  const char *only = getenv("NET_GPU_CASES");
  size_t ran = 0;
  for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
    if (only) {
      int hit = 0;
      for (const char *q = only; *q; ++q)
        if ((q == only || q[-1] == ',') && strtoul(q, NULL, 10) == k) hit = 1;
      if (!hit) continue;
    }
    run_case(&cases[k], stream);
    ran++;
  }

  CU(cudaStreamDestroy(stream));
  CHECK(ran > 0, "NET_GPU_CASES=%s names no row of the table (0..%zu)", only,
        sizeof cases / sizeof *cases - 1);
  CHECK(g_failed == 0, "%d comparison(s) out of tolerance (FAIL lines above)", g_failed);
  CHECK(g_wrong_path == 0, "%d network(s) took another path than the table says (above)",
        g_wrong_path);
  if (g_rank == 0) printf("net_gpu: %zu shapes agree with the host and repeat their bits\n", ran);
  MPI_Finalize();
  return 0;
}
