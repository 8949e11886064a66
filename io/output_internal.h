/* Helpers shared by io/output.c (HDF5) and io/output_xdmf.c; not part of the public API. */
#ifndef TSR_OUTPUT_INTERNAL_H
#define TSR_OUTPUT_INTERNAL_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>

#include "io/error.h"
#include "io/output.h"
#include "io/output_chunks.h"

#define TSR_OUTPUT_DIR_ADVICE "check that the output directory exists and is writable"

/* path + ".tmp" in a new string the caller frees; NULL (with TSR_ERR_MEMORY set) on failure. */
char *tsr_output_tmp_name(const char *path);

/* Why a file in path's directory cannot be created, from the directory itself: writes a
 * sentence to buf and returns 1, or returns 0 when the directory looks fine. */
int tsr_output_dir_problem(const char *path, char *buf, size_t n);

/* Records TSR_ERR_IO for a failed write of path with errno e: a full disk (ENOSPC, EDQUOT)
 * said plainly, anything else with its text and TSR_OUTPUT_DIR_ADVICE. */
tsr_err tsr_output_write_error(const char *path, int e);

/* Renames tmp to path; on failure removes tmp and records TSR_ERR_IO naming path. */
tsr_err tsr_output_commit(const char *tmp, const char *path);

/* Every rank returns the code and message of the lowest failing rank (collective). */
tsr_err tsr_output_agree(MPI_Comm comm, tsr_err local);

/* Chunk dimensions (slowest axis first, rank of them) of a checksummed dataset of gdims: at
 * most chunk_bytes (0: 4 MiB) of float64 each, halving the longest axis. io/output_space.c. */
void tsr_output_chunk_dims(int rank, const hsize_t *gdims, size_t chunk_bytes, hsize_t *chunk);

/* An upper bound of the bytes a fields file of nfield fields on m's grid takes on disk. */
double tsr_output_estimate(const tsr_grid_meta *m, int nfield, const tsr_output_opts *o);

/* TSR_ERR_IO naming path when its file system has less than need bytes free. */
tsr_err tsr_output_check_space(const char *path, double need);

/* Reserves need bytes of disk for the file tmp (just created, written as path), past its end:
 * TSR_ERR_IO naming path when the disk is full; nothing where the file system cannot, and then
 * *reserved (when not NULL) is 0, else 1. */
tsr_err tsr_output_reserve(const char *tmp, const char *path, double need, int *reserved);

/* Gives back what tsr_output_reserve reserved and the closed file tmp did not use. */
void tsr_output_release_reserve(const char *tmp);

/* ---- io/output.c's pieces that io/output_parts.c uses ---------------------------------- */

enum tsr_output_open_mode { TSR_OUTPUT_CREATE, TSR_OUTPUT_WRITE, TSR_OUTPUT_READ };

/* Opens name (path is what messages call it); mpio: all ranks of comm open it together. */
tsr_err tsr_output_open(const char *name, const char *path, enum tsr_output_open_mode mode,
                        int mpio, MPI_Comm comm, hid_t *file);

/* The slab of box b in a grid of cells (HDF5's slowest-first order). */
tsr_output_slab tsr_output_make_slab(int dim, const int cells[3], const tsr_box *b);

/* Root attributes of a fields file (grid, time, step, version, o's extra ones). */
tsr_err tsr_output_write_root(hid_t file, const tsr_grid_meta *m, const tsr_output_opts *o,
                              const char *path);

/* Creates the layout of the new file tmp (root attributes, /fields, chunked datasets), writes
 * slab s of every field, flushes and closes it, by this rank alone (no MPI-IO). */
tsr_err tsr_output_fill_close(hid_t file, const char *tmp, const char *path,
                              const tsr_grid_meta *m, const tsr_output_slab *s, int nfield,
                              const char *const *names, const double *const *data,
                              const tsr_output_opts *o);

/* tmp becomes a link to /dev/full (--inject-fault kind=enospc), before anything opens it. */
void tsr_output_plant_enospc(const char *tmp);

/* ---- io/output.c's attribute readers that io/pinn_state.c uses ------------------------- */

/* 1 when the open attribute a holds numbers (an integer or float class, which HDF5 converts
 * to any numeric memory type), 0 otherwise; records no error, so the caller says what failed. */
int tsr_output_attr_numeric(hid_t a);

/* The attribute name of the open file or object obj as one fixed-length string, in a new
 * string (*out) the caller frees. Where it is missing, of another type or several strings (a
 * read of which would fill past one string), *out is NULL and TSR_ERR_INPUT names it and
 * path; TSR_ERR_MEMORY where its copy cannot be allocated. */
tsr_err tsr_output_read_string(hid_t obj, const char *path, const char *name, char **out);

/* ---- checkpoints in parts (io/output_parts.c) ------------------------------------------ */

/* Writes the fields file path as parts: every rank with cells writes its box, at the same time
 * as the others, into a fields file of its own (path without ".h5" + ".part<rank>.h5", an
 * ordinary checksummed fields file of the box's sub-grid, with root attributes part_of and
 * parts_id), and rank 0 then writes path itself: the root attributes and, for each field, an
 * HDF5 virtual dataset over the whole grid that maps each box to its part. Readers see global
 * datasets as in a one-piece file. Each file is written under its temporary name and renamed
 * when complete; path last, so path complete means the checkpoint is. need: path's estimated
 * size; full: this rank's write meets a full disk (tests). On an error nothing of it is left.
 * Collective; the caller holds tsr_io_lock. Errors as tsr_output_write_fields. */
tsr_err tsr_output_write_parts(MPI_Comm comm, const char *path, const char *tmp,
                               const tsr_grid_meta *meta, const tsr_box *owned, int nfield,
                               const char *const *names, const double *const *data,
                               const tsr_output_opts *opts, int full);

/* 1 when the fields file path is written in parts (root attribute "parts"); 0 otherwise or
 * when it cannot be read (the open that follows says why). Not collective; takes no lock. */
int tsr_output_is_parted(const char *path);

/* For a virtual dataset d of the parted file path (opened with tsr_output_parts_dapl): checks
 * that every part holding cells of slab s exists, reads, belongs to this file (parts_id) and
 * has the extent the mapping expects, so that no missing part reads as fill values.
 * TSR_ERR_INPUT naming the part otherwise. Caller holds tsr_io_lock. */
tsr_err tsr_output_parts_check(hid_t file, hid_t d, const char *path, const tsr_output_slab *s);

/* A dataset access list under which path's virtual datasets find their parts in path's own
 * directory, wherever the process runs. Negative on failure. */
hid_t tsr_output_parts_dapl(const char *path);

#endif
