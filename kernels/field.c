#include "kernels/field.h"

#include <stdlib.h>
#include <string.h>

#ifdef TSR_HAVE_CUDA
tsr_err tsr_field_device_alloc(tsr_field *f, size_t bytes); /* field_cuda.c */
void tsr_field_device_free(tsr_field *f);
tsr_err tsr_field_device_zero(tsr_field *f, void *stream);
#endif

/* The shape of a field over box, without its data. */
static void shape(tsr_field *f, int dim, const tsr_box *box, int ghost, int ncomp) {
  f->dim = dim;
  f->ncomp = ncomp;
  f->ghost = ghost;
  f->box = *box;
  f->gbox = tsr_box_grow(box, dim, ghost);
  f->sy = tsr_box_len(&f->gbox, 0);
  f->sz = f->sy * tsr_box_len(&f->gbox, 1);
  f->scomp = f->sz * tsr_box_len(&f->gbox, 2);
}

tsr_err tsr_field_create_in(int dim, const tsr_box *box, int ghost, int ncomp, tsr_mem mem,
                            tsr_field **out) {
  return tsr_field_create_as(dim, box, ghost, ncomp, mem, TSR_PREC_DOUBLE, out);
}

static tsr_err create_host(int dim, const tsr_box *box, int ghost, int ncomp, tsr_prec prec,
                           tsr_field **out);

tsr_err tsr_field_create_as(int dim, const tsr_box *box, int ghost, int ncomp, tsr_mem mem,
                            tsr_prec prec, tsr_field **out) {
  if (mem == TSR_MEM_HOST) return create_host(dim, box, ghost, ncomp, prec, out);
  *out = NULL;
#ifdef TSR_HAVE_CUDA
  TSR_CHECK(dim == 2 || dim == 3, TSR_ERR_INTERNAL, "field dimension %d is not 2 or 3", dim);
  tsr_field *f;
  TSR_ALLOC(f, 1, "a field");
  shape(f, dim, box, ghost, ncomp);
  f->mem = TSR_MEM_DEVICE;
  f->prec = prec;
  tsr_err err = tsr_field_device_alloc(f, tsr_field_bytes(f));
  if (err) {
    free(f);
    return err;
  }
  *out = f;
  return TSR_OK;
#else
  return tsr_err_set(TSR_ERR_UNSUPPORTED, __FILE__, __LINE__,
                     "device fields need a build with CUDA (TESSERA_ENABLE_CUDA=ON)");
#endif
}

tsr_err tsr_field_create(int dim, const tsr_box *box, int ghost, int ncomp, tsr_field **out) {
  return create_host(dim, box, ghost, ncomp, TSR_PREC_DOUBLE, out);
}

static tsr_err create_host(int dim, const tsr_box *box, int ghost, int ncomp, tsr_prec prec,
                           tsr_field **out) {
  *out = NULL;
  TSR_CHECK(dim == 2 || dim == 3, TSR_ERR_INTERNAL, "field dimension %d is not 2 or 3", dim);
  TSR_CHECK(ncomp >= 1 && ghost >= 0 && !tsr_box_empty(box), TSR_ERR_INTERNAL,
            "bad field shape (ncomp %d, ghost %d)", ncomp, ghost);
  tsr_field *f;
  TSR_ALLOC(f, 1, "a field");
  shape(f, dim, box, ghost, ncomp);
  f->mem = TSR_MEM_HOST;
  f->prec = prec;
  /* aligned so that rows vectorise; calloc'ed zeros make unused ghost corners deterministic */
  size_t bytes = tsr_field_bytes(f);
  size_t rounded = (bytes + 63) / 64 * 64;
  f->data = aligned_alloc(64, rounded);
  if (!f->data) {
    free(f);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory allocating a field of %zu bytes", bytes);
  }
  memset(f->data, 0, rounded);
  f->cap = rounded;
  *out = f;
  return TSR_OK;
}

/* Replaces f's allocation by one of bytes (f's shape already set), zeroed. */
static tsr_err realloc_data(tsr_field *f, size_t bytes) {
#ifdef TSR_HAVE_CUDA
  if (f->mem == TSR_MEM_DEVICE) {
    tsr_field g = *f;
    tsr_field_device_free(&g); /* first: the old and new need not both fit */
    f->data = NULL;
    f->cap = 0;
    return tsr_field_device_alloc(f, bytes);
  }
#endif
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, rounded);
  TSR_CHECK(p, TSR_ERR_MEMORY, "out of memory allocating a field of %zu bytes", bytes);
  memset(p, 0, rounded);
  free(f->data);
  f->data = p;
  f->cap = rounded;
  return TSR_OK;
}

tsr_err tsr_field_reshape(tsr_field *f, const tsr_box *box) {
  TSR_CHECK(!tsr_box_empty(box), TSR_ERR_INTERNAL, "re-shaping a field onto an empty box");
  shape(f, f->dim, box, f->ghost, f->ncomp);
  size_t bytes = tsr_field_bytes(f);
  return bytes <= f->cap ? TSR_OK : realloc_data(f, bytes);
}

tsr_err tsr_field_reserve(tsr_field *f, size_t bytes) {
  if (bytes <= f->cap) return TSR_OK;
  return realloc_data(f, bytes);
}

tsr_err tsr_field_zero(tsr_field *f, void *stream) {
#ifdef TSR_HAVE_CUDA
  if (f->mem == TSR_MEM_DEVICE) return tsr_field_device_zero(f, stream);
#endif
  (void)stream;
  memset(f->data, 0, tsr_field_bytes(f));
  return TSR_OK;
}

void tsr_field_destroy(tsr_field **f) {
  if (!f || !*f) return;
#ifdef TSR_HAVE_CUDA
  if ((*f)->mem == TSR_MEM_DEVICE) tsr_field_device_free(*f);
  else
#endif
    free((*f)->data);
  free(*f);
  *f = NULL;
}

void tsr_field_copy_box(tsr_field *dst, const tsr_field *src, const tsr_box *r) {
  int nx = tsr_box_len(r, 0);
  if (nx <= 0 || tsr_box_empty(r)) return;
  const size_t es = tsr_prec_size(dst->prec);
  for (int c = 0; c < dst->ncomp; ++c)
    for (int k = r->lo[2]; k < r->hi[2]; ++k)
      for (int j = r->lo[1]; j < r->hi[1]; ++j)
        memcpy((char *)dst->data + es * tsr_field_at(dst, c, r->lo[0], j, k),
               (const char *)src->data + es * tsr_field_at(src, c, r->lo[0], j, k),
               (size_t)nx * es);
}
