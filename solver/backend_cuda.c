/* The CUDA backend: fields in device memory, stages and the physical boundary as kernels on a
 * compute stream, the halo exchange with NCCL on a high-priority communication stream,
 * ordered by events (decomp/halo.h), monitors reduced on the device.
 *
 * Every expression of the case (initial values, boundary values, sources, exact solutions) is
 * compiled once with NVRTC into one library (kernels/expr_cuda.h) and evaluated on the device:
 * no host round trip per step. The device's transcendental functions agree with glibc's to a
 * few ulp, not bit for bit: a case whose expressions are polynomials gives the host's bits. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boundary.h"
#include "kernels/cuda_util.h"
#include "kernels/expr_cuda.h"
#include "kernels/steps.h"
#include "kernels/work.h"
#include "io/case_expr.h"
#include "solver/backend.h"
#include "solver/device.h"
#include "solver/gpu_wait.h"
#include "solver/run_internal.h"

typedef struct {
  int device;
  cudaStream_t compute, comm;
  cudaEvent_t joined; /* the compute stream waits here for the shell stages (join) */
  ncclComm_t nccl;
  int have_nccl;
  double *face[TSR_NFACE]; /* the boundary values on the device, per face of this rank */
  size_t face_cap[TSR_NFACE]; /* bytes of each (kept across migrations, grow-only) */
  int face_valid[TSR_NFACE];
  double face_at[TSR_NFACE];
  tsr_expr_cuda *lib;      /* every expression of the run, compiled */
  int nexpr;
  tsr_expr *expr[3 * TSR_MAX_COMP + TSR_NFACE * TSR_MAX_COMP]; /* index in lib -> expression */
  tsr_expr_grid grid;
  /* Every face of the global box, so that a rank whose box comes to touch another face after
   * a migration has its expressions compiled: face_expr[f][q] is the index in lib of face f's
   * component q (-1: the value is 0). */
  tsr_bc *bc_all;
  int face_expr[TSR_NFACE][TSR_MAX_COMP];
  /* The rebalancer's timing: pairs of events, marked on the compute or the comm stream */
  cudaEvent_t *ev;
  int nev, cap_ev;
  int32_t *dwork;          /* device: the work count of each owned cell */
  int64_t dwork_cells;
  tsr_migrate_bufs *mig;   /* the migrations' buffers, kept from one to the next */
} cuda_state;

static cuda_state *st(tsr_run_ctx *x) { return (cuda_state *)x->be_state; }

static tsr_err setup(tsr_run_ctx *x) {
  cuda_state *s;
  TSR_ALLOC(s, 1, "CUDA backend state");
  x->be_state = s;
  TSR_CALL(tsr_device_select(x->device_comm != MPI_COMM_NULL ? x->device_comm : x->comm,
                             &s->device));
  int lo, hi;
  TSR_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  TSR_CUDA(cudaStreamCreateWithPriority(&s->compute, cudaStreamNonBlocking, lo));
  /* the exchange is on the critical path: its pack/unpack kernels go first */
  TSR_CUDA(cudaStreamCreateWithPriority(&s->comm, cudaStreamNonBlocking, hi));
  TSR_CUDA(cudaEventCreateWithFlags(&s->joined, cudaEventDisableTiming));
  TSR_CALL(tsr_nccl_create(x->comm, &s->nccl));
  s->have_nccl = 1;
  tsr_gpu_watch_nccl(s->nccl);
  return tsr_halo_create_nccl(&x->plan, s->nccl, x->c->ncomp, s->comm, &x->halo);
}

static void teardown(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  tsr_halo_destroy(&x->halo);
  if (!s) return;
  if (s->compute) cudaStreamSynchronize(s->compute);
  for (int f = 0; f < TSR_NFACE; ++f) cudaFree(s->face[f]);
  for (int i = 0; i < s->cap_ev; ++i) cudaEventDestroy(s->ev[i]);
  free(s->ev);
  cudaFree(s->dwork);
  tsr_migrate_bufs_free(&s->mig);
  tsr_bc_destroy(&s->bc_all);
  tsr_expr_cuda_destroy(&s->lib);
  tsr_gpu_watch_nccl(NULL);
  if (s->have_nccl) tsr_nccl_destroy(&s->nccl);
  if (s->compute) cudaStreamDestroy(s->compute);
  if (s->comm) cudaStreamDestroy(s->comm);
  if (s->joined) cudaEventDestroy(s->joined);
  free(s);
  x->be_state = NULL;
}

static void add_expr(cuda_state *s, tsr_expr *e) {
  if (!e) return;
  for (int i = 0; i < s->nexpr; ++i)
    if (s->expr[i] == e) return;
  s->expr[s->nexpr++] = e;
}

static int expr_index(const cuda_state *s, const tsr_expr *e) {
  for (int i = 0; i < s->nexpr; ++i)
    if (s->expr[i] == e) return i;
  return -1;
}

static tsr_err prepare(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  const tsr_case *c = x->c;
  for (int q = 0; q < c->ncomp; ++q) {
    add_expr(s, x->init_expr[q]);
    add_expr(s, x->src_expr[q]);
    add_expr(s, x->exact_expr[q]);
  }
  TSR_CALL(tsr_bc_create(c, &x->layout.global, NULL, x->radius, &s->bc_all));
  for (int i = 0; i < tsr_bc_nfaces(s->bc_all); ++i)
    for (int q = 0; q < c->ncomp; ++q) add_expr(s, tsr_bc_expr(s->bc_all, i, q));
  for (int f = 0; f < TSR_NFACE; ++f)
    for (int q = 0; q < TSR_MAX_COMP; ++q) s->face_expr[f][q] = -1;
  for (int i = 0; i < tsr_bc_nfaces(s->bc_all); ++i) {
    const tsr_bc_face *fc = tsr_bc_face_info(s->bc_all, i);
    for (int q = 0; q < c->ncomp; ++q)
      s->face_expr[2 * fc->axis + fc->side][q] = expr_index(s, tsr_bc_expr(s->bc_all, i, q));
  }
  s->grid = tsr_expr_grid_make(c->dim, c->lo, c->hi, c->cells, c->periodic);
  tsr_expr_env env = tsr_case_env(c);
  return tsr_expr_cuda_build(s->nexpr, (const tsr_expr *const *)s->expr, &env, &s->lib);
}

/* In a step being captured for a CUDA graph, the device address of the stage's time
 * (solver/graph.h); NULL otherwise, when the kernels take the time by value. */
static const double *stage_time(const tsr_run_ctx *x) {
  return x->tdev ? x->tdev + x->stage : NULL;
}

static tsr_err eval(tsr_run_ctx *x, tsr_expr *e, tsr_field *f, int comp, double t,
                    const tsr_box *region) {
  cuda_state *s = st(x);
  int i = expr_index(s, e);
  TSR_CHECK(i >= 0, TSR_ERR_INTERNAL, "an expression was not compiled for the device");
  return tsr_expr_cuda_eval_cells(s->lib, i, &s->grid, t, stage_time(x), f, comp, region,
                                  s->compute);
}

/* The faces' device values at t for part, evaluated where they are not yet valid (or depend on
 * t and were evaluated at another time). */
static tsr_err faces_at(tsr_run_ctx *x, double t, int part, const tsr_bc_face **faces,
                        const double **vals, int *n) {
  cuda_state *s = st(x);
  const int nface = tsr_bc_nfaces(x->bc);
  TSR_CHECK(nface <= TSR_BC_MAX_FACES, TSR_ERR_INTERNAL, "%d boundary faces", nface);
  for (int i = 0; i < nface; ++i) {
    const tsr_bc_face *fc = tsr_bc_face_info(x->bc, i);
    size_t bytes = sizeof(double) * (size_t)x->c->ncomp * fc->n1 * fc->n2;
    if (s->face_cap[i] < bytes) { /* first use, or a migration grew the face */
      if (s->face[i]) cudaFree(s->face[i]);
      s->face[i] = NULL;
      s->face_cap[i] = 0;
      TSR_CUDA(cudaMalloc((void **)&s->face[i], bytes));
      s->face_cap[i] = bytes;
    }
    TSR_CHECK(part != TSR_BC_BEYOND || s->face_valid[i], TSR_ERR_INTERNAL,
              "the boundary's far part was filled before its values were evaluated");
    if (part != TSR_BC_BEYOND &&
        (!s->face_valid[i] || (tsr_bc_face_timed(x->bc, i) && s->face_at[i] != t))) {
      int idx[TSR_MAX_COMP];
      for (int q = 0; q < x->c->ncomp; ++q) idx[q] = s->face_expr[2 * fc->axis + fc->side][q];
      TSR_CALL(tsr_expr_cuda_eval_face(s->lib, idx, x->c->ncomp, fc, &x->box, &s->grid, t,
                                       stage_time(x), s->face[i], s->compute));
      s->face_valid[i] = 1;
      s->face_at[i] = t;
    }
    faces[i] = fc;
    vals[i] = s->face[i];
  }
  *n = nface;
  return TSR_OK;
}

static tsr_err boundary(tsr_run_ctx *x, tsr_field *f, double t, int part) {
  cuda_state *s = st(x);
  const tsr_bc_face *faces[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  int nface;
  TSR_CALL(faces_at(x, t, part, faces, vals, &nface));
  /* the far part follows the unpack on the communication stream, as the shell stages do */
  return tsr_bc_apply_cuda(nface, faces, vals, f, part,
                           part == TSR_BC_BEYOND ? s->comm : s->compute);
}

tsr_err tsr_backend_cuda_faces(tsr_run_ctx *x, double t, const tsr_bc_face **faces,
                               const double **vals, int *n) {
  return faces_at(x, t, TSR_BC_WHOLE, faces, vals, n);
}

cudaStream_t tsr_backend_cuda_stream(tsr_run_ctx *x) { return st(x)->compute; }

void tsr_backend_cuda_forget_timed(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i)
    if (tsr_bc_face_timed(x->bc, i)) s->face_valid[i] = 0;
}

static tsr_err halo_new(tsr_run_ctx *x, const tsr_halo_plan *plan, tsr_halo **h) {
  cuda_state *s = st(x);
  return tsr_halo_create_nccl(plan, s->nccl, x->c->ncomp, s->comm, h);
}

static tsr_err halo_begin(tsr_run_ctx *x, tsr_field *f) {
  return tsr_halo_begin_after(x->halo, f, st(x)->compute);
}

/* The unpack goes on the communication stream and the compute stream does not wait for it
 * here: the shell stages follow it there (stage_shell), and join() ends the split. */
static tsr_err halo_end(tsr_run_ctx *x, tsr_field *f) {
  return tsr_halo_end_before(x->halo, f, st(x)->comm);
}

static tsr_err join(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  TSR_CUDA(cudaEventRecord(s->joined, s->comm));
  TSR_CUDA(cudaStreamWaitEvent(s->compute, s->joined, 0));
  return TSR_OK;
}

static tsr_err stage(tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                     const tsr_field *in, const tsr_field *base, tsr_field *acc,
                     const tsr_field *src, tsr_field *out) {
  return tsr_stage_cuda(d, region, in, base, acc, src, out, st(x)->compute);
}

/* Time tiles: the device face values of the boundary call before it. */
static tsr_err steps(tsr_run_ctx *x, const tsr_stage_desc *d, int m, const tsr_box *region,
                     const tsr_field *in, const tsr_field *src, tsr_field *out) {
  cuda_state *s = st(x);
  tsr_steps_bc bc = {0};
  bc.nface = tsr_bc_nfaces(x->bc);
  TSR_CHECK(bc.nface <= TSR_BC_MAX_FACES, TSR_ERR_INTERNAL, "%d boundary faces", bc.nface);
  for (int i = 0; i < bc.nface; ++i) {
    TSR_CHECK(s->face_valid[i], TSR_ERR_INTERNAL,
              "a time tile ran before the boundary values were evaluated");
    bc.face[i] = *tsr_bc_face_info(x->bc, i);
    bc.val[i] = s->face[i];
  }
  return tsr_steps_cuda(d, m, x->radius, region, &bc, in, src, out, s->compute);
}

static int steps_max(tsr_run_ctx *x) {
  return tsr_steps_cuda_max(x->c->dim, x->slot[TSR_SLOT_U]->prec, (int)x->c->model,
                            x->scheme.nstage);
}

/* Shell slabs read the ghosts the unpack wrote and the owned cells the interior's stage only
 * reads, and write cells it does not: on the communication stream they run beside it. */
static tsr_err stage_shell(tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                           const tsr_field *in, const tsr_field *base, tsr_field *acc,
                           const tsr_field *src, tsr_field *out) {
  return tsr_stage_cuda(d, region, in, base, acc, src, out, st(x)->comm);
}

/* The owned box of component comp of f as a 3D copy region of the device allocation; host
 * holds the values in the field's precision, x fastest. */
static struct cudaMemcpy3DParms owned_copy(const tsr_field *f, int comp, void *host, int to_dev) {
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  const tsr_box *b = &f->box;
  const size_t es = tsr_prec_size(f->prec);
  size_t nx = (size_t)tsr_box_len(b, 0), ny = (size_t)tsr_box_len(b, 1);
  struct cudaPitchedPtr h = {host, nx * es, nx, ny};
  struct cudaPitchedPtr d = {(char *)f->data + (ptrdiff_t)comp * f->scomp * (ptrdiff_t)es,
                             (size_t)f->sy * es, (size_t)f->sy,
                             (size_t)tsr_box_len(&f->gbox, 1)};
  struct cudaPos pos = {(size_t)(b->lo[0] - f->gbox.lo[0]) * es,
                        (size_t)(b->lo[1] - f->gbox.lo[1]), (size_t)(b->lo[2] - f->gbox.lo[2])};
  if (to_dev) {
    p.srcPtr = h;
    p.dstPtr = d;
    p.dstPos = pos;
    p.kind = cudaMemcpyHostToDevice;
  } else {
    p.srcPtr = d;
    p.srcPos = pos;
    p.dstPtr = h;
    p.kind = cudaMemcpyDeviceToHost;
  }
  p.extent.width = nx * es;
  p.extent.height = ny;
  p.extent.depth = (size_t)tsr_box_len(b, 2);
  return p;
}

/* Single fields travel as float and are converted on the host (rounded to nearest, as the
 * host backend does), so both backends hold the same bits. */
static tsr_err upload(tsr_run_ctx *x, tsr_field *f, int comp, const double *owned) {
  size_t n = (size_t)tsr_box_cells(&f->box);
  float *tmp = NULL;
  if (f->prec == TSR_PREC_SINGLE) {
    TSR_ALLOC(tmp, n, "single-precision upload");
    for (size_t i = 0; i < n; ++i) tmp[i] = (float)owned[i];
  }
  struct cudaMemcpy3DParms p = owned_copy(f, comp, tmp ? (void *)tmp : (void *)owned, 1);
  cudaError_t e = cudaMemcpy3DAsync(&p, st(x)->compute);
  /* the host array is reused for the next expression right after this returns */
  if (e == cudaSuccess) e = cudaStreamSynchronize(st(x)->compute);
  free(tmp);
  TSR_CUDA(e);
  return TSR_OK;
}

static tsr_err download(tsr_run_ctx *x, const tsr_field *f, int comp, double *owned) {
  size_t n = (size_t)tsr_box_cells(&f->box);
  float *tmp = NULL;
  if (f->prec == TSR_PREC_SINGLE) TSR_ALLOC(tmp, n, "single-precision download");
  struct cudaMemcpy3DParms p = owned_copy(f, comp, tmp ? (void *)tmp : (void *)owned, 0);
  cudaError_t e = cudaMemcpy3DAsync(&p, st(x)->compute);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st(x)->compute);
  if (e == cudaSuccess && tmp)
    for (size_t i = 0; i < n; ++i) owned[i] = tmp[i];
  free(tmp);
  TSR_CUDA(e);
  return TSR_OK;
}

static tsr_err norms(tsr_run_ctx *x, const tsr_field *u, const tsr_field *exact, int comp,
                     double *out) {
  /* the step's kernels wait here, where a lost peer shows, not in the reduction's own sync */
  TSR_CALL(tsr_gpu_wait(st(x)->compute, st(x)->nccl, "the monitor's wait for the step"));
  return tsr_reduce_cuda(u, exact, comp, out, st(x)->compute);
}

static tsr_err sync(tsr_run_ctx *x) {
  TSR_CALL(tsr_gpu_wait(st(x)->compute, st(x)->nccl, "the wait for the compute stream"));
  return tsr_gpu_wait(st(x)->comm, st(x)->nccl, "the wait for the communication stream");
}

/* Checkpoint staging: pinned host memory, one device-to-host copy on a stream of its own that
 * waits for the compute stream (which orders the exchange before it, decomp/halo.h). */
typedef struct {
  cudaStream_t stream;
  cudaEvent_t ready;
  void *host;
} cuda_stage;

static tsr_err stage_create(tsr_run_ctx *x, size_t bytes, void **stage, void **host) {
  cuda_stage *g;
  *stage = NULL;
  TSR_ALLOC(g, 1, "checkpoint staging");
  *stage = g;
  TSR_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  TSR_CUDA(cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming));
  TSR_CUDA(cudaMallocHost(&g->host, bytes ? bytes : 1));
  *host = g->host;
  return TSR_OK;
}

static tsr_err stage_copy(tsr_run_ctx *x, void *stage, const tsr_field *f, size_t bytes) {
  cuda_stage *g = stage;
  TSR_CUDA(cudaEventRecord(g->ready, st(x)->compute));
  TSR_CUDA(cudaStreamWaitEvent(g->stream, g->ready, 0));
  TSR_CUDA(cudaMemcpyAsync(g->host, (const void *)f->data, bytes, cudaMemcpyDeviceToHost,
                           g->stream));
  TSR_CUDA(cudaStreamSynchronize(g->stream));
  return TSR_OK;
}

static void stage_destroy(tsr_run_ctx *x, void **stage) {
  cuda_stage *g = *stage;
  if (!g) return;
  if (g->stream) cudaStreamSynchronize(g->stream);
  if (g->host) cudaFreeHost(g->host);
  if (g->ready) cudaEventDestroy(g->ready);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
  *stage = NULL;
}

/* The rebalancer's timing: events in pairs, the kernels between them being this rank's
 * compute (not its waits: the compute stream waits for the exchange before the first mark of
 * a pair is reached, and the shell's pair brackets only the shell stages after the unpack). */
static tsr_err time_mark(tsr_run_ctx *x, int shell, int end) {
  cuda_state *s = st(x);
  if (s->nev == s->cap_ev) {
    int cap = s->cap_ev ? 2 * s->cap_ev : 64;
    cudaEvent_t *ev = realloc(s->ev, (size_t)cap * sizeof *ev);
    TSR_CHECK(ev, TSR_ERR_MEMORY, "out of memory for %d timing events", cap);
    s->ev = ev;
    for (; s->cap_ev < cap; ++s->cap_ev) TSR_CUDA(cudaEventCreate(&s->ev[s->cap_ev]));
  }
  (void)end; /* pairs alternate: an even index starts one */
  TSR_CUDA(cudaEventRecord(s->ev[s->nev++], shell ? s->comm : s->compute));
  return TSR_OK;
}

static tsr_err time_read(tsr_run_ctx *x, double *seconds) {
  cuda_state *s = st(x);
  double sum = 0.0;
  for (int i = 0; i + 1 < s->nev; i += 2) {
    float ms = 0.0f;
    TSR_CUDA(cudaEventSynchronize(s->ev[i + 1]));
    TSR_CUDA(cudaEventElapsedTime(&ms, s->ev[i], s->ev[i + 1]));
    sum += 1e-3 * ms;
  }
  s->nev = 0;
  *seconds = sum;
  return TSR_OK;
}

static tsr_err work(tsr_run_ctx *x, const tsr_field *u, uint32_t *w) {
  cuda_state *s = st(x);
  int64_t n = tsr_box_cells(&x->box);
  if (s->dwork_cells < n) {
    cudaFree(s->dwork);
    s->dwork = NULL;
    s->dwork_cells = 0;
    TSR_CUDA(cudaMalloc((void **)&s->dwork, (size_t)n * sizeof *s->dwork));
    s->dwork_cells = n;
  }
  TSR_CALL(tsr_work_cuda(&x->desc, &x->box, u, s->dwork, s->compute));
  TSR_CUDA(cudaMemcpyAsync(w, s->dwork, (size_t)n * sizeof *s->dwork, cudaMemcpyDeviceToHost,
                           s->compute));
  return tsr_gpu_wait(s->compute, s->nccl, "the wait for the work counts");
}

/* The kept cells are copied on the communication stream (idle between steps) while the moved
 * ones travel on the compute stream; the buffers stay for the next migration. */
static tsr_err migrate(tsr_run_ctx *x, const tsr_migrate_plan *plan, const tsr_field *src,
                       tsr_field *dst) {
  cuda_state *s = st(x);
  return tsr_migrate_field_nccl_into(plan, s->nccl, s->compute, s->comm, src, dst, &s->mig);
}

/* On the communication stream: beside a migration on the compute stream; relayout and every
 * step's exchange come after it there. */
static tsr_err zero(tsr_run_ctx *x, tsr_field *f) { return tsr_field_zero(f, st(x)->comm); }

static tsr_err free_bytes(tsr_run_ctx *x, size_t *bytes) {
  size_t total = 0;
  (void)x;
  TSR_CUDA(cudaMemGetInfo(bytes, &total));
  return TSR_OK;
}

/* A new box: the exchange's buffers and the per-face boundary values follow it; buffers that
 * hold the new sizes are kept (a cudaFree waits for the whole device). */
static tsr_err relayout(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  TSR_CALL(sync(x));
  for (int f = 0; f < TSR_NFACE; ++f) s->face_valid[f] = 0;
  return tsr_halo_refit_nccl(x->halo);
}

const tsr_backend_ops tsr_backend_cuda = {
    .name = "cuda", .mem = TSR_MEM_DEVICE, .setup = setup, .teardown = teardown,
    .prepare = prepare, .eval = eval, .boundary = boundary, .halo_begin = halo_begin,
    .halo_new = halo_new,
    .halo_end = halo_end, .stage = stage, .stage_shell = stage_shell, .join = join,
    .steps = steps, .steps_max = steps_max,
    .upload = upload, .download = download, .norms = norms, .sync = sync,
    .stage_create = stage_create, .stage_copy = stage_copy, .stage_destroy = stage_destroy,
    .time_mark = time_mark, .time_read = time_read, .work = work, .migrate = migrate,
    .zero = zero, .free_bytes = free_bytes, .relayout = relayout};
