/* Checksummed datasets written chunk by chunk (io/output.c's ranks-in-turn path); private to
 * io/. */
#ifndef TSR_OUTPUT_CHUNKS_H
#define TSR_OUTPUT_CHUNKS_H

#include <hdf5.h>

#include "io/error.h"
#include "io/output.h"

/* A rank's part of a dataset, in HDF5's slowest-first order (z y x). */
typedef struct {
  int rank;
  hsize_t gdims[3], start[3], count[3];
  int empty;
} tsr_output_slab;

/* Where a rank's slab of one field lies in memory: its first value at base, rows along y every
 * sy values, planes along z every sz values (a 2D slab has one plane), double or float. */
typedef struct {
  const void *base;
  int single; /* 1: float values */
  hsize_t sy, sz;
} tsr_output_src;

/* The source of field f of slab s: its values contiguous in data (layout NULL: x fastest,
 * double) or as layout says. */
tsr_output_src tsr_output_src_of(const tsr_output_slab *s, const double *data,
                                 const tsr_output_layout *layout, int f);

/* Writes slab s of dataset d from src with one H5Dwrite (the memory selection picks the slab out
 * of its larger array; float values go to the file's type as HDF5 converts them). An empty slab
 * selects nothing, so that it can take part in collective transfers. Errors: TSR_ERR_HDF5,
 * TSR_ERR_IO (a full disk), naming path. */
tsr_err tsr_output_src_write(hid_t d, hid_t dxpl, const tsr_output_slab *s,
                             const tsr_output_src *src, const char *path);

/* Writes this rank's slab of the chunked, Fletcher32-checksummed dataset d (file type
 * little-endian float64 or float32, one filter) from src (the chunks are gathered from where
 * the values lie; doubles rounded for a float32 dataset, floats widened exactly for a float64
 * one) in a file open without
 * MPI-IO. Every chunk that lies wholly inside the slab (clipped to the dataset's extent) is
 * gathered and checksummed here, by `threads` OpenMP threads in batches, and stored with
 * H5Dwrite_chunk by the calling thread while the next batch is prepared; the file holds the
 * bytes HDF5's own filter would have written. Chunks shared with other ranks' slabs go through
 * H5Dwrite with one selection, where HDF5 merges them with what earlier ranks wrote.
 * Returns TSR_OK with *done = 0, having written nothing, when d is not of that kind (the
 * caller writes the slab itself). The caller holds tsr_io_lock. Errors: TSR_ERR_HDF5 and
 * TSR_ERR_IO (a full disk), naming path; TSR_ERR_MEMORY. */
tsr_err tsr_output_chunks_write(hid_t d, hid_t dxpl, const tsr_output_slab *s,
                                const tsr_output_src *src, int threads, const char *path,
                                int *done);

/* Reports an HDF5 failure to do `what` in path, from HDF5's error stack (io/output.c). */
tsr_err tsr_output_h5_fail(int line, const char *what, const char *path);

#endif
