/* The tessera command: parses the command line, loads and validates the case, and runs or
 * checks it, or describes the machine. The only place that decides how the process ends. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case.h"
#include "io/text.h"
#include "solver/env.h"
#include "solver/fault.h"
#include "solver/implicit/implicit.h"
#include "solver/info.h"
#include "solver/run.h"
#include "solver/stop.h"
#include "solver/threads.h"
#include "solver/supervise.h"
#include "tsr_version.h"

enum { EXIT_RUN_FAILED = 1, EXIT_BAD_INPUT = 2 };

static const char usage[] =
    "usage: tessera run CASE.yaml [--set KEY=VALUE]... [--out DIR] [--backend B]\n"
    "                   [--restart latest|FILE [--restart-force]] [--walltime T]\n"
    "                   [--inject-fault SPEC] [-PETSC_OPTION [VALUE]]...\n"
    "       tessera check CASE.yaml [--ranks N] [--set KEY=VALUE]...\n"
    "       tessera info\n"
    "       tessera probe\n"
    "       tessera supervise [--max-restarts N] -- LAUNCH COMMAND...\n"
    "       tessera --help | --version\n"
    "\n"
    "commands:\n"
    "  run     run the case; under `mpirun -np N` the grid is split over N ranks.\n"
    "          Writes final.h5, final.xmf and report.json into the output directory.\n"
    "  check   validate the case and print the plan for N ranks (default: the ranks it is\n"
    "          launched on) without running: box per rank, cells, neighbours, halo bytes\n"
    "          per step, memory per rank.\n"
    "  info    print the version, the build (CUDA on/off), the MPI, HDF5, libyaml, muparser\n"
    "          and OpenMP in use, and this node's GPUs: CUDA and NCCL versions, each GPU,\n"
    "          peer access and links between them. Takes no case file.\n"
    "  probe   count the GPUs that work on every node of the launch (one line per node and\n"
    "          a total); tessera supervise runs it through the launcher before relaunching.\n"
    "  supervise  run LAUNCH COMMAND (e.g. mpirun -np 4 tessera run case.yaml) and, when it\n"
    "          fails (exit code other than 0, 2 and 4), relaunch it with --restart latest, up to\n"
    "          N times (default 3), on fewer ranks when GPUs were lost; see README.md.\n"
    "\n"
    "options:\n"
    "  --set KEY=VALUE  override a case key, e.g. --set time.end=0.5 --set grid.cells=[64,64]\n"
    "                   (validated like the file; may be repeated)\n"
    "  --out DIR        output directory (default: the case's output.dir, else out/<name>)\n"
    "  --backend B      host, cuda or auto (GPUs when every rank sees one); same as\n"
    "                   --set backend=B\n"
    "  --restart R      (run) start from a checkpoint instead of the initial conditions:\n"
    "                   latest (the newest in the output directory that reads) or a file;\n"
    "                   the case and --set options must be the ones that wrote it, except\n"
    "                   decomposition.*, output.* and backend (any rank count works);\n"
    "                   otherwise it is refused with the keys that differ\n"
    "  --restart-force  (run) restart even from a checkpoint of a case whose keys differ\n"
    "                   (a warning lists them); never across another grid or model\n"
    "  --walltime T     (run) stop cleanly before T ([D-]HH:MM:SS, MM:SS or seconds from the\n"
    "                   start): a checkpoint is written at a step agreed by every rank, with\n"
    "                   a margin measured from the run's own checkpoint writes, and the run\n"
    "                   exits with status 4; SIGTERM, SIGINT and SIGUSR1 do the same (a\n"
    "                   second signal ends it at once). Continue with --restart latest\n"
    "  --ranks N        (check) the rank count to plan for\n"
    "  --inject-fault rank=R,step=S,kind=exit|hang|corrupt|enospc|graph|signal|signal2\n"
    "                   (run; FOR TESTS ONLY) make rank R fail after step S: exit, hang,\n"
    "                   damage the checkpoint of step S and exit, or meet a full disk writing\n"
    "                   it; or fail to capture the step to S into a CUDA graph; or send itself\n"
    "                   SIGTERM (signal2: twice) after step S (0: before the first). Fires\n"
    "                   only in a first launch (TESSERA_ATTEMPT unset or 1)\n"
    "  -h, --help       this text\n"
    "  --version        print the version\n"
    "  -OPTION [VALUE]  (run, method: implicit) after the case file: a PETSc option, e.g.\n"
    "                   -ksp_type cg -pc_type gamg -ksp_monitor -log_view; these win over\n"
    "                   the case's petsc: section. An option nothing reads is refused\n"
    "\n"
    "The case-file reference is in README.md, with the environment variables tessera\n"
    "reads (Command line); a value of one that does not parse is refused.\n";

typedef struct {
  const char *command, *case_path, *out_dir, *restart, *fault, *walltime;
  int ranks;
  int restart_force;
  int nset;
  char **sets;
  int npetsc;     /* PETSc options after the case file, with their values */
  char **petsc;
} cli;

static int say(int rank, int code, const char *fmt, const char *a, const char *b) {
  if (rank == 0) {
    fprintf(stderr, "tessera: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
  }
  return code;
}

/* Returns -1 when parsed, else the exit code (0 for --help/--version). */
static int parse(int argc, char **argv, int rank, cli *o) {
  memset(o, 0, sizeof *o);
  o->sets = calloc((size_t)argc + 1, sizeof(char *));
  o->petsc = calloc((size_t)argc + 1, sizeof(char *));
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
      if (rank == 0) fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(a, "--version")) {
      if (rank == 0) printf("tessera %s\n", TSR_VERSION);
      return 0;
    }
    if (!strcmp(a, "--backend")) {
      if (i + 1 >= argc)
        return say(rank, EXIT_BAD_INPUT, "option %s needs a value: host, cuda or auto%s", a, "");
      /* the same key as the case's, validated the same way */
      static char buf[64];
      snprintf(buf, sizeof buf, "backend=%s", argv[++i]);
      o->sets[o->nset++] = buf;
    } else if (!strcmp(a, "--restart-force")) {
      o->restart_force = 1;
    } else if (!strcmp(a, "--restart") || !strncmp(a, "--restart=", 10)) {
      if (a[9] == '=') o->restart = a + 10;
      else if (i + 1 < argc) o->restart = argv[++i];
      if (!o->restart || !*o->restart)
        return say(rank, EXIT_BAD_INPUT, "option --restart needs a value: latest or a checkpoint file%s%s", "", "");
    } else if (!strcmp(a, "--inject-fault") || !strncmp(a, "--inject-fault=", 15)) {
      if (a[14] == '=') o->fault = a + 15;
      else if (i + 1 < argc) o->fault = argv[++i];
      if (!o->fault || !*o->fault)
        return say(rank, EXIT_BAD_INPUT, "option --inject-fault needs a value: rank=R,step=S,kind=exit|hang|corrupt|enospc|graph|signal|signal2%s%s", "", "");
    } else if (!strcmp(a, "--walltime") || !strncmp(a, "--walltime=", 11)) {
      if (a[10] == '=') o->walltime = a + 11;
      else if (i + 1 < argc) o->walltime = argv[++i];
      double sec;
      if (!o->walltime || tsr_stop_parse_walltime(o->walltime, &sec))
        return say(rank, EXIT_BAD_INPUT, "--walltime: expected [D-]HH:MM:SS, MM:SS or seconds "
                   "(the job's time limit, e.g. 01:30:00: more than 0, minutes and seconds below "
                   "60, hours after days below 24, each number below 100000000), got '%s'%s",
                   o->walltime ? o->walltime : "", "");
    } else if (!strcmp(a, "--set") || !strcmp(a, "--out") || !strcmp(a, "--ranks")) {
      if (i + 1 >= argc)
        return say(rank, EXIT_BAD_INPUT, "option %s needs a value (see tessera --help)%s", a, "");
      const char *v = argv[++i];
      if (!strcmp(a, "--set")) o->sets[o->nset++] = (char *)v;
      else if (!strcmp(a, "--out")) o->out_dir = v;
      else {
        long n;
        if (!tsr_text_count(v, 1, 1000000, &n))
          return say(rank, EXIT_BAD_INPUT, "--ranks: expected a whole number from 1 to 1000000, got '%s'%s", v, "");
        o->ranks = (int)n;
      }
    } else if (!strncmp(a, "--set=", 6)) {
      o->sets[o->nset++] = (char *)a + 6;
    } else if (!strncmp(a, "--out=", 6)) {
      o->out_dir = a + 6;
    } else if (o->case_path && tsr_implicit_is_option(a)) {
      /* a PETSc option and its value (a word that is no option; a negative number is one) */
      o->petsc[o->npetsc++] = (char *)a;
      if (i + 1 < argc && (argv[i + 1][0] != '-' || !tsr_implicit_is_option(argv[i + 1])) &&
          strncmp(argv[i + 1], "--", 2) != 0)
        o->petsc[o->npetsc++] = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      if (tsr_implicit_is_option(a))
        return say(rank, EXIT_BAD_INPUT, "unknown option '%s': PETSc options (method implicit) "
                   "go after the case file, as in tessera run case.yaml %s ...", a, a);
      return say(rank, EXIT_BAD_INPUT, "unknown option '%s' (see tessera --help)%s", a, "");
    } else if (!o->command) {
      if (strcmp(a, "run") && strcmp(a, "check") && strcmp(a, "info") && strcmp(a, "probe"))
        return say(rank, EXIT_BAD_INPUT, "unknown command '%s': expected run, check, info, probe or supervise (see tessera --help)%s", a, "");
      o->command = a;
    } else if (!o->case_path) {
      o->case_path = a;
    } else {
      return say(rank, EXIT_BAD_INPUT, "unexpected argument '%s' (one case file per run)%s", a, "");
    }
  }
  if (!o->command) {
    if (rank == 0) fputs(usage, stderr);
    return EXIT_BAD_INPUT;
  }
  if (!strcmp(o->command, "info") || !strcmp(o->command, "probe")) {
    if (o->case_path)
      return say(rank, EXIT_BAD_INPUT, "%s takes no case file, got '%s'", o->command, o->case_path);
    if (o->nset || o->out_dir || o->ranks || o->restart || o->restart_force || o->fault ||
        o->walltime)
      return say(rank, EXIT_BAD_INPUT, "%s takes no options (--set, --out, --ranks belong to run and check)%s", o->command, "");
    return -1;
  }
  if (!o->case_path)
    return say(rank, EXIT_BAD_INPUT, "%s needs a case file: tessera %s CASE.yaml", o->command, o->command);
  if (o->ranks && strcmp(o->command, "check"))
    return say(rank, EXIT_BAD_INPUT, "--ranks is an option of check; run takes its ranks from mpirun -np N%s", "", "");
  if (o->restart && strcmp(o->command, "run"))
    return say(rank, EXIT_BAD_INPUT, "--restart is an option of run%s%s", "", "");
  if (o->restart_force && !o->restart)
    return say(rank, EXIT_BAD_INPUT, "--restart-force goes with --restart latest|FILE (it lets a "
               "restart continue a checkpoint of a case that differs)%s%s", "", "");
  if (o->walltime && strcmp(o->command, "run"))
    return say(rank, EXIT_BAD_INPUT, "--walltime is an option of run%s%s", "", "");
  if (o->fault && strcmp(o->command, "run"))
    return say(rank, EXIT_BAD_INPUT, "--inject-fault is an option of run%s%s", "", "");
  if (o->npetsc && strcmp(o->command, "run"))
    return say(rank, EXIT_BAD_INPUT, "%s: PETSc options are for tessera run (method implicit)%s",
               o->petsc[0], "");
  if (o->out_dir && !*o->out_dir)
    return say(rank, EXIT_BAD_INPUT, "--out: expected a directory, got an empty string%s", "", "");
  return -1;
}

static int fail(int rank, tsr_err err) {
  if (rank == 0) {
    const char *m = tsr_err_message();
    fprintf(stderr, "tessera: %s: %s\n", tsr_err_name(err), *m ? m : "(no message)");
  }
  return err == TSR_ERR_INPUT ? EXIT_BAD_INPUT : EXIT_RUN_FAILED;
}

int main(int argc, char **argv) {
  /* the supervisor launches MPI jobs; it is not one of their processes */
  if (argc > 1 && !strcmp(argv[1], "supervise")) return tsr_supervise_main(argc - 1, argv + 1);
  /* threads call MPI beside the step loop (the background checkpoint writer, the watchdog);
   * where the library gives less, those fall back (MPI_Query_thread tells them) */
  /* Open MPI 4.1's lockedfile component (shared file pointers, which tessera does not use)
   * formats "<file>.locktest.<rank>" into 256 bytes at every MPI_File_open: an output path
   * past about 230 bytes aborted the run at its first HDF5 file. A user's own choice stands. */
  setenv("OMPI_MCA_sharedfp", "^lockedfile", 0);
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  /* signals end the process without temporary files, and from tsr_stop_arm ask for a clean
   * stop (solver/stop.h): the library's own handlers, if any, are installed by now */
  tsr_stop_install();
  /* before any OpenMP region: ranks that share CPUs share them out (OMP_NUM_THREADS rules) */
  tsr_threads threads;
  tsr_threads_pick(MPI_COMM_WORLD, &threads);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  cli o;
  int code = parse(argc, argv, rank, &o);
  tsr_case *c = NULL;
  if (code < 0) {
    tsr_err err = tsr_run_agree(MPI_COMM_WORLD, tsr_env_check(0));
    if (err) code = fail(rank, err);
  }
  if (code < 0 && !strcmp(o.command, "info")) {
    tsr_err err = tsr_info_print(MPI_COMM_WORLD, stdout);
    code = err ? fail(rank, err) : 0;
  } else if (code < 0 && !strcmp(o.command, "probe")) {
    tsr_err err = tsr_info_probe(MPI_COMM_WORLD, stdout);
    code = err ? fail(rank, err) : 0;
  } else if (code < 0) {
    tsr_fault fault = {0};
    tsr_err err = o.fault ? tsr_fault_parse(o.fault, &fault) : TSR_OK;
    if (!err) err = tsr_case_load(o.case_path, o.nset, o.sets, &c);
    if (!err) err = tsr_case_check_expressions(c);
    if (!err && o.npetsc && c->method != TSR_METHOD_IMPLICIT)
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "%s: PETSc options are for method: implicit, and this case's method is "
                        "%s; remove them or add method: implicit", o.petsc[0],
                        c->method == TSR_METHOD_PINN ? "pinn" : "explicit");
    /* PETSc starts for implicit runs only, on the run's communicator, with the command line's
     * options (the case's go in when the run sets its solver up) */
    if (!err && c->method == TSR_METHOD_IMPLICIT && !strcmp(o.command, "run"))
      err = tsr_implicit_init(MPI_COMM_WORLD, o.npetsc, o.petsc);
    err = tsr_run_agree(MPI_COMM_WORLD, err);
    if (err) {
      code = fail(rank, err);
    } else if (!strcmp(o.command, "check")) {
      err = rank == 0 ? tsr_run_check(c, o.ranks ? o.ranks : size, stdout) : TSR_OK;
      err = tsr_run_agree(MPI_COMM_WORLD, err);
      code = err ? fail(rank, err) : 0;
    } else {
      tsr_run_opts ro = tsr_run_opts_default();
      ro.out_dir = o.out_dir;
      ro.restart = o.restart;
      ro.restart_force = o.restart_force;
      ro.fault = o.fault ? &fault : NULL;
      tsr_run_result res;
      double limit = 0.0;
      if (o.walltime) tsr_stop_parse_walltime(o.walltime, &limit);
      tsr_stop_set_walltime(limit);
      tsr_stop_arm();
      err = tsr_run(c, MPI_COMM_WORLD, &ro, &res);
      if (err) {
        code = fail(rank, err);
      } else if (res.stopped) {
        code = TSR_STOP_EXIT_CODE;
      } else if (res.pinn) {
        if (rank == 0) {
          /* a case without exact has no error to print (rel_l2 is NaN there) */
          char l2[64] = "";
          if (isfinite(res.rel_l2)) snprintf(l2, sizeof l2, ", relative L2 error %.4e", res.rel_l2);
          printf("done: %lld iterations in %.3f s (%.4g it/s), loss %.4e%s; output in %s\n",
                 (long long)res.steps, res.wall,
                 res.wall > 0 ? (double)(res.steps - res.first_step) / res.wall : 0.0, res.loss,
                 l2, o.out_dir ? o.out_dir : c->output.dir);
        }
        code = 0;
      } else {
        if (rank == 0)
          printf("done: %lld steps to t=%.6g in %.3f s (%.4g cells/s) on %d rank%s; output in %s\n",
                 (long long)res.steps, res.t_final, res.wall, res.cells_per_s, size,
                 size == 1 ? "" : "s", o.out_dir ? o.out_dir : c->output.dir);
        code = 0;
      }
    }
  }
  /* what info, check and --help print is their result: lost to a full disk (> file) it is a
   * failure; a run's result is its files, and its progress lines are not worth a relaunch */
  if (rank == 0 && code == 0 && !(o.command && !strcmp(o.command, "run"))) {
    errno = 0;
    if (fflush(stdout) || ferror(stdout)) {
      fprintf(stderr, "tessera: writing the standard output failed (%s); what it printed is "
              "incomplete\n", errno ? strerror(errno) : "a write error");
      code = EXIT_RUN_FAILED;
    }
  }
  tsr_case_destroy(&c);
  free(o.sets);
  free(o.petsc);
  tsr_implicit_finalize(); /* PETSc ends before MPI (its -log_view summary prints here) */
  MPI_Finalize();
  return code;
}
