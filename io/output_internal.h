/* Helpers shared by io/output.c (HDF5) and io/output_xdmf.c; not part of the public API. */
#ifndef TSR_OUTPUT_INTERNAL_H
#define TSR_OUTPUT_INTERNAL_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>

#include "io/error.h"
#include "io/output.h"

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
 * TSR_ERR_IO naming path when the disk is full; nothing where the file system cannot. */
tsr_err tsr_output_reserve(const char *tmp, const char *path, double need);

/* Gives back what tsr_output_reserve reserved and the closed file tmp did not use. */
void tsr_output_release_reserve(const char *tmp);

#endif
