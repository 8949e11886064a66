/* `tessera info`, the host part: versions of the libraries tessera is linked with, the MPI
 * job, and (through info_cuda.c in CUDA builds) the GPUs. */
#include "solver/info.h"
#include "solver/implicit/implicit.h"

#include <hdf5.h>
#include <muParserDLL.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "io/output.h"
#include "solver/device.h"
#include "solver/threads.h"
#include "tsr_version.h"

#ifdef TSR_HAVE_CUDA
void tsr_info_print_gpus(FILE *out, const char *host); /* info_cuda.c */
#endif

/* The first line of MPI's library text: Open MPI fits one line, MPICH spreads its build
 * options over many. */
static void mpi_library(char *buf, size_t cap) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(lib, &len);
  size_t n = strcspn(lib, "\r\n");
  while (n > 0 && (lib[n - 1] == ' ' || lib[n - 1] == '\t')) --n;
  snprintf(buf, cap, "%.*s", (int)n, lib);
}

static void muparser_version(char *buf, size_t cap) {
  buf[0] = '\0';
  muParserHandle_t mp = mupCreate(muBASETYPE_FLOAT);
  if (!mp) return;
  const muChar_t *v = mupGetVersion(mp);
  if (v) snprintf(buf, cap, "%s", v);
  mupRelease(mp);
}

tsr_err tsr_info_print(MPI_Comm comm, FILE *out) {
  int rank, size, local_rank, nodes, leader;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  leader = local_rank == 0;
  MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
  if (rank != 0) return TSR_OK;

  char host[MPI_MAX_PROCESSOR_NAME] = "?", mpi[MPI_MAX_LIBRARY_VERSION_STRING], mup[64];
  int len, mpi_major, mpi_minor;
  MPI_Get_processor_name(host, &len);
  MPI_Get_version(&mpi_major, &mpi_minor);
  mpi_library(mpi, sizeof mpi);
  unsigned h5_major = 0, h5_minor = 0, h5_release = 0;
  tsr_io_lock();
  H5get_libversion(&h5_major, &h5_minor, &h5_release);
  tsr_io_unlock();
  muparser_version(mup, sizeof mup);
  const char *omp_env = getenv("OMP_NUM_THREADS");

  fprintf(out, "tessera %s\n", TSR_VERSION);
#ifdef TSR_HAVE_CUDA
  fprintf(out, "build:    CUDA on (architectures %s), %s\n", TSR_CUDA_ARCHITECTURES,
          *TSR_BUILD_TYPE ? TSR_BUILD_TYPE : "no build type");
#else
  fprintf(out, "build:    CUDA off (host backend only), %s\n",
          *TSR_BUILD_TYPE ? TSR_BUILD_TYPE : "no build type");
#endif
  fprintf(out, "MPI:      %s (MPI %d.%d); %d rank%s on %d node%s\n", mpi, mpi_major, mpi_minor,
          size, size == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
  fprintf(out, "HDF5:     %u.%u.%u, %s\n", h5_major, h5_minor, h5_release,
          tsr_output_parallel_available() ? "parallel (collective MPI-IO writes)"
                                          : "serial (ranks write their parts in turn)");
  fprintf(out, "libyaml:  %s\n", yaml_get_version_string());
  if (*mup) fprintf(out, "muparser: %s\n", mup);
  char petsc[256];
  fprintf(out, "PETSc:    %s\n", tsr_implicit_describe(petsc, sizeof petsc));
  tsr_threads th = tsr_threads_chosen();
  char omp[160];
  if (th.threads) {
    tsr_threads_describe(&th, omp, sizeof omp);
    fprintf(out, "OpenMP:   %s\n", omp);
  } else {
    int threads = omp_get_max_threads();
    fprintf(out, "OpenMP:   %d thread%s per rank (OMP_NUM_THREADS=%s)\n", threads,
            threads == 1 ? "" : "s", omp_env ? omp_env : "unset");
  }
#ifdef TSR_HAVE_CUDA
  tsr_info_print_gpus(out, host);
#else
  const char *why;
  int ngpu;
  tsr_device_count_why(&ngpu, &why);
  fprintf(out, "GPUs:     none found (%s)\n", why);
#endif
  fflush(out);
  return TSR_OK;
}

/* A string's hash as an MPI_Comm_split colour (non-negative). */
static int colour(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 16777619u;
  return (int)(h & 0x7fffffff);
}

tsr_err tsr_info_probe(MPI_Comm comm, FILE *out) {
  int rank, size, local_rank, len;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  struct {
    char name[MPI_MAX_PROCESSOR_NAME];
    int leader, usable, seen;
  } me, *all = NULL;
  memset(&me, 0, sizeof me);
  MPI_Get_processor_name(me.name, &len);
  const char *pretend = getenv("TESSERA_PROBE_NODE");
  if (pretend && *pretend) snprintf(me.name, sizeof me.name, "%s", pretend);
  MPI_Comm node, named;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_split(node, colour(me.name), rank, &named);
  MPI_Comm_rank(named, &local_rank);
  MPI_Comm_free(&named);
  MPI_Comm_free(&node);
  me.leader = local_rank == 0;
  if (me.leader) {
    const char *fake = getenv("TESSERA_PROBE_GPUS");
    if (fake && *fake) me.usable = me.seen = atoi(fake);
    else tsr_device_usable(me.name, &me.usable, &me.seen);
  }
  if (rank == 0) all = malloc((size_t)size * sizeof *all);
  int ok = rank != 0 || all;
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "probe: out of memory");
  MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, comm);
  if (rank != 0) return TSR_OK;
  int nodes = 0, usable = 0, seen = 0;
  for (int r = 0; r < size; ++r) {
    if (!all[r].leader) continue;
    fprintf(out, "tessera probe: node %s: %d of %d GPUs usable\n", all[r].name, all[r].usable,
            all[r].seen);
    ++nodes;
    usable += all[r].usable;
    seen += all[r].seen;
  }
  fprintf(out, "tessera probe: total %d of %d GPUs usable on %d node%s\n", usable, seen, nodes,
          nodes == 1 ? "" : "s");
  fflush(out);
  free(all);
  return TSR_OK;
}
