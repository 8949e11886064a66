/* `tessera info`, the GPU part: CUDA and NCCL versions, each GPU of this node, and how they
 * reach each other. Every query that fails is shown in place; nothing here stops the report. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_version.h"

void tsr_info_print_gpus(FILE *out, const char *host);

static void cuda_version(char *buf, size_t cap, int v) {
  if (v <= 0) snprintf(buf, cap, "none");
  else snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

/* How this build's kernels reach a GPU of compute capability major.minor, from the CMake
 * architecture list ("80;90", "90-real", "90a", ...): 2 native code, 1 PTX compiled by the
 * driver at start-up, 0 nothing that runs, -1 cannot tell ("native", "all", ...). */
static int arch_fit(int major, int minor) {
  char list[256];
  snprintf(list, sizeof list, "%s", TSR_CUDA_ARCHITECTURES);
  if (!*list) return -1;
  int cc = major * 10 + minor, best = 0;
  for (char *save = NULL, *t = strtok_r(list, ";, ", &save); t; t = strtok_r(NULL, ";, ", &save)) {
    char *end;
    long n = strtol(t, &end, 10);
    if (end == t) return -1;
    char variant = (*end == 'a' || *end == 'f') ? *end++ : 0;
    int real = strcmp(end, "-virtual") != 0, virt = strcmp(end, "-real") != 0;
    /* sm_XY code runs on X.Z for Z >= Y; 'a' code only on X.Y itself; PTX on anything newer,
     * except 'a'/'f' PTX, which stays within its architecture (family). */
    int same_major = n / 10 == major && n % 10 <= minor;
    int sass = variant == 'a' ? n == cc : same_major;
    int ptx = variant ? same_major && (variant == 'f' || n == cc) : n <= cc;
    if (real && sass) best = 2;
    else if (virt && ptx && best < 1) best = 1;
  }
  return best;
}

static void print_gpu(FILE *out, int i) {
  struct cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, i);
  if (e != cudaSuccess) {
    fprintf(out, "  [%d] cannot query: %s\n", i, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  char bus[32] = "?";
  if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, i) != cudaSuccess) cudaGetLastError();
  fprintf(out, "  [%d] %s, %.1f GiB, compute capability %d.%d, %d SMs, PCI %s\n", i, p.name,
          (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.major, p.minor,
          p.multiProcessorCount, bus);
  int fit = arch_fit(p.major, p.minor);
  if (fit == 1)
    fprintf(out, "      note: built for %s, no native code for %d.%d: the driver compiles the "
                 "kernels from PTX at start-up; rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d\n",
            TSR_CUDA_ARCHITECTURES, p.major, p.minor, p.major, p.minor);
  else if (fit == 0)
    fprintf(out, "      warning: built for %s, no code that runs on %d.%d: rebuild with "
                 "-DCMAKE_CUDA_ARCHITECTURES=%d%d\n",
            TSR_CUDA_ARCHITECTURES, p.major, p.minor, p.major, p.minor);
}

/* Prints one n x n matrix whose entry (i, j) is cell(i, j), "-" on the diagonal. */
static void print_matrix(FILE *out, int n, void (*cell)(int, int, char *, size_t)) {
  fprintf(out, "      ");
  for (int j = 0; j < n; ++j) fprintf(out, "%4d", j);
  fprintf(out, "\n");
  for (int i = 0; i < n; ++i) {
    fprintf(out, "  %4d", i);
    for (int j = 0; j < n; ++j) {
      char c[16] = "-";
      if (i != j) cell(i, j, c, sizeof c);
      fprintf(out, "%4s", c);
    }
    fprintf(out, "\n");
  }
}

static void peer_cell(int i, int j, char *c, size_t cap) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess) {
    cudaGetLastError();
    snprintf(c, cap, "?");
  } else {
    snprintf(c, cap, "%s", can ? "y" : "n");
  }
}

/* NVIDIA documents the performance rank only as "relative", so the kind of link is hinted
 * from native atomics, which NVLink carries and PCIe peer paths normally do not. */
static void link_cell(int i, int j, char *c, size_t cap) {
  int access = 0, perf = 0, atomics = 0;
  if (cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, i, j) != cudaSuccess ||
      cudaDeviceGetP2PAttribute(&perf, cudaDevP2PAttrPerformanceRank, i, j) != cudaSuccess ||
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, i, j) !=
          cudaSuccess) {
    cudaGetLastError();
    snprintf(c, cap, "?");
  } else if (!access) {
    snprintf(c, cap, "x");
  } else {
    snprintf(c, cap, "%c%d", atomics ? 'N' : 'P', perf);
  }
}

void tsr_info_print_gpus(FILE *out, const char *host) {
  int rt = 0, drv = 0, nccl = 0, n = 0;
  char rts[16], drvs[16];
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv); /* 0 when no driver is installed */
  cuda_version(rts, sizeof rts, rt);
  cuda_version(drvs, sizeof drvs, drv);
  fprintf(out, "CUDA:     runtime %s, driver %s", rts, drvs);
  if (drv > 0 && drv < rt)
    fprintf(out, " (older than the runtime: update the driver, or GPUs will not start)");
  fprintf(out, "\n");
  if (ncclGetVersion(&nccl) == ncclSuccess)
    fprintf(out, "NCCL:     %d.%d.%d (built with %d.%d.%d)\n", nccl / 10000, nccl % 10000 / 100,
            nccl % 100, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  else
    fprintf(out, "NCCL:     version unknown (ncclGetVersion failed)\n");

  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    fprintf(out, "GPUs:     none found (%s)\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "the runtime reports 0 devices");
    cudaGetLastError();
    return;
  }
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  fprintf(out, "GPUs:     %d on node %s (CUDA_VISIBLE_DEVICES=%s); one rank per GPU, so at most %d "
               "rank%s per node\n",
          n, host, vis ? vis : "unset", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; ++i) print_gpu(out, i);
  if (n < 2) return;
  fprintf(out, "peer access (cudaDeviceCanAccessPeer; row reads/writes column's memory):\n");
  print_matrix(out, n, peer_cell);
  fprintf(out, "links (cudaDeviceGetP2PAttribute):\n");
  print_matrix(out, n, link_cell);
  fputs("  legend: peer access: y = direct loads, stores and copies; n = none.\n"
        "          links: N = P2P with native atomics (normally NVLink), P = P2P without\n"
        "          them (normally PCIe); the number is cudaDevP2PAttrPerformanceRank, the\n"
        "          driver's relative rank of the link, comparable only within this node;\n"
        "          x = no P2P, copies go through host memory; ? = the query failed.\n"
        "          nvidia-smi topo -m names the links.\n",
        out);
}
