/* bench/checkpoint: what checkpoints cost the step loop, through the solver's own path.
 * Included by checkpoint.c (CPU ranks) and checkpoint_cuda.c (GPUs), which give the ceiling:
 * the plain copy of the staged bytes (memcpy on CPU, cudaMemcpy into pinned memory on GPUs).
 *
 *   mpirun -np P build/bench/checkpoint [--n N] [--every K] [--ckpts C] [--reps R]
 *                                       [--backend host|cuda] [--io auto|serial|parts]
 *                                       [--dir DIR] [--json PATH] [--keep]
 *
 * A generated case (heat 3D, forward Euler, periodic, N^3 cells per rank in z-slabs of an
 * N x N x PN grid) runs (C + 1) * K steps through tsr_run three times: without checkpoints,
 * with background checkpoints every K steps (C of them; none at the last step) and with
 * synchronous ones (R times each, taking turns; each kind keeps its fastest run). Per checkpoint: the stall (time the step loop stood still: waiting for the
 * previous write + staging copy + hand-off, slowest rank, from tsr_run_result), the staging
 * copy inside it, the same bytes copied plainly in this process (the ceiling; goal: stall
 * <= 1.2 x that), the write throughput of the background thread, the read throughput of a
 * restart read of the checkpoint (page cache warm, and cold after fdatasync + fadvise
 * DONTNEED), and the checkpoints' share of run time. The disk ceiling: the file's field bytes
 * written by rank 0 with plain write() in 4 MiB pieces into a new file in the same directory,
 * then closed (no fsync, as the checkpoint), median of 3: what one stream gets from the file
 * system, against which the write throughput is read (ranks write in turn with --io serial, or
 * --io auto on one rank where HDF5 is serial); where the checkpoint is written in parts
 * (--io parts, or auto on several ranks where HDF5 is serial) every rank writes its share into
 * a file of its own at the same time, as the parts are. Checks: the three runs end with the same
 * bits, the background and synchronous checkpoints hold the same bits; exits 1 if not. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/case.h"
#include "io/checkpoint.h"
#include "io/output.h"
#include "solver/run.h"
#include "tsr_version.h"

/* Seconds of one plain copy of bytes the way the backend's staging goes (device: device
 * memory into pinned host memory), median of reps, on this rank. */
static double ceiling_copy(size_t bytes, int device, int reps);
/* What the copy ran on, for the record. */
static void ceiling_describe(int device, char *buf, size_t n);

static int rank, nranks;

#define BENCH_CHECK(call)                                                                      \
  do {                                                                                         \
    tsr_err e_ = (call);                                                                       \
    if (e_) {                                                                                  \
      fprintf(stderr, "checkpoint bench rank %d: %s\n", rank, tsr_err_message());              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double max_over_ranks(double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

typedef struct {
  int n, every, ckpts, device, keep, reps;
  const char *io; /* output.io */
  const char *dir, *json;
} bench_opts;

/* One run of the generated case; mode 0: no checkpoints, 1: background, 2: synchronous. */
static tsr_run_result run_case(const bench_opts *o, int mode, const char *out) {
  char text[2048], ck[200] = "";
  if (mode)
    snprintf(ck, sizeof ck, ", checkpoint_every: %d, keep: 2, checkpoint_async: %s, io: %s", o->every,
             mode == 1 ? "true" : "false", o->io);
  snprintf(text, sizeof text,
           "name: bench_checkpoint\nmodel: heat\n"
           "grid: {cells: [%d, %d, %d], periodic: true}\nparams: {kappa: 1}\n"
           "initial: {u: \"sin(2*pi*x)*sin(2*pi*y)*sin(2*pi*z)\"}\n"
           "time: {scheme: euler, dt: auto, steps: %d}\nbackend: %s\n"
           "output: {progress: none%s}\n",
           o->n, o->n, o->n * nranks, (o->ckpts + 1) * o->every, o->device ? "cuda" : "host", ck);
  tsr_case *c = NULL;
  BENCH_CHECK(tsr_case_load_string("bench_checkpoint.yaml", text, 0, NULL, &c));
  tsr_run_opts ro = tsr_run_opts_default();
  ro.out_dir = out;
  ro.quiet = 1;
  tsr_run_result res;
  BENCH_CHECK(tsr_run(c, MPI_COMM_WORLD, &ro, &res));
  tsr_case_destroy(&c);
  return res;
}

/* Pushes file path to disk and drops it from the page cache; 0 when there is no such file. */
static int drop_cached(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return 1;
}

/* Reads checkpoint path on z-slabs (any decomposition reads it); seconds, slowest rank. With
 * cold, rank 0 first drops the file, and its parts where it has them, from the page cache. */
static double read_ckpt(const bench_opts *o, const char *path, int cold, double *data) {
  if (cold && rank == 0 && drop_cached(path)) {
    char part[4200];
    for (int r = 0;; ++r) { /* checkpoint_<step>.part<r>.h5 (io/output.h, output.io: parts) */
      snprintf(part, sizeof part, "%.*s.part%04d.h5", (int)strlen(path) - 3, path, r);
      if (!drop_cached(part)) break;
    }
  }
  tsr_box b = {{0, 0, rank * o->n}, {o->n, o->n, (rank + 1) * o->n}};
  const char *names[] = {"u"};
  double *d[] = {data};
  tsr_checkpoint_info info;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  BENCH_CHECK(tsr_checkpoint_read(MPI_COMM_WORLD, path, 1, names, &b, d, &info, NULL, NULL));
  return max_over_ranks(MPI_Wtime() - t0);
}

static void commit_of(char *buf, size_t n) {
  snprintf(buf, n, "%s", TSR_BENCH_COMMIT);
  FILE *p = popen("git -C " TSR_BENCH_SOURCE " rev-parse --short HEAD 2>/dev/null", "r");
  char line[64];
  if (p && fgets(line, sizeof line, p) && line[0]) {
    line[strcspn(line, "\n")] = '\0';
    snprintf(buf, n, "%s", line);
  }
  if (p) pclose(p);
}

static void cpu_model(char *buf, size_t n) {
  snprintf(buf, n, "unknown CPU");
  FILE *fp = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (fp && fgets(line, sizeof line, fp))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      snprintf(buf, n, "%s", strchr(line, ':') + 2);
      buf[strcspn(buf, "\n")] = '\0';
      break;
    }
  if (fp) fclose(fp);
}

/* The host ceiling: a memcpy of bytes by all OpenMP threads of the rank, as the host backend
 * stages; median of reps after a first touch. */
static double host_copy(size_t bytes, int reps) {
  /* between copies, 128 MiB read elsewhere push both buffers out of the caches (read, so
   * that no dirty lines of it are written back during the copy) */
  size_t nevict = (size_t)128 << 20;
  char *src = malloc(bytes ? bytes : 1), *dst = malloc(bytes ? bytes : 1), *evict = malloc(nevict);
  if (!src || !dst || !evict) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(src, 1, bytes);
  double t[64];
  if (reps > 64) reps = 64;
  memset(evict, 1, nevict);
  volatile double sink = 0;
  for (int r = -1; r < reps; ++r) {
#pragma omp parallel
    {
      size_t nt = (size_t)omp_get_num_threads(), i = (size_t)omp_get_thread_num();
      const double *e = (const double *)(evict + nevict / nt * i);
      double acc = 0;
      for (size_t k = 0; k < nevict / nt / sizeof(double); k += 8) acc += e[k];
#pragma omp critical
      sink = sink + acc;
      size_t lo = bytes / nt * i, hi = i + 1 == nt ? bytes : bytes / nt * (i + 1);
      if (r < 0) memset(dst + lo, 0, hi - lo);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
#pragma omp parallel
    {
      size_t nt = (size_t)omp_get_num_threads(), i = (size_t)omp_get_thread_num();
      size_t lo = bytes / nt * i, hi = i + 1 == nt ? bytes : bytes / nt * (i + 1);
      memcpy(dst + lo, src + lo, hi - lo);
    }
    if (r >= 0) t[r] = MPI_Wtime() - t0;
  }
  free(src);
  free(dst);
  free(evict);
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  return t[reps / 2];
}

/* How the checkpoints are written: "ranks in turn", "parallel" (MPI-IO) or "parts". */
static const char *io_kind(const bench_opts *o) {
  int par = tsr_output_parallel_available();
  if (!strcmp(o->io, "parts") || (!strcmp(o->io, "auto") && !par && nranks > 1)) return "parts";
  return !strcmp(o->io, "serial") || !par ? "ranks in turn" : "parallel";
}

/* Seconds to write bytes with plain write() (4 MiB at a time) into the new file path and close
 * it; the file is removed after. Aborts the run when the write fails. */
static double timed_write(const char *path, double bytes) {
  size_t piece = (size_t)4 << 20;
  char *buf = malloc(piece);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(buf, 0x5a, piece);
  double t0 = MPI_Wtime();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), ok = fd >= 0;
  for (double left = bytes; ok && left > 0; left -= (double)piece) {
    size_t n = left < (double)piece ? (size_t)left : piece;
    ok = write(fd, buf, n) == (ssize_t)n;
  }
  if (fd >= 0 && close(fd) != 0) ok = 0;
  double t = MPI_Wtime() - t0;
  unlink(path);
  free(buf);
  if (!ok) {
    fprintf(stderr, "checkpoint bench: cannot write %s for the disk ceiling\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return t;
}

/* The disk ceiling: seconds for rank 0 to write bytes into a new file in dir (all: every rank
 * its share into a file of its own, at the same time, the slowest rank's time), median of 3. */
static double disk_write(const char *dir, double bytes, int all) {
  double t[3] = {0, 0, 0};
  char path[4300];
  if (all) snprintf(path, sizeof path, "%s/disk_ceiling.%d.bin", dir, rank);
  else snprintf(path, sizeof path, "%s/disk_ceiling.bin", dir);
  for (int r = 0; r < 3; ++r) {
    if (all) {
      MPI_Barrier(MPI_COMM_WORLD);
      double mine = timed_write(path, bytes / nranks);
      MPI_Allreduce(&mine, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    } else if (rank == 0) {
      t[r] = timed_write(path, bytes);
    }
  }
  qsort(t, 3, sizeof *t, cmp_double);
  MPI_Bcast(&t[1], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t[1];
}

static void host_describe(char *buf, size_t n) {
  char cpu[200];
  cpu_model(cpu, sizeof cpu);
  snprintf(buf, n, "%s, %d OpenMP threads per rank", cpu, omp_get_max_threads());
}

static int usage(void) {
  if (rank == 0)
    fprintf(stderr, "usage: checkpoint [--n N>=8] [--every K>=1] [--ckpts C>=1] "
                    "[--reps R>=1] [--backend host|cuda] [--io auto|serial|parts] [--dir DIR] "
                    "[--json PATH] [--keep]\n");
  return 2;
}

static int bench_main(int argc, char **argv, int default_device) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  bench_opts o = {.n = 0, .every = 0, .ckpts = 4, .device = default_device, .reps = 1, .io = "auto",
                  .dir = "bench_checkpoint_out"};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--keep")) o.keep = 1;
    else if (!v) { MPI_Finalize(); return usage(); }
    else if (!strcmp(a, "--n")) o.n = atoi(argv[++i]);
    else if (!strcmp(a, "--every")) o.every = atoi(argv[++i]);
    else if (!strcmp(a, "--ckpts")) o.ckpts = atoi(argv[++i]);
    else if (!strcmp(a, "--reps")) o.reps = atoi(argv[++i]);
    else if (!strcmp(a, "--dir")) o.dir = argv[++i];
    else if (!strcmp(a, "--json")) o.json = argv[++i];
    else if (!strcmp(a, "--backend")) o.device = !strcmp(argv[++i], "cuda");
    else if (!strcmp(a, "--io") &&
             (!strcmp(v, "auto") || !strcmp(v, "serial") || !strcmp(v, "parts")))
      o.io = argv[++i];
    else { MPI_Finalize(); return usage(); }
  }
  if (!o.n) o.n = o.device ? 512 : 128;
  if (!o.every) o.every = o.device ? 500 : 100;
  if (o.n < 8 || o.every < 1 || o.ckpts < 1 || o.reps < 1) { MPI_Finalize(); return usage(); }

  char out[3][4200];
  const char *label[3] = {"none", "async", "sync"};
  tsr_run_result r[3];
  for (int m = 0; m < 3; ++m) snprintf(out[m], sizeof out[m], "%s/%s", o.dir, label[m]);
  /* on a shared machine the three kinds of run take turns, and each keeps its fastest */
  for (int rep = 0; rep < o.reps; ++rep)
    for (int m = 0; m < 3; ++m) {
      tsr_run_result x = run_case(&o, m, out[m]);
      if (rep == 0 || x.wall < r[m].wall) r[m] = x;
    }
  int bad = 0;
  for (int m = 1; m < 3; ++m)
    if (r[m].l2[0] != r[0].l2[0] || r[m].min[0] != r[0].min[0] || r[m].max[0] != r[0].max[0])
      bad = 1;

  /* the ceiling: the staged bytes copied plainly, all ranks at once as in the run */
  MPI_Barrier(MPI_COMM_WORLD);
  double copy_s = max_over_ranks(ceiling_copy((size_t)r[1].ckpt_stage_bytes, o.device, 11));

  /* restart reads of the last checkpoint: the background run's cold, the synchronous run's warm;
   * their bits must agree */
  char path[2][4300];
  int64_t last = (int64_t)o.ckpts * o.every;
  tsr_checkpoint_path(path[0], sizeof path[0], out[1], last);
  tsr_checkpoint_path(path[1], sizeof path[1], out[2], last);
  size_t cells = (size_t)o.n * o.n * o.n;
  double *a = malloc(cells * sizeof(double)), *b = malloc(cells * sizeof(double));
  if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
  double disk_s = disk_write(out[1], r[1].ckpt_file_bytes, !strcmp(io_kind(&o), "parts"));
  double read_cold = read_ckpt(&o, path[0], 1, a);
  double read_warm = read_ckpt(&o, path[1], 0, b);
  if (memcmp(a, b, cells * sizeof(double)) != 0) bad = 1;
  free(a);
  free(b);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  if (rank == 0) {
    const tsr_run_result *A = &r[1], *S = &r[2], *N = &r[0];
    double k = A->ckpt_count, bytes = A->ckpt_file_bytes;
    double stall = A->ckpt_stall / k, ratio = stall / copy_s, ratio_max = A->ckpt_stall_max / copy_s;
    double write_gbs = bytes / (A->ckpt_write / k) / 1e9;
    double share_async = (A->wall - N->wall) / A->wall, share_sync = (S->wall - N->wall) / S->wall;
    double stall_share = (A->ckpt_stall + A->ckpt_final_wait) / A->wall;
    char where[320], commit[64], host[128] = "";
    ceiling_describe(o.device, where, sizeof where);
    commit_of(commit, sizeof commit);
    gethostname(host, sizeof host - 1);
    printf("checkpoint: heat 3D, fp64, %d^3 cells per rank, %d rank%s (%s), a checkpoint every %d "
           "steps, %d checkpoints, %s backend, %s HDF5 writes; commit %s\n",
           o.n, nranks, nranks > 1 ? "s" : "", where, o.every, A->ckpt_count,
           o.device ? "cuda" : "host",
           io_kind(&o), commit);
    printf("  state per rank %.1f MB staged (ghosts included), %.1f MB per file\n",
           A->ckpt_stage_bytes / 1e6, bytes / 1e6);
    printf("  %-44s %10s %10s\n", "per checkpoint", "background", "sync");
    printf("  %-44s %10.4f %10.4f\n", "stall of the step loop, mean (s)", stall, S->ckpt_stall / k);
    printf("  %-44s %10.4f %10.4f\n", "stall, longest (s)", A->ckpt_stall_max, S->ckpt_stall_max);
    printf("  %-44s %10.4f %10s\n", "  of which waiting for the previous write (s)", A->ckpt_wait / k, "-");
    printf("  %-44s %10.4f %10.4f\n", "  of which the staging copy (s)", A->ckpt_copy / k, S->ckpt_copy / k);
    printf("  %-44s %10.4f\n", "plain copy of the same bytes: ceiling (s)", copy_s);
    printf("  %-44s %10.2f %10s\n", "stall / ceiling (goal <= 1.2)", ratio, "");
    printf("  %-44s %10.2f %10.2f\n", "write throughput (GB/s, chunks + HDF5)", write_gbs,
           bytes / (S->ckpt_write / k) / 1e9);
    printf("  %-44s %10.2f\n",
           strcmp(io_kind(&o), "parts") ? "disk ceiling: plain write() of the file (GB/s)"
                                        : "disk ceiling: every rank its share at once (GB/s)",
           bytes / disk_s / 1e9);
    printf("  %-44s %10.2f / %.2f\n", "restart read (GB/s, cold / page cache)", bytes / read_cold / 1e9,
           bytes / read_warm / 1e9);
    printf("  %-44s %10.4f %10.4f\n", "wait for the last write after the loop (s)", A->ckpt_final_wait,
           S->ckpt_final_wait);
    printf("  run: %.3f s without checkpoints, %.3f s background (checkpoints %.1f%% of it, stalls "
           "%.1f%%), %.3f s synchronous (checkpoints %.1f%% of it)\n",
           N->wall, A->wall, 100 * share_async, 100 * stall_share, S->wall, 100 * share_sync);
    printf("  results %s\n", bad ? "WRONG: runs or checkpoints differ" : "checked: the three runs and both checkpoints agree bit for bit");
    if (o.json) {
      FILE *fp = fopen(o.json, "w");
      if (fp) {
        fprintf(fp,
                "{\"bench\": \"checkpoint\", \"version\": \"%s\", \"commit\": \"%s\", "
                "\"machine\": {\"host\": \"%s\", \"copy_on\": \"%s\", \"ranks\": %d}, "
                "\"config\": {\"model\": \"heat\", \"dim\": 3, \"precision\": \"fp64\", "
                "\"cells_per_rank\": [%d, %d, %d], \"every\": %d, \"checkpoints\": %d, "
                "\"steps\": %lld, \"reps\": %d, \"backend\": \"%s\", \"mpi_thread_multiple\": %s, "
                "\"io\": \"%s\", \"omp_threads_per_rank\": %d}, "
                "\"staged_bytes_per_rank\": %.0f, \"file_field_bytes\": %.0f, "
                "\"stall_mean_s\": %.6e, \"stall_max_s\": %.6e, \"wait_previous_mean_s\": %.6e, "
                "\"staging_copy_mean_s\": %.6e, \"ceiling_copy_s\": %.6e, "
                "\"stall_over_ceiling\": %.4f, \"stall_max_over_ceiling\": %.4f, \"goal\": 1.2, "
                "\"write_GBps\": %.4f, \"disk_ceiling_GBps\": %.4f, \"read_cold_GBps\": %.4f, \"read_warm_GBps\": %.4f, "
                "\"final_wait_s\": %.6e, \"wall_none_s\": %.6e, \"wall_async_s\": %.6e, "
                "\"wall_sync_s\": %.6e, \"share_async\": %.4f, \"stall_share_async\": %.4f, "
                "\"share_sync\": %.4f, \"sync_stall_mean_s\": %.6e, \"sync_write_GBps\": %.4f, "
                "\"correct\": %s}\n",
                TSR_VERSION, commit, host, where, nranks, o.n, o.n, o.n, o.every, A->ckpt_count,
                (long long)A->steps, o.reps, o.device ? "cuda" : "host", A->ckpt_async ? "true" : "false",
                io_kind(&o), omp_get_max_threads(),
                A->ckpt_stage_bytes, bytes, stall, A->ckpt_stall_max, A->ckpt_wait / k,
                A->ckpt_copy / k, copy_s, ratio, ratio_max, write_gbs, bytes / disk_s / 1e9,
                bytes / read_cold / 1e9,
                bytes / read_warm / 1e9, A->ckpt_final_wait, N->wall, A->wall, S->wall,
                share_async, stall_share, share_sync, S->ckpt_stall / k,
                bytes / (S->ckpt_write / k) / 1e9, bad ? "false" : "true");
        fclose(fp);
      }
    }
    if (!A->ckpt_async) printf("  note: checkpoints were not asynchronous (MPI without MPI_THREAD_MULTIPLE)\n");
  }
  if (!o.keep && rank == 0)
    for (int m = 0; m < 3; ++m) {
      char cmd[4400 * 3];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", out[m]);
      if (system(cmd) != 0) fprintf(stderr, "checkpoint bench: could not remove %s\n", out[m]);
      if (m == 2) rmdir(o.dir); /* only when empty */
    }
  MPI_Finalize();
  return bad ? 1 : 0;
}
