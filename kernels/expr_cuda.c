/* Case expressions compiled for the device with NVRTC and loaded through the runtime's
 * library API (no driver API, so no link against libcuda). The generated source is plain
 * CUDA C++ without includes: NVRTC declares the math functions itself, and it has no
 * standard headers to include. Kernel arguments are scalars (and one array of ints) so that
 * no struct layout has to agree between this C file and the generated C++. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "kernels/expr_cuda.h"
#include "io/text.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "kernels/cuda_util.h"
#include "kernels/expr_cuda_internal.h"
#include "kernels/models.h"

struct tsr_expr_cuda {
  int n;
  cudaLibrary_t lib;
  cudaKernel_t cells, cells_f, face, points;
};

#define TSR_EXPR_THREADS 256
/* Grid-stride loops: a bounded grid covers any count, and counts beyond 2^31 blocks need no
 * special case. */
#define TSR_EXPR_MAX_BLOCKS 65536

static tsr_err nvrtc_fail(nvrtcResult r, const char *call, const char *file, int line) {
  return tsr_err_set(TSR_ERR_CUDA, file, line, "NVRTC error in %s: %s (%s:%d)", call,
                     nvrtcGetErrorString(r), file, line);
}

#define TSR_NVRTC(call)                                                                        \
  do {                                                                                         \
    nvrtcResult tsr_nv_e_ = (call);                                                            \
    if (tsr_nv_e_ != NVRTC_SUCCESS) return nvrtc_fail(tsr_nv_e_, #call, __FILE__, __LINE__);   \
  } while (0)

/* ---- source ---------------------------------------------------------------------------- */


/* The canonical C text of e (malloc'd). tsr_expr_to_c reports the size it needs only in its
 * message, so grow until it fits; expressions are at most 4096 characters, their text a few
 * times that. */
static tsr_err c_text(const tsr_expr *e, char **out) {
  *out = NULL;
  for (size_t n = 4096; n <= ((size_t)1 << 24); n *= 2) {
    char *buf = malloc(n);
    TSR_CHECK(buf, TSR_ERR_MEMORY, "out of memory for the C text of an expression");
    if (tsr_expr_to_c(e, buf, n) == TSR_OK) {
      *out = buf;
      return TSR_OK;
    }
    free(buf);
  }
  return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                     "the C text of an expression is longer than 16 MiB");
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Index of name[0..len) among env's params, or -1. */
static int param_index(const tsr_expr_env *env, const char *name, size_t len) {
  for (int k = 0; env && k < env->nparam; k++)
    if (strlen(env->names[k]) == len && !strncmp(env->names[k], name, len)) return k;
  return -1;
}

/* Copies the C text with every param renamed tsr_p_NAME. Identifiers are found by skipping
 * numbers whole (their exponent's 'e' is not a name). */
static void put_mangled(tsr_strbuf *b, const char *c, const tsr_expr_env *env) {
  const char *s = c;
  while (*s) {
    const char *p = s;
    if (is_digit((unsigned char)*s) || *s == '.') {
      while (is_digit((unsigned char)*s) || *s == '.') s++;
      if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        while (is_digit((unsigned char)*s)) s++;
      }
      tsr_strbuf_printf(b, "%.*s", (int)(s - p), p);
    } else if (is_alpha((unsigned char)*s)) {
      while (is_alpha((unsigned char)*s) || is_digit((unsigned char)*s)) s++;
      int k = param_index(env, p, (size_t)(s - p));
      tsr_strbuf_printf(b, "%s%.*s", k >= 0 ? "tsr_p_" : "", (int)(s - p), p);
    } else {
      tsr_strbuf_printf(b, "%c", *s++);
    }
  }
}

/* A double literal that reads back as v: %.17g, the C locale's point, ".0" on integers; the
 * bits for what no literal spells (inf, nan). */
static void put_double(tsr_strbuf *b, double v) {
  if (!isfinite(v)) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tsr_strbuf_printf(b, "__longlong_as_double(0x%016llxLL)", (unsigned long long)bits);
    return;
  }
  char num[48];
  snprintf(num, sizeof num, "%.17g", v);
  const char *dp = localeconv()->decimal_point;
  char *dot = dp && dp[0] && !dp[1] ? strchr(num, dp[0]) : NULL;
  if (dot) *dot = '.';
  tsr_strbuf_printf(b, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");
}

static const char src_kernels[] =
    "// The cell centre exactly as the host's tsr_cell_center (solver/boundary.c): the same\n"
    "// operations in the same order, h computed on the host and passed in.\n"
    "// n > 0: a periodic axis of n cells, i taken modulo n first.\n"
    "__device__ double tsr_center(double lo, double h, int i, int n) {\n"
    "  if (n > 0) {\n"
    "    i %= n;\n"
    "    if (i < 0) i += n;\n"
    "  }\n"
    "  return lo + ((double)i + 0.5) * h;\n"
    "}\n"
    "\n"
    "struct tsr_comp_expr { int e[TSR_MAX_COMP]; };\n"
    "static_assert(sizeof(tsr_comp_expr) == TSR_MAX_COMP * sizeof(int), \"tsr_comp_expr\");\n"
    "\n"
    "#define TSR_GRID_STRIDE(q, n) \\\n"
    "  for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < (n); \\\n"
    "       q += (long long)gridDim.x * blockDim.x)\n"
    "\n"
    "// The time is t_arg, or *tp where tp is not null: a CUDA graph replays its launches with\n"
    "// the arguments they were captured with, so a graph's step reads its time from the device.\n"
    "//\n"
    "// Owned cells of a box: n0 x n1 x n2 cells from global cell (b0, b1, b2), written at\n"
    "// u[c * sz + b * sy + a] as T (the field's precision); axes beyond dim have coordinate 0.\n"
    "#define TSR_EXPR_CELLS(NAME, T) \\\n"
    "extern \"C\" __global__ void NAME(int e, T *u, long long sy, long long sz, \\\n"
    "    int n0, int n1, int n2, int b0, int b1, int b2, double lo0, double lo1, double lo2, \\\n"
    "    double h0, double h1, double h2, int w0, int w1, int w2, int dim, double t_arg, \\\n"
    "    const double *tp) { \\\n"
    "  const double t = tp ? *tp : t_arg; \\\n"
    "  long long n = (long long)n0 * n1 * n2; \\\n"
    "  TSR_GRID_STRIDE(q, n) { \\\n"
    "    int a = (int)(q % n0); \\\n"
    "    long long r = q / n0; \\\n"
    "    int b = (int)(r % n1), c = (int)(r / n1); \\\n"
    "    double x = dim > 0 ? tsr_center(lo0, h0, b0 + a, w0) : 0.0; \\\n"
    "    double y = dim > 1 ? tsr_center(lo1, h1, b1 + b, w1) : 0.0; \\\n"
    "    double z = dim > 2 ? tsr_center(lo2, h2, b2 + c, w2) : 0.0; \\\n"
    "    u[c * sz + b * sy + a] = (T)tsr_eval(e, x, y, z, t); \\\n"
    "  } \\\n"
    "}\n"
    "TSR_EXPR_CELLS(tsr_expr_cells, double)\n"
    "TSR_EXPR_CELLS(tsr_expr_cells_f, float)\n"
    "\n"
    "// Face points: fc on axis, cell centres (from global cells b1, b2) on t1 and t2 where\n"
    "// u1, u2 say the axis is used; out is ncomp x n2 x n1.\n"
    "extern \"C\" __global__ void tsr_expr_face(tsr_comp_expr ce, int ncomp, int axis, double fc,\n"
    "    int t1, int t2, int n1, int n2, int b1, int b2, double lo1, double lo2, double h1,\n"
    "    double h2, int u1, int u2, int w1, int w2, double t_arg, const double *tp,\n"
    "    double *out) {\n"
    "  const double t = tp ? *tp : t_arg;\n"
    "  long long n = (long long)n1 * n2;\n"
    "  TSR_GRID_STRIDE(q, n * ncomp) {\n"
    "    int comp = (int)(q / n);\n"
    "    long long ab = q - comp * n;\n"
    "    int a = (int)(ab % n1), b = (int)(ab / n1);\n"
    "    double c1 = u1 ? tsr_center(lo1, h1, b1 + a, w1) : 0.0;\n"
    "    double c2 = u2 ? tsr_center(lo2, h2, b2 + b, w2) : 0.0;\n"
    "    double x = axis == 0 ? fc : t1 == 0 ? c1 : c2;\n"
    "    double y = axis == 1 ? fc : t1 == 1 ? c1 : c2;\n"
    "    double z = axis == 2 ? fc : t1 == 2 ? c1 : c2;\n"
    "    out[q] = tsr_eval(ce.e[comp], x, y, z, t);\n"
    "  }\n"
    "}\n"
    "\n"
    "// Scattered points; z may be null (0).\n"
    "extern \"C\" __global__ void tsr_expr_points(int e, long long n, const double *x,\n"
    "    const double *y, const double *z, double t, double *out) {\n"
    "  TSR_GRID_STRIDE(q, n) out[q] = tsr_eval(e, x[q], y[q], z ? z[q] : 0.0, t);\n"
    "}\n";

tsr_err tsr_expr_cuda_source(int n, const tsr_expr *const *e, const tsr_expr_env *env,
                             char **src) {
  TSR_CHECK(src, TSR_ERR_INTERNAL, "tsr_expr_cuda_source: NULL result pointer");
  *src = NULL;
  TSR_CHECK(n >= 0 && (n == 0 || e), TSR_ERR_INTERNAL, "tsr_expr_cuda_source: bad expressions");
  TSR_CHECK(!env || env->nparam == 0 || (env->names && env->values), TSR_ERR_INTERNAL,
            "tsr_expr_cuda_source: env without names or values");
  tsr_strbuf b = {0};
  tsr_strbuf_printf(&b,
      "// tessera: case expressions for the device, generated by kernels/expr_cuda.c and\n"
      "// compiled by NVRTC with -fmad=false. Each tsr_e<i> returns io/expr's canonical C text\n"
      "// (params renamed tsr_p_NAME).\n"
      "#define TSR_MAX_COMP %d\n\n",
      TSR_MAX_COMP);
  for (int i = 0; i < n; i++) {
    tsr_strbuf_printf(&b, "__device__ double tsr_e%d(double x, double y, double z, double t) {\n", i);
    if (!e[i]) {
      tsr_strbuf_printf(&b, "  return 0.0;\n}\n\n");
      continue;
    }
    for (int k = 0; env && k < env->nparam; k++) {
      if (!tsr_expr_uses(e[i], env->names[k])) continue;
      tsr_strbuf_printf(&b, "  const double tsr_p_%s = ", env->names[k]);
      put_double(&b, env->values[k]);
      tsr_strbuf_printf(&b, ";\n");
    }
    char *c = NULL;
    tsr_err err = c_text(e[i], &c);
    if (err) {
      free(b.s);
      return err;
    }
    tsr_strbuf_printf(&b, "  return ");
    put_mangled(&b, c, env);
    tsr_strbuf_printf(&b, ";\n}\n\n");
    free(c);
  }
  tsr_strbuf_printf(&b, "__device__ double tsr_eval(int e, double x, double y, double z, double t) {\n"
          "  switch (e) {\n");
  for (int i = 0; i < n; i++) tsr_strbuf_printf(&b, "  case %d: return tsr_e%d(x, y, z, t);\n", i, i);
  tsr_strbuf_printf(&b, "  default: return 0.0;\n  }\n}\n\n%s", src_kernels);
  if (b.oom) {
    free(b.s);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory generating the device source of %d expressions", n);
  }
  *src = b.s;
  return TSR_OK;
}

/* ---- NVRTC ----------------------------------------------------------------------------- */

/* Compiles prog and copies its cubin or PTX into a malloc'd image. */
static tsr_err compile_prog(nvrtcProgram prog, const char *arch, char **image, size_t *size) {
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  /* Precision is the point: -fmad=false keeps a*b+c two roundings as in the C text (and as
   * on the host, -ffp-contract=off); the other three are NVRTC's defaults, spelled out so a
   * changed default cannot change results. */
  const char *opts[] = {archopt,          "--fmad=false",      "--std=c++17",
                        "--ftz=false",    "--prec-div=true",   "--prec-sqrt=true"};
  nvrtcResult r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
  if (r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION) {
    size_t ln = 0;
    char *log = NULL;
    if (nvrtcGetProgramLogSize(prog, &ln) == NVRTC_SUCCESS && ln > 0 && (log = malloc(ln)) &&
        nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
      log[0] = '\0';
    tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                "NVRTC could not compile the device source of the case's expressions for %s "
                "(a bug in tessera: io/expr validated them): %s\n%s",
                arch, nvrtcGetErrorString(r), log ? log : "(no log)");
    free(log);
    return TSR_ERR_INTERNAL;
  }
  TSR_NVRTC(r);
  int cubin = !strncmp(arch, "sm_", 3);
  size_t n = 0;
  if (cubin) TSR_NVRTC(nvrtcGetCUBINSize(prog, &n));
  else TSR_NVRTC(nvrtcGetPTXSize(prog, &n));
  TSR_CHECK(n > 0, TSR_ERR_INTERNAL, "NVRTC produced an empty %s for %s",
            cubin ? "cubin" : "PTX", arch);
  char *img = malloc(n);
  TSR_CHECK(img, TSR_ERR_MEMORY, "out of memory for %zu bytes of compiled expressions", n);
  r = cubin ? nvrtcGetCUBIN(prog, img) : nvrtcGetPTX(prog, img);
  if (r != NVRTC_SUCCESS) {
    free(img);
    return nvrtc_fail(r, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", __FILE__, __LINE__);
  }
  *image = img;
  *size = n;
  return TSR_OK;
}

/* Images compiled so far in this process: a run that sets up several grids of one case
 * (parareal's slices and its coarse grid) compiles each source once, not once per grid
 * (NVRTC takes a few hundred milliseconds a source). Set-up is single-threaded. */
enum { CACHE_SIZE = 16 };
static struct {
  char *src;
  char arch[32];
  char *img;
  size_t n;
} cache[CACHE_SIZE];
static int ncache;

static tsr_err image_copy(const char *img, size_t n, char **image, size_t *size) {
  char *c = malloc(n);
  TSR_CHECK(c, TSR_ERR_MEMORY, "out of memory for %zu bytes of compiled expressions", n);
  memcpy(c, img, n);
  *image = c;
  *size = n;
  return TSR_OK;
}

tsr_err tsr_expr_cuda_compile(const char *src, const char *arch, char **image, size_t *size) {
  TSR_CHECK(image && size && src && arch, TSR_ERR_INTERNAL,
            "tsr_expr_cuda_compile: NULL argument");
  *image = NULL;
  *size = 0;
  for (int k = 0; k < ncache; ++k)
    if (!strcmp(cache[k].arch, arch) && !strcmp(cache[k].src, src))
      return image_copy(cache[k].img, cache[k].n, image, size);
  nvrtcProgram prog;
  TSR_NVRTC(nvrtcCreateProgram(&prog, src, "tessera_expr.cu", 0, NULL, NULL));
  tsr_err err = compile_prog(prog, arch, image, size);
  nvrtcDestroyProgram(&prog);
  if (!err && ncache < CACHE_SIZE && strlen(arch) < sizeof cache[0].arch) {
    char *s = strdup(src), *img = malloc(*size);
    if (s && img) {
      memcpy(img, *image, *size);
      cache[ncache].src = s;
      snprintf(cache[ncache].arch, sizeof cache[0].arch, "%s", arch);
      cache[ncache].img = img;
      cache[ncache++].n = *size;
    } else {
      free(s), free(img); /* no cache entry: the next grid compiles again */
    }
  }
  return err;
}

/* The architecture to compile for on the current device: its own (a cubin) when this NVRTC
 * knows it, else the newest older one as PTX, which the driver compiles on load. */
static tsr_err pick_arch(char *arch, size_t n) {
  int dev, major, minor;
  TSR_CUDA(cudaGetDevice(&dev));
  TSR_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  TSR_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  int cc = 10 * major + minor, na = 0, best = -1;
  TSR_NVRTC(nvrtcGetNumSupportedArchs(&na));
  int *archs;
  TSR_ALLOC(archs, na, "NVRTC's architectures");
  nvrtcResult r = nvrtcGetSupportedArchs(archs);
  for (int k = 0; r == NVRTC_SUCCESS && k < na; k++)
    if (archs[k] <= cc && archs[k] > best) best = archs[k];
  free(archs);
  TSR_NVRTC(r);
  TSR_CHECK(best >= 0, TSR_ERR_UNSUPPORTED,
            "device %d (compute capability %d.%d) is older than every architecture this NVRTC "
            "compiles for: use a newer GPU or the host backend",
            dev, major, minor);
  snprintf(arch, n, "%s_%d", best == cc ? "sm" : "compute", best);
  return TSR_OK;
}

tsr_err tsr_expr_cuda_build(int n, const tsr_expr *const *e, const tsr_expr_env *env,
                            tsr_expr_cuda **out) {
  TSR_CHECK(out, TSR_ERR_INTERNAL, "tsr_expr_cuda_build: NULL result pointer");
  *out = NULL;
  char arch[32], *src = NULL, *image = NULL;
  size_t size = 0;
  TSR_CALL(pick_arch(arch, sizeof arch));
  TSR_CALL(tsr_expr_cuda_source(n, e, env, &src));
  tsr_err err = tsr_expr_cuda_compile(src, arch, &image, &size);
  free(src);
  if (err) return err;
  tsr_expr_cuda *m = calloc(1, sizeof *m);
  if (!m) {
    free(image);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for device expressions");
  }
  m->n = n;
  /* The library copies the image (and JIT-compiles PTX) on load, so it can go at once. */
  cudaError_t ce = cudaLibraryLoadData(&m->lib, image, NULL, NULL, 0, NULL, NULL, 0);
  free(image);
  if (ce != cudaSuccess) {
    free(m);
    return tsr_cuda_fail((int)ce, "cudaLibraryLoadData", __FILE__, __LINE__);
  }
  static const char *const names[4] = {"tsr_expr_cells", "tsr_expr_cells_f", "tsr_expr_face",
                                       "tsr_expr_points"};
  cudaKernel_t *k[4] = {&m->cells, &m->cells_f, &m->face, &m->points};
  for (int i = 0; i < 4; i++) {
    ce = cudaLibraryGetKernel(k[i], m->lib, names[i]);
    if (ce != cudaSuccess) {
      err = tsr_cuda_fail((int)ce, "cudaLibraryGetKernel", __FILE__, __LINE__);
      tsr_err_append("(kernel %s of the expressions' library)", names[i]);
      tsr_expr_cuda_destroy(&m);
      return err;
    }
  }
  *out = m;
  return TSR_OK;
}

/* ---- launches -------------------------------------------------------------------------- */

static tsr_err launch(cudaKernel_t k, long long count, void **args, cudaStream_t s,
                      const char *what) {
  if (count <= 0) return TSR_OK;
  long long blocks = (count + TSR_EXPR_THREADS - 1) / TSR_EXPR_THREADS;
  if (blocks > TSR_EXPR_MAX_BLOCKS) blocks = TSR_EXPR_MAX_BLOCKS;
  dim3 grid = {(unsigned)blocks, 1, 1}, block = {TSR_EXPR_THREADS, 1, 1};
  cudaError_t ce = cudaLaunchKernel((const void *)k, grid, block, args, 0, s);
  if (ce != cudaSuccess) return tsr_cuda_fail((int)ce, what, __FILE__, __LINE__);
  return TSR_OK;
}

tsr_err tsr_expr_cuda_eval_cells(tsr_expr_cuda *m, int i, const tsr_expr_grid *g, double t,
                                 const double *tp, tsr_field *f, int comp, const tsr_box *region,
                                 cudaStream_t s) {
  TSR_CHECK(m && g && f, TSR_ERR_INTERNAL, "tsr_expr_cuda_eval_cells: NULL argument");
  TSR_CHECK(i >= 0 && i < m->n, TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_cells: expression %d of %d", i, m->n);
  TSR_CHECK(comp >= 0 && comp < f->ncomp, TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_cells: component %d of %d", comp, f->ncomp);
  TSR_CHECK(f->mem == TSR_MEM_DEVICE, TSR_ERR_STATE,
            "tsr_expr_cuda_eval_cells needs a device field");
  const tsr_box *bx = region ? region : &f->box;
  if (tsr_box_empty(bx)) return TSR_OK;
  TSR_CHECK(tsr_box_contains(&f->gbox, bx), TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_cells: the region lies outside the field");
  /* the address of the box's first cell, in bytes of the field's precision */
  void *u = (char *)f->data +
            tsr_prec_size(f->prec) * tsr_field_at(f, comp, bx->lo[0], bx->lo[1], bx->lo[2]);
  long long sy = (long long)f->sy, sz = (long long)f->sz;
  int n0 = tsr_box_len(bx, 0), n1 = tsr_box_len(bx, 1), n2 = tsr_box_len(bx, 2);
  int b0 = bx->lo[0], b1 = bx->lo[1], b2 = bx->lo[2], dim = g->dim;
  double lo0 = g->lo[0], lo1 = g->lo[1], lo2 = g->lo[2];
  double h0 = g->h[0], h1 = g->h[1], h2 = g->h[2];
  int w0 = g->wrap[0], w1 = g->wrap[1], w2 = g->wrap[2];
  void *args[] = {&i,  &u,  &sy, &sz, &n0, &n1, &n2, &b0,  &b1, &b2, &lo0,
                  &lo1, &lo2, &h0, &h1, &h2, &w0, &w1, &w2, &dim, &t,  &tp};
  return launch(f->prec == TSR_PREC_SINGLE ? m->cells_f : m->cells, (long long)n0 * n1 * n2, args,
                s, "tsr_expr_cells launch");
}

tsr_err tsr_expr_cuda_eval_face(tsr_expr_cuda *m, const int *expr_per_comp, int ncomp,
                                const tsr_bc_face *face, const tsr_box *box,
                                const tsr_expr_grid *g, double t, const double *tp,
                                double *dvals, cudaStream_t s) {
  TSR_CHECK(m && face && box && g && (ncomp == 0 || expr_per_comp), TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_face: NULL argument");
  TSR_CHECK(ncomp >= 0 && ncomp <= TSR_MAX_COMP, TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_face: %d components (at most %d)", ncomp, TSR_MAX_COMP);
  struct {
    int e[TSR_MAX_COMP];
  } ce;
  for (int q = 0; q < TSR_MAX_COMP; q++) {
    ce.e[q] = q < ncomp ? expr_per_comp[q] : -1;
    TSR_CHECK(ce.e[q] >= -1 && ce.e[q] < m->n, TSR_ERR_INTERNAL,
              "tsr_expr_cuda_eval_face: expression %d of %d for component %d", ce.e[q], m->n,
              q);
  }
  int axis = face->axis, t1 = face->t1, t2 = face->t2, n1 = face->n1, n2 = face->n2;
  TSR_CHECK(axis >= 0 && axis < 3 && t1 >= 0 && t1 < 3 && t2 >= 0 && t2 < 3 && axis != t1 &&
                axis != t2 && t1 != t2,
            TSR_ERR_INTERNAL, "tsr_expr_cuda_eval_face: bad axes %d, %d, %d", axis, t1, t2);
  /* Copied, not computed: the same bits as the host's face coordinate. */
  double fc = axis < g->dim ? (face->side == 0 ? g->lo[axis] : g->hi[axis]) : 0.0;
  int b1 = box->lo[t1] + face->o1, b2 = box->lo[t2] + face->o2, u1 = t1 < g->dim,
      u2 = t2 < g->dim, w1 = g->wrap[t1], w2 = g->wrap[t2];
  double lo1 = g->lo[t1], lo2 = g->lo[t2], h1 = g->h[t1], h2 = g->h[t2];
  void *args[] = {&ce, &ncomp, &axis, &fc, &t1, &t2, &n1, &n2, &b1, &b2, &lo1,
                  &lo2, &h1,   &h2,   &u1, &u2, &w1, &w2, &t,  &tp, &dvals};
  return launch(m->face, (long long)n1 * n2 * ncomp, args, s, "tsr_expr_face launch");
}

tsr_err tsr_expr_cuda_eval_points(tsr_expr_cuda *m, int i, size_t n, const double *dx,
                                  const double *dy, const double *dz, double t, double *dout,
                                  cudaStream_t s) {
  TSR_CHECK(m && (n == 0 || (dx && dy && dout)), TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_points: NULL argument");
  TSR_CHECK(i >= 0 && i < m->n, TSR_ERR_INTERNAL,
            "tsr_expr_cuda_eval_points: expression %d of %d", i, m->n);
  long long nn = (long long)n;
  void *args[] = {&i, &nn, &dx, &dy, &dz, &t, &dout};
  return launch(m->points, nn, args, s, "tsr_expr_points launch");
}

void tsr_expr_cuda_destroy(tsr_expr_cuda **m) {
  if (!m || !*m) return;
  if ((*m)->lib) cudaLibraryUnload((*m)->lib);
  free(*m);
  *m = NULL;
}
