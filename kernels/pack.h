/* Pack and unpack kernels of the device halo exchange (kernels/pack.cu), callable from C.
 *
 * A peer's segments (boxes of cells) move between a device field and one contiguous device
 * buffer in the order the host backend uses (decomp/halo.h): for each segment, for each
 * component, cells x-fastest. One launch moves all segments of one peer: blockIdx.y picks
 * the segment, threads run along the buffer, so consecutive threads touch consecutive x
 * cells in both the field and the buffer (coalesced). Only built with TSR_HAVE_CUDA. */
#ifndef TSR_PACK_H
#define TSR_PACK_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "io/error.h"
#include "kernels/field.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One segment, in global cell indices, with its place in the peer's buffer. */
typedef struct {
  int lo[3];   /* first cell */
  int n[3];    /* cells along x, y, z (all >= 1) */
  int64_t off; /* first element in the buffer: sum of cells * ncomp of the segments before */
} tsr_pack_seg;

/* Where a field's cells are: the allocated box's first cell and the strides (elements). */
typedef struct {
  int glo[3];       /* gbox.lo of the field */
  ptrdiff_t sy, sz; /* y and z strides */
  ptrdiff_t scomp;  /* component stride */
  int ncomp;
  int esize;        /* bytes per value: 8 (double) or 4 (float); buffers hold the same type */
} tsr_pack_geom;

/* The geometry of field f's allocation. */
static inline tsr_pack_geom tsr_pack_geom_of(const tsr_field *f) {
  tsr_pack_geom g;
  for (int d = 0; d < 3; ++d) g.glo[d] = f->gbox.lo[d];
  g.sy = f->sy;
  g.sz = f->sz;
  g.scomp = f->scomp;
  g.ncomp = f->ncomp;
  g.esize = (int)tsr_prec_size(f->prec);
  return g;
}

/* The geometry of box b of f's components packed contiguously, component by component, x
 * fastest (the messages' layout). */
static inline tsr_pack_geom tsr_pack_geom_packed(const tsr_box *b, const tsr_field *f) {
  tsr_pack_geom g;
  for (int d = 0; d < 3; ++d) g.glo[d] = b->lo[d];
  g.sy = tsr_box_len(b, 0);
  g.sz = g.sy * tsr_box_len(b, 1);
  g.scomp = tsr_box_cells(b);
  g.ncomp = f->ncomp;
  g.esize = (int)tsr_prec_size(f->prec);
  return g;
}

/* Copies the nseg segments segs (device memory, uploaded once) of the field data (device)
 * into buf (device), asynchronously on stream. most_cells is the largest segment's cell count
 * (it sizes the grid); nseg must be 1..65535. Errors: TSR_ERR_CUDA (launch). */
tsr_err tsr_pack_cuda(const tsr_pack_seg *segs, int nseg, int64_t most_cells,
                      const tsr_pack_geom *geom, const void *data, void *buf,
                      cudaStream_t stream);

/* The inverse: buf (device) into the segments of data (device), asynchronously on stream.
 * Errors: TSR_ERR_CUDA (launch). */
tsr_err tsr_unpack_cuda(const tsr_pack_seg *segs, int nseg, int64_t most_cells,
                        const tsr_pack_geom *geom, const void *buf, void *data,
                        cudaStream_t stream);

/* Copies the cells lo .. lo + n - 1 (global indices, every component) from src, laid out as
 * gs, to dst, laid out as gd (both device, one value size), asynchronously on stream. Either
 * side may be a contiguous buffer: the geometry of a box b packed component by component, x
 * fastest, is glo = b.lo, sy = n[0], sz = n[0] * n[1], scomp = cells of b. Threads run along
 * x rows, one row per block and iteration (no division per value), so a copy of a large box
 * runs at memory speed. Errors: TSR_ERR_CUDA (launch). */
tsr_err tsr_copy_box_cuda(const int lo[3], const int n[3], const tsr_pack_geom *gs,
                          const void *src, const tsr_pack_geom *gd, void *dst,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
