/* Fields: ncomp components over the owned box grown by `ghost` cells on every active side,
 * each component stored contiguously with x fastest (DESIGN.md, Backends). */
#ifndef TSR_FIELD_H
#define TSR_FIELD_H

#include <stddef.h>

#include "decomp/box.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TSR_MEM_HOST = 0, TSR_MEM_DEVICE } tsr_mem;

/* Storage precision of a field's values (case key `precision`). Arithmetic is always double:
 * kernels load values, update each cell in double, and round once when they store, so single
 * precision halves memory and traffic while every cell's update is the same code. */
typedef enum { TSR_PREC_DOUBLE = 0, TSR_PREC_SINGLE = 1 } tsr_prec;

/* Bytes per value of precision p. */
static inline size_t tsr_prec_size(tsr_prec p) { return p == TSR_PREC_SINGLE ? 4 : 8; }

typedef struct {
  int dim;          /* 2 or 3 */
  int ncomp;        /* components */
  int ghost;        /* ghost width on each active axis */
  tsr_box box;      /* owned cells, global indices */
  tsr_box gbox;     /* box grown by ghost on active axes: the allocated extent */
  ptrdiff_t sy, sz; /* strides of y and z in elements (x stride is 1) */
  ptrdiff_t scomp;  /* stride between components in elements */
  tsr_mem mem;      /* where data lives */
  tsr_prec prec;    /* type of the values: double or float */
  void *data;       /* ncomp * scomp values, owned by the field, zero-initialised */
  size_t cap;       /* bytes allocated at data (>= tsr_field_bytes): a field re-shaped onto a
                       smaller box, or reserved for a larger one, keeps its allocation */
} tsr_field;

/* Allocates a zeroed double field over box in host memory. The caller destroys it with
 * tsr_field_destroy. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_field_create(int dim, const tsr_box *box, int ghost, int ncomp, tsr_field **field);

/* As tsr_field_create, in the given memory space (TSR_MEM_DEVICE: cudaMalloc on the current
 * device, zeroed before it returns). Errors: TSR_ERR_MEMORY, TSR_ERR_CUDA, TSR_ERR_UNSUPPORTED (device memory in
 * a build without CUDA). */
tsr_err tsr_field_create_in(int dim, const tsr_box *box, int ghost, int ncomp, tsr_mem mem,
                            tsr_field **field);

/* As tsr_field_create_in, storing values of precision prec. */
tsr_err tsr_field_create_as(int dim, const tsr_box *box, int ghost, int ncomp, tsr_mem mem,
                            tsr_prec prec, tsr_field **field);

/* Re-shapes f over box, keeping its dim, ghost width, components, precision and memory space:
 * its allocation is kept when it holds the new extent (a rebalance moves a box every few
 * hundred steps, and freeing a device allocation waits for the whole device), else replaced
 * by one of exactly the new size. The values are left undefined; tsr_field_zero them. Errors:
 * TSR_ERR_MEMORY, TSR_ERR_CUDA; after an error f may only be destroyed. */
tsr_err tsr_field_reshape(tsr_field *f, const tsr_box *box);

/* Grows f's allocation to hold at least bytes (room for a larger box later); the values are
 * zeroed when it grows. Errors: as tsr_field_reshape. */
tsr_err tsr_field_reserve(tsr_field *f, size_t bytes);

/* Zeroes f's values (ghosts included). Host: at once. Device: cudaMemsetAsync on stream (a
 * cudaStream_t; NULL: the legacy default stream): the caller orders later work after it. */
tsr_err tsr_field_zero(tsr_field *f, void *stream);

/* Frees the field and sets *field to NULL; accepts NULL. */
void tsr_field_destroy(tsr_field **field);

/* Offset of cell (i, j, k) (global indices, inside gbox) of component c in data. */
static inline ptrdiff_t tsr_field_at(const tsr_field *f, int c, int i, int j, int k) {
  return (ptrdiff_t)c * f->scomp + (ptrdiff_t)(k - f->gbox.lo[2]) * f->sz +
         (ptrdiff_t)(j - f->gbox.lo[1]) * f->sy + (ptrdiff_t)(i - f->gbox.lo[0]);
}

/* Copies the cells of region (inside both gboxes) of every component from src to dst (host
 * fields of one precision). */
void tsr_field_copy_box(tsr_field *dst, const tsr_field *src, const tsr_box *region);

/* Value at offset o of a host field, as double. */
static inline double tsr_field_get(const tsr_field *f, ptrdiff_t o) {
  return f->prec == TSR_PREC_SINGLE ? (double)((const float *)f->data)[o]
                                    : ((const double *)f->data)[o];
}

/* Stores v at offset o of a host field, rounded to its precision. */
static inline void tsr_field_set(tsr_field *f, ptrdiff_t o, double v) {
  if (f->prec == TSR_PREC_SINGLE) ((float *)f->data)[o] = (float)v;
  else ((double *)f->data)[o] = v;
}

/* Bytes of the field's allocation (ghosts included). */
static inline size_t tsr_field_bytes(const tsr_field *f) {
  return (size_t)f->ncomp * (size_t)f->scomp * tsr_prec_size(f->prec);
}

#ifdef __cplusplus
}
#endif

#endif
