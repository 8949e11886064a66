/* Helpers shared by io/output.c (HDF5) and io/output_xdmf.c; not part of the public API. */
#ifndef TSR_OUTPUT_INTERNAL_H
#define TSR_OUTPUT_INTERNAL_H

#include <mpi.h>
#include <stddef.h>

#include "io/error.h"

#define TSR_OUTPUT_DIR_ADVICE "check that the output directory exists and is writable"

/* path + ".tmp" in a new string the caller frees; NULL (with TSR_ERR_MEMORY set) on failure. */
char *tsr_output_tmp_name(const char *path);

/* Why a file in path's directory cannot be created, from the directory itself: writes a
 * sentence to buf and returns 1, or returns 0 when the directory looks fine. */
int tsr_output_dir_problem(const char *path, char *buf, size_t n);

/* Renames tmp to path; on failure removes tmp and records TSR_ERR_IO naming path. */
tsr_err tsr_output_commit(const char *tmp, const char *path);

/* Every rank returns the code and message of the lowest failing rank (collective). */
tsr_err tsr_output_agree(MPI_Comm comm, tsr_err local);

#endif
