/* The CUDA backend: fields in device memory, stages and the physical boundary as kernels on a
 * compute stream, the halo exchange with NCCL on a high-priority communication stream,
 * ordered by events (decomp/halo.h), monitors reduced on the device.
 *
 * Expression values (initial, time-dependent boundaries and sources, exact solutions) are
 * evaluated on the host with muparser and copied over when they change; compiling them for the
 * device with NVRTC removes that copy (next step of the GPU issue). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boundary.h"
#include "kernels/cuda_util.h"
#include "solver/backend.h"
#include "solver/device.h"
#include "solver/run_internal.h"

typedef struct {
  int device;
  cudaStream_t compute, comm;
  ncclComm_t nccl;
  int have_nccl;
  double *face[TSR_NFACE]; /* device copies of the boundary values, per face of this rank */
} cuda_state;

static cuda_state *st(tsr_run_ctx *x) { return (cuda_state *)x->be_state; }

static tsr_err setup(tsr_run_ctx *x) {
  cuda_state *s;
  TSR_ALLOC(s, 1, "CUDA backend state");
  x->be_state = s;
  TSR_CALL(tsr_device_select(x->comm, &s->device));
  int lo, hi;
  TSR_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  TSR_CUDA(cudaStreamCreateWithPriority(&s->compute, cudaStreamNonBlocking, lo));
  /* the exchange is on the critical path: its pack/unpack kernels go first */
  TSR_CUDA(cudaStreamCreateWithPriority(&s->comm, cudaStreamNonBlocking, hi));
  TSR_CALL(tsr_nccl_create(x->comm, &s->nccl));
  s->have_nccl = 1;
  return tsr_halo_create_nccl(&x->plan, s->nccl, x->c->ncomp, s->comm, &x->halo);
}

static void teardown(tsr_run_ctx *x) {
  cuda_state *s = st(x);
  tsr_halo_destroy(&x->halo);
  if (!s) return;
  if (s->compute) cudaStreamSynchronize(s->compute);
  for (int f = 0; f < TSR_NFACE; ++f) cudaFree(s->face[f]);
  if (s->have_nccl) tsr_nccl_destroy(&s->nccl);
  if (s->compute) cudaStreamDestroy(s->compute);
  if (s->comm) cudaStreamDestroy(s->comm);
  free(s);
  x->be_state = NULL;
}

static tsr_err boundary(tsr_run_ctx *x, tsr_field *f, double t) {
  cuda_state *s = st(x);
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i) {
    const tsr_bc_face *fc = tsr_bc_face_info(x->bc, i);
    size_t bytes = sizeof(double) * (size_t)x->c->ncomp * fc->n1 * fc->n2;
    int fresh;
    const double *v = tsr_bc_values(x->bc, i, t, &fresh);
    if (!s->face[i]) {
      TSR_CUDA(cudaMalloc((void **)&s->face[i], bytes));
      fresh = 1;
    }
    /* pageable source: the copy is staged before the call returns, so v may change after */
    if (fresh)
      TSR_CUDA(cudaMemcpyAsync(s->face[i], v, bytes, cudaMemcpyHostToDevice, s->compute));
    TSR_CALL(tsr_bc_apply_cuda(fc, s->face[i], f, s->compute));
  }
  return TSR_OK;
}

static tsr_err halo_begin(tsr_run_ctx *x, tsr_field *f) {
  return tsr_halo_begin_after(x->halo, f, st(x)->compute);
}

static tsr_err halo_end(tsr_run_ctx *x, tsr_field *f) {
  return tsr_halo_end_before(x->halo, f, st(x)->compute);
}

static tsr_err stage(tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                     const tsr_field *in, const tsr_field *base, tsr_field *acc,
                     const tsr_field *src, tsr_field *out) {
  return tsr_stage_cuda(d, region, in, base, acc, src, out, st(x)->compute);
}

/* The owned box of component comp of f as a 3D copy region of the device allocation. */
static struct cudaMemcpy3DParms owned_copy(const tsr_field *f, int comp, double *host, int to_dev) {
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  const tsr_box *b = &f->box;
  size_t nx = (size_t)tsr_box_len(b, 0), ny = (size_t)tsr_box_len(b, 1);
  struct cudaPitchedPtr h = {host, nx * sizeof(double), nx, ny};
  struct cudaPitchedPtr d = {f->data + (ptrdiff_t)comp * f->scomp, (size_t)f->sy * sizeof(double),
                             (size_t)f->sy, (size_t)tsr_box_len(&f->gbox, 1)};
  struct cudaPos pos = {(size_t)(b->lo[0] - f->gbox.lo[0]) * sizeof(double),
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
  p.extent.width = nx * sizeof(double);
  p.extent.height = ny;
  p.extent.depth = (size_t)tsr_box_len(b, 2);
  return p;
}

static tsr_err upload(tsr_run_ctx *x, tsr_field *f, int comp, const double *owned) {
  struct cudaMemcpy3DParms p = owned_copy(f, comp, (double *)owned, 1);
  TSR_CUDA(cudaMemcpy3DAsync(&p, st(x)->compute));
  /* the host array is reused for the next expression right after this returns */
  TSR_CUDA(cudaStreamSynchronize(st(x)->compute));
  return TSR_OK;
}

static tsr_err download(tsr_run_ctx *x, const tsr_field *f, int comp, double *owned) {
  struct cudaMemcpy3DParms p = owned_copy(f, comp, owned, 0);
  TSR_CUDA(cudaMemcpy3DAsync(&p, st(x)->compute));
  TSR_CUDA(cudaStreamSynchronize(st(x)->compute));
  return TSR_OK;
}

static tsr_err norms(tsr_run_ctx *x, const tsr_field *u, const tsr_field *exact, int comp,
                     double *out) {
  return tsr_reduce_cuda(u, exact, comp, out, st(x)->compute);
}

static tsr_err sync(tsr_run_ctx *x) {
  TSR_CUDA(cudaStreamSynchronize(st(x)->compute));
  TSR_CUDA(cudaStreamSynchronize(st(x)->comm));
  return TSR_OK;
}

const tsr_backend_ops tsr_backend_cuda = {"cuda",     TSR_MEM_DEVICE, setup,    teardown,
                                          boundary,   halo_begin,     halo_end, stage,
                                          upload,     download,       norms,    sync};
