/* `tessera info`: what this tessera was built with and what it finds where it runs, so that a
 * user can check a machine (and paste one block into a bug report) before running a case. */
#ifndef TSR_INFO_H
#define TSR_INFO_H

#include <mpi.h>
#include <stdio.h>

#include "io/error.h"

/* Prints to out, on rank 0 of comm only: the tessera version and build; the MPI, HDF5,
 * libyaml, muparser and OpenMP in use; the ranks and nodes of comm; and rank 0's node's GPUs
 * (CUDA runtime, driver and NCCL versions, each GPU, peer access and links between them).
 * Finding no GPU, or a GPU query failing, is reported in the text, not as an error.
 * Collective over comm. Returns TSR_OK: what is missing or failing is part of the text. */
tsr_err tsr_info_print(MPI_Comm comm, FILE *out);

#endif
