/* Device selection: the MPI half of solver/device.h, in every build. The CUDA calls live in
 * device_cuda.c, compiled only with CUDA; without it there are no GPUs to pick. */
#include "solver/device.h"

#include <stdio.h>
#include <stdlib.h>

#include "solver/run.h"

#ifdef TSR_HAVE_CUDA
tsr_err tsr_device_set_cuda(int device); /* device_cuda.c */
#else
tsr_err tsr_device_count_why(int *n, const char **why) {
  *n = 0;
  if (why) *why = "this build has no CUDA: TESSERA_ENABLE_CUDA=OFF";
  return TSR_OK;
}

tsr_err tsr_device_count(int *n) { return tsr_device_count_why(n, NULL); }

void tsr_device_usable(const char *host, int *usable, int *seen) {
  (void)host;
  *usable = *seen = 0;
}
#endif

#ifdef TSR_HAVE_CUDA
/* This rank's error for its node: too many ranks for the GPUs there. */
static tsr_err too_many(int local_size, int ngpu, const char *why) {
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int len;
  MPI_Get_processor_name(host, &len);
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  char visible[256];
  snprintf(visible, sizeof visible, "CUDA_VISIBLE_DEVICES=%s", vis ? vis : "(unset)");
  if (ngpu == 0)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%d rank%s on node %s but no GPU found (%s; %s): run on GPU nodes, check "
                       "CUDA_VISIBLE_DEVICES, or use the host backend",
                       local_size, local_size == 1 ? "" : "s", host, why, visible);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%d ranks on node %s but only %d GPU%s found (%s): start at most %d rank%s "
                     "per node, e.g. mpirun -np %d",
                     local_size, host, ngpu, ngpu == 1 ? "" : "s", visible, ngpu,
                     ngpu == 1 ? "" : "s", ngpu);
}
#endif

tsr_err tsr_device_select(MPI_Comm comm, int *device) {
  *device = -1;
#ifndef TSR_HAVE_CUDA
  (void)comm;
  /* Same answer on every rank without talking: nothing to agree on. */
  return tsr_err_set(TSR_ERR_UNSUPPORTED, __FILE__, __LINE__,
                     "no GPU backend: this tessera was built without CUDA (TESSERA_ENABLE_CUDA=OFF); "
                     "rebuild with CUDA or use the host backend");
#else
  MPI_Comm node;
  int rank, local_rank, local_size;
  MPI_Comm_rank(comm, &rank);
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return tsr_run_agree(comm, tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                                           "MPI_Comm_split_type(SHARED) failed: cannot tell "
                                           "which ranks share a node"));
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  int ngpu = 0;
  const char *why = "";
  tsr_err err = tsr_device_count_why(&ngpu, &why);
  if (!err && local_size > ngpu) err = too_many(local_size, ngpu, why);
  /* One node short of GPUs fails every rank with that node's message, instead of leaving the
   * others to hang in the first collective. */
  TSR_CALL(tsr_run_agree(comm, err));
  TSR_CALL(tsr_run_agree(comm, tsr_device_set_cuda(local_rank)));
  *device = local_rank;
  return TSR_OK;
#endif
}
