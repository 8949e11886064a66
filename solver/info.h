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

/* `tessera probe`, which tessera supervise launches the way it launches the run: on one rank
 * per node, counts the GPUs that work (tsr_device_usable), and prints on rank 0 of comm one
 * line per node, "tessera probe: node NAME: U of S GPUs usable" (nodes in the order of their
 * first rank), then "tessera probe: total U of S GPUs usable on N node(s)". For tests,
 * TESSERA_PROBE_NODE splits a node's ranks into pretend nodes of that name, and
 * TESSERA_PROBE_GPUS=k stands in for the count (k usable of k). Collective over comm.
 * A GPU that fails is counted out and named on stderr, not an error. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_info_probe(MPI_Comm comm, FILE *out);

#endif
