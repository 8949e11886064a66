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

typedef struct {
  int dim;          /* 2 or 3 */
  int ncomp;        /* components */
  int ghost;        /* ghost width on each active axis */
  tsr_box box;      /* owned cells, global indices */
  tsr_box gbox;     /* box grown by ghost on active axes: the allocated extent */
  ptrdiff_t sy, sz; /* strides of y and z in elements (x stride is 1) */
  ptrdiff_t scomp;  /* stride between components in elements */
  tsr_mem mem;      /* where data lives */
  double *data;     /* ncomp * scomp elements, owned by the field, zero-initialised */
} tsr_field;

/* Allocates a zeroed field over box in host memory. The caller destroys it with
 * tsr_field_destroy. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_field_create(int dim, const tsr_box *box, int ghost, int ncomp, tsr_field **field);

/* As tsr_field_create, in the given memory space (TSR_MEM_DEVICE: cudaMalloc on the current
 * device, zeroed). Errors: TSR_ERR_MEMORY, TSR_ERR_CUDA, TSR_ERR_UNSUPPORTED (device memory in
 * a build without CUDA). */
tsr_err tsr_field_create_in(int dim, const tsr_box *box, int ghost, int ncomp, tsr_mem mem,
                            tsr_field **field);

/* Frees the field and sets *field to NULL; accepts NULL. */
void tsr_field_destroy(tsr_field **field);

/* Offset of cell (i, j, k) (global indices, inside gbox) of component c in data. */
static inline ptrdiff_t tsr_field_at(const tsr_field *f, int c, int i, int j, int k) {
  return (ptrdiff_t)c * f->scomp + (ptrdiff_t)(k - f->gbox.lo[2]) * f->sz +
         (ptrdiff_t)(j - f->gbox.lo[1]) * f->sy + (ptrdiff_t)(i - f->gbox.lo[0]);
}

/* Copies the cells of region (inside both gboxes) of every component from src to dst (host
 * fields). */
void tsr_field_copy_box(tsr_field *dst, const tsr_field *src, const tsr_box *region);

#ifdef __cplusplus
}
#endif

#endif
