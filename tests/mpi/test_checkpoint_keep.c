/* Which checkpoints stay on disk (output.keep) now that rank 0 removes the old ones in a thread
 * of its own after each write (solver/ckpt_writer.c), off the step loop's path: (1)
 * tsr_checkpoint_prune keeps the newest `keep` and never the file that `latest` names, even
 * when that is not among them; (2) runs with background and with synchronous checkpoints
 * (5 of them, keep 2, heat 3D on a small grid) end with exactly the newest two, latest naming
 * the newest, and both hold the same bits; the files are final when tsr_run returns; (3) the
 * candidates of --restart latest are what latest names, then the newest. Exits
 * non-zero (MPI_Abort) on a failure. */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/case.h"
#include "io/checkpoint.h"
#include "solver/run.h"

static int g_rank, g_size;
static char g_dir[256];

#define TSR_CHECK_SCRATCH
#include "tests/check.h"

static int exists(const char *dir, const char *name) {
  char p[1000];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &st) == 0;
}

static void touch(const char *dir, const char *name, const char *text) {
  char p[1000];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *fp = fopen(p, "w");
  CHECK(fp && fputs(text, fp) >= 0 && fclose(fp) == 0, "cannot write %s", p);
}

/* Checkpoint files (checkpoint_*.h5) in dir. */
static int count(const char *dir) { return tsr_checkpoint_count(MPI_COMM_SELF, dir); }

/* (1), on rank 0 */
static void prune_checks(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/prune", g_dir);
  CHECK(mkdir(d, 0755) == 0, "mkdir %s", d);
  const char *names[] = {"checkpoint_00000003.h5", "checkpoint_00000006.h5",
                         "checkpoint_00000009.h5", "checkpoint_00000012.h5"};
  for (int i = 0; i < 4; ++i) touch(d, names[i], "x");
  touch(d, "checkpoint_00000015.h5.tmp", "x"); /* a write in flight: not a checkpoint */
  /* latest names an older one (a restart from it, say): it stays beside the newest */
  touch(d, "latest", "checkpoint_00000006.h5\n");
  tsr_checkpoint_prune(d, 1);
  CHECK(count(d) == 2 && exists(d, names[3]) && exists(d, names[1]) && exists(d, "latest") &&
            exists(d, "checkpoint_00000015.h5.tmp"),
        "keep 1 with latest naming step 6: %d checkpoints left", count(d));
  touch(d, "latest", "checkpoint_00000012.h5\n");
  tsr_checkpoint_prune(d, 1);
  CHECK(count(d) == 1 && exists(d, names[3]), "keep 1: %d checkpoints left", count(d));
  for (int i = 0; i < 3; ++i) touch(d, names[i], "x");
  tsr_checkpoint_prune(d, 3);
  CHECK(count(d) == 3 && exists(d, names[1]) && !exists(d, names[0]), "keep 3: %d left", count(d));
  tsr_checkpoint_prune(d, 0); /* at least one stays */
  CHECK(count(d) == 1 && exists(d, names[3]), "keep 0: %d left", count(d));
  char p[600];
  const char *left[] = {names[3], "latest", "checkpoint_00000015.h5.tmp"};
  for (int i = 0; i < 3; ++i) {
    snprintf(p, sizeof p, "%s/%s", d, left[i]);
    remove(p);
  }
  CHECK(rmdir(d) == 0, "rmdir %s", d);
}

/* (3), on rank 0: --restart latest's candidates among more checkpoints than it lists (a run
 * with a large keep): what latest names, then the newest, however the directory orders them */
static void candidate_checks(void) {
  char d[300], name[32];
  snprintf(d, sizeof d, "%s/cand", g_dir);
  CHECK(mkdir(d, 0755) == 0, "mkdir %s", d);
  enum { N = 300, MAX = 256 };
  for (int i = 0; i < N; ++i) {
    snprintf(name, sizeof name, "checkpoint_%08d.h5", (i * 7) % N); /* not in step order */
    touch(d, name, "x");
  }
  touch(d, "latest", "checkpoint_00000010.h5\n");
  static char cand[MAX][64];
  int named = 0, n = tsr_checkpoint_candidates(d, cand, MAX, &named);
  CHECK(n == MAX && named && !strcmp(cand[0], "checkpoint_00000010.h5") &&
            !strcmp(cand[1], "checkpoint_00000299.h5") &&
            !strcmp(cand[MAX - 1], "checkpoint_00000045.h5"),
        "candidates: %d, named %d, %s, %s, %s", n, named, cand[0], cand[1], cand[MAX - 1]);
  touch(d, "latest", "final.h5\n"); /* not a checkpoint's name: none named */
  n = tsr_checkpoint_candidates(d, cand, 3, &named);
  CHECK(n == 3 && !named && !strcmp(cand[0], "checkpoint_00000299.h5") &&
            !strcmp(cand[2], "checkpoint_00000297.h5"),
        "candidates, latest naming no checkpoint: %d, named %d, %s", n, named, cand[0]);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
  CHECK(system(cmd) == 0, "cannot remove %s", d);
}

/* (2): one run, background (async 1) or synchronous checkpoints every 2 steps of 11, keep 2 */
static void run_keep(int async, const char *out) {
  char text[1024];
  snprintf(text, sizeof text,
           "name: keep\nmodel: heat\ngrid: {cells: [12, 10, %d], periodic: true}\n"
           "params: {kappa: 1}\ninitial: {u: \"sin(2*pi*x)*sin(2*pi*y)*sin(2*pi*z)\"}\n"
           "time: {scheme: euler, dt: auto, steps: 11}\nbackend: host\n"
           "output: {progress: none, checkpoint_every: 2, keep: 2, checkpoint_async: %s}\n",
           4 * g_size + 1, async ? "true" : "false");
  tsr_case *c = NULL;
  CHECK(tsr_case_load_string("keep.yaml", text, 0, NULL, &c) == TSR_OK, "case");
  tsr_run_opts ro = tsr_run_opts_default();
  ro.out_dir = out;
  ro.quiet = 1;
  tsr_run_result res;
  CHECK(tsr_run(c, MPI_COMM_WORLD, &ro, &res) == TSR_OK, "run (async %d)", async);
  tsr_case_destroy(&c);
  CHECK(res.ckpt_count == 5, "%d checkpoints written", res.ckpt_count);
  /* right after tsr_run: the removal of the old ones has finished */
  if (g_rank == 0) {
    char line[64] = "", p[1000];
    snprintf(p, sizeof p, "%s/latest", out);
    FILE *fp = fopen(p, "r");
    CHECK(fp && fgets(line, sizeof line, fp), "no %s", p);
    fclose(fp);
    CHECK(count(out) == 2 && exists(out, "checkpoint_00000010.h5") &&
              exists(out, "checkpoint_00000008.h5") && !strcmp(line, "checkpoint_00000010.h5\n"),
          "async %d: %d checkpoints, latest '%s'", async, count(out), line);
  }
}

/* The field of two checkpoints, read back whole on every rank, is the same. */
static void same_bits(const char *a, const char *b) {
  int cells[3] = {12, 10, 4 * g_size + 1};
  tsr_box box = {{0, 0, 0}, {cells[0], cells[1], cells[2]}};
  size_t n = (size_t)cells[0] * cells[1] * cells[2];
  double *u = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
  CHECK(u && v, "memory");
  CHECK(tsr_output_read_field(MPI_COMM_WORLD, a, "u", &box, u, NULL) == TSR_OK &&
            tsr_output_read_field(MPI_COMM_WORLD, b, "u", &box, v, NULL) == TSR_OK,
        "read %s and %s", a, b);
  CHECK(memcmp(u, v, n * sizeof(double)) == 0, "%s and %s differ", a, b);
  free(u);
  free(v);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  check_scratch_dir(g_dir, sizeof g_dir, "out_test_checkpoint_keep");
  if (g_rank == 0) prune_checks();
  if (g_rank == 0) candidate_checks();
  char out[2][400];
  for (int a = 0; a < 2; ++a) {
    snprintf(out[a], sizeof out[a], "%s/%s", g_dir, a ? "async" : "sync");
    run_keep(a, out[a]);
  }
  char pa[500], pb[500];
  snprintf(pa, sizeof pa, "%s/checkpoint_00000010.h5", out[0]);
  snprintf(pb, sizeof pb, "%s/checkpoint_00000010.h5", out[1]);
  same_bits(pa, pb);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    char cmd[1000];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0, "cannot remove %s", g_dir);
  }
  if (g_rank == 0) printf("test_checkpoint_keep: all checks passed on %d ranks\n", g_size);
  MPI_Finalize();
  return 0;
}
