/* Final fields on disk: HDF5 with global datasets that do not depend on the decomposition,
 * and an XDMF sidecar that ParaView opens.
 *
 * Layout of the file: datasets /fields/<name>, float64, C order [ny][nx] (2D) or [nz][ny][nx]
 * (3D), owned cells only; attributes on the root group: lo, hi (float64[dim]), cells
 * (int64[dim]), time (float64), step (int64), tessera_version (string). */
#ifndef TSR_OUTPUT_H
#define TSR_OUTPUT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "decomp/box.h"
#include "io/error.h"

typedef struct {
  int dim;
  int cells[3];
  double lo[3], hi[3];
  double time;
  int64_t step;
  int single;  /* 1: field datasets are float32 (the values passed are still double, rounded
                  to nearest on the way to the file): a single-precision state, or snapshots
                  asked for in single; 0: float64 */
} tsr_grid_meta;

/* An extra root attribute: a string when str is not NULL, nint int64 values when ints is not
 * NULL, else one float64. */
typedef struct {
  const char *name;
  const char *str;
  double num;
  const int64_t *ints;
  int nint;
} tsr_output_attr;

/* Where the fields' values lie when they are not each a contiguous array of the owned box's
 * doubles: the owned box inside a larger array (a field's allocation with its ghost cells,
 * kernels/field.h), read where it lies so that a checkpoint touches the state once. */
typedef struct {
  const void *const *base; /* per field: its value at the owned box's lo corner */
  int single;              /* 1: the values are float (widened exactly where the file holds
                              float64); 0: double */
  ptrdiff_t sy, sz;        /* values between neighbours along y and along z (along x: 1);
                              sz a multiple of sy, sy >= the box's x length, sz / sy >= its y
                              length (3D) */
} tsr_output_layout;

/* How ranks write a fields file (output.io): collective MPI-IO where HDF5 has it, else ranks
 * in turn (auto); ranks in turn even where HDF5 is parallel (serial); checkpoints as parts
 * written by all ranks at once under one file of virtual datasets (parts; auto chooses it for
 * checkpoints of several ranks where HDF5 is serial). */
enum { TSR_OUTPUT_IO_AUTO = 0, TSR_OUTPUT_IO_SERIAL = 1, TSR_OUTPUT_IO_PARTS = 2 };

typedef struct {
  int force_serial; /* 1: ranks write their hyperslabs in turn even where HDF5 is parallel */
  int parts;        /* 1 with checksum and several ranks: the file is written in parts, each
                       rank's at the same time (io/output_internal.h tsr_output_write_parts) */
  int checksum;     /* 1: chunked datasets with Fletcher32 checksums (checkpoints); where a
                       parallel filtered write fails, the ranks write in turn instead */
  size_t chunk_bytes; /* checksummed datasets: the largest chunk (0: 4 MiB; tests use less to
                          have many chunks on small grids) */
  int threads;      /* OpenMP threads that build the checksummed chunks where ranks write in
                       turn (<= 1: the calling thread alone) */
  int nattr;        /* extra root attributes, the same on every rank */
  const tsr_output_attr *attrs;
  const tsr_output_layout *layout; /* not NULL: the values are read from here, and data is
                                      not used (may be NULL) */
} tsr_output_opts;

/* Writes nfield fields into path. Collective over comm. Rank r passes its owned box and, for
 * each field, its owned cells contiguous in x-fastest order (tsr_box_cells(owned) values), or
 * opts->layout saying where they lie.
 * The file is written as path + ".tmp" and renamed to path only when complete and closed, so
 * path never holds a partial file. Collective HDF5 hyperslab writes when the library is
 * parallel and !force_serial; otherwise ranks take turns. Errors: TSR_ERR_IO (message names
 * the path), TSR_ERR_HDF5; every rank returns the same code. */
tsr_err tsr_output_write_fields(MPI_Comm comm, const char *path, const tsr_grid_meta *meta,
                                const tsr_box *owned, int nfield, const char *const *names,
                                const double *const *data, const tsr_output_opts *opts);

/* Writes the XDMF (3.0) sidecar at xmf_path describing h5_name's fields as cell data on a
 * uniform grid (ORIGIN_DXDYDZ topology). h5_name is written as given (relative to the XDMF
 * file). Not collective: call on one rank. Atomic like the HDF5 file. Errors: TSR_ERR_IO. */
tsr_err tsr_output_write_xdmf(const char *xmf_path, const char *h5_name,
                              const tsr_grid_meta *meta, int nfield, const char *const *names);

/* One file of a time series. */
typedef struct {
  const char *h5_name; /* relative to the XDMF file, e.g. "snapshot_00000100.h5" */
  double time;
  int64_t step;
  int precision;       /* bytes per value in the file: 8 (float64) or 4 (float32) */
} tsr_xdmf_step;

/* Writes an XDMF (3.0) time series at xmf_path: one Temporal collection whose uniform grids
 * (named after their files, without ".h5") each describe one file's fields on the grid of
 * `grid` (its time and step are not used) at the entry's time, in the order given. ParaView
 * and VisIt open it as one time series. Not collective; atomic like tsr_output_write_xdmf.
 * Errors: TSR_ERR_IO. */
tsr_err tsr_output_write_xdmf_series(const char *xmf_path, const tsr_grid_meta *grid, int nstep,
                                     const tsr_xdmf_step *steps, int nfield,
                                     const char *const *names);

/* Reads the owned hyperslab of field name from path into data (tsr_box_cells(owned) values,
 * x fastest) and, if meta is not NULL, the grid attributes. Collective over comm.
 * Errors: TSR_ERR_IO (missing file), TSR_ERR_INPUT (no such field, wrong shape), TSR_ERR_HDF5. */
tsr_err tsr_output_read_field(MPI_Comm comm, const char *path, const char *name,
                              const tsr_box *owned, double *data, tsr_grid_meta *meta);

/* Reads root attribute name of path: a string into str (n bytes, truncated) when str is not
 * NULL, else one number into *num. Collective: rank 0 reads, the others get its result.
 * Errors: TSR_ERR_INPUT (missing file, not HDF5, no such attribute), TSR_ERR_HDF5. */
tsr_err tsr_output_read_attr(MPI_Comm comm, const char *path, const char *name, char *str,
                             size_t n, double *num);

/* The int64 root attribute name of the fields file at path into vals (at most max values):
 * *n gets how many it has, 0 when it has no such attribute (not an error), -1 when it has
 * more than max. Collective: rank 0 reads. Errors: TSR_ERR_INPUT (missing file), TSR_ERR_HDF5. */
tsr_err tsr_output_read_ints(MPI_Comm comm, const char *path, const char *name, int64_t *vals,
                             int max, int *n);

/* As tsr_output_read_attr for a string attribute of any length: *out is a new string (the
 * caller frees it), the same on every rank. Collective. Errors: as tsr_output_read_attr,
 * TSR_ERR_MEMORY. */
tsr_err tsr_output_read_text(MPI_Comm comm, const char *path, const char *name, char **out);

/* The grid attributes of the fields file at path (lo, hi, cells, time, step). Collective: rank
 * 0 reads, the others get its result. Errors: TSR_ERR_INPUT (missing file, not HDF5, not a
 * tessera fields file), TSR_ERR_HDF5. */
tsr_err tsr_output_read_meta(MPI_Comm comm, const char *path, tsr_grid_meta *meta);

/* The one lock around every use of HDF5 (this HDF5 is not a thread-safe build, and the
 * checkpoint writer runs in a thread beside the step loop). The functions of this header take
 * it themselves; code that calls HDF5 directly holds it around those calls. Not recursive.
 * It is held across collective calls, so two threads of a process must never be inside
 * collective HDF5 I/O at the same time (each would hold up the other's peers): the run waits
 * for its background checkpoint write (solver/ckpt_writer.h) before any other output. */
void tsr_io_lock(void);
void tsr_io_unlock(void);

/* 1 when this build's HDF5 has parallel (MPI-IO) support. */
int tsr_output_parallel_available(void);

/* For tests: how many chunks of checksummed datasets this process has written on the
 * ranks-in-turn path, built and checksummed by tessera and stored whole (direct), and shared
 * with other ranks' boxes and written through HDF5's own filter (shared). */
void tsr_output_chunk_counts(long long *direct, long long *shared);

/* For tests (tessera run --inject-fault kind=enospc): the next checkpoint written on this rank
 * (tsr_output_write_fields with opts->checksum) meets a full disk. Its temporary file is made a
 * link to /dev/full, so the kernel's ENOSPC comes back through HDF5 and the real error path
 * runs (the temporary is removed, the message names the file). Once. */
void tsr_output_inject_enospc(void);

/* Notes tmp (a file written under a temporary name before it is renamed into place) as one
 * that tsr_output_remove_tmp_files removes; every writer of io/ notes its own. Thread-safe. */
void tsr_output_tmp_track(const char *tmp);

/* Removes the temporary files of the newest writes of this process (unlink and nanosleep only,
 * so it may be called from a signal handler that ends the process at once: nothing
 * half-written stays). From the call on, a thread that asks for a temporary name waits for the
 * process's end; the names given just before get a second pass 0.1 s later, after their files
 * may have been created by other threads. */
void tsr_output_remove_tmp_files(void);

#endif
