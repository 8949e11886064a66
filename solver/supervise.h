/* tessera supervise [--max-restarts N] -- LAUNCH COMMAND...: runs a launch command (mpirun,
 * srun, ... running tessera run) and, when it fails, relaunches it from the latest good
 * checkpoint. Not an MPI process: main() dispatches here before MPI_Init.
 *
 * Exit code 0 ends it; 2 (bad input) is not retried; any other code, or death by a signal
 * other than one sent to the supervisor, is a run failure: the command runs again with
 * --restart latest (replacing any --restart it had), at most N more times (default 3), with
 * TESSERA_ATTEMPT=k in its environment (faults from --inject-fault fire only in attempt 1).
 * Before the first launch and before each relaunch it counts the usable GPUs of every node the
 * job runs on, with a probe launched the same way (the launch command with `probe` in place of
 * `run` and what follows it: tsr_info_probe); when fewer remain than the ranks launched, the
 * launcher's -np/-n/-c/--ntasks N is rewritten to what is left. SIGINT, SIGTERM and SIGHUP
 * are forwarded to the command and end supervision.
 * It exits with the last attempt's code (128 + signal for a command killed by a signal). */
#ifndef TSR_SUPERVISE_H
#define TSR_SUPERVISE_H

#include <stddef.h>

/* The whole command: argv[0] is "supervise". Prints on stderr; returns the exit code. */
int tsr_supervise_main(int argc, char **argv);

/* This process's attempt under tessera supervise (TESSERA_ATTEMPT), 1 when unsupervised. */
int tsr_supervise_attempt(void);

typedef struct {
  int max_restarts; /* default 3 */
  int first;        /* index in argv of the launch command (after "--") */
} tsr_supervise_opts;

/* Parses supervise's own arguments. Returns 0; -1 after printing the help (--help); or 2
 * after printing one message on stderr (missing --, empty command, a bad --max-restarts, an
 * unknown option). */
int tsr_supervise_parse(int argc, char **argv, tsr_supervise_opts *o);

/* The launcher's rank count in cmd (n arguments): the value of the first -np, -n, --np, -c,
 * --n or --ntasks (also --ntasks=N, --np=N) before tessera's "run"; sets *at to the index of
 * the value (or of the --x=N argument). Returns 0 (and *at = -1) when there is none. */
int tsr_supervise_ranks(int n, char *const *cmd, int *at);

/* A relaunch of cmd: --restart latest in place of any --restart R / --restart=R, else
 * appended; when np > 0, the rank count (tsr_supervise_ranks) set to np. A new
 * NULL-terminated array of new strings (free with tsr_supervise_argv_free), NULL when out
 * of memory. */
char **tsr_supervise_argv(int n, char *const *cmd, int np);
void tsr_supervise_argv_free(char **argv);

/* The probe's launch command: cmd up to tessera's "run" (launcher, its options, wrappers and
 * the tessera program), then "probe". NULL when cmd has no "run" (nothing to probe with) or
 * out of memory; free with tsr_supervise_argv_free. */
char **tsr_supervise_probe_argv(int n, char *const *cmd);

/* What a probe counted: per node (by name) the usable GPUs and the GPUs seen. */
typedef struct {
  char name[256];
  int usable, seen;
} tsr_supervise_node;

typedef struct {
  int nodes, usable;       /* from the probe's total line; nodes = 0: no answer */
  int n, cap;              /* entries in node */
  tsr_supervise_node *node;
} tsr_supervise_gpus;

/* Reads a probe's standard output (tsr_info_probe's lines; other lines are ignored) into g.
 * Returns 1 when it holds the total line and one line per node it counts, else 0. Free g
 * with tsr_supervise_gpus_free. */
int tsr_supervise_gpus_parse(const char *text, tsr_supervise_gpus *g);
void tsr_supervise_gpus_free(tsr_supervise_gpus *g);

/* The nodes of g0 (the first probe) that have fewer usable GPUs in g (a later one), written
 * into buf as "name: 1 of 2 usable (had 2), other: not reached", at most four named. */
void tsr_supervise_gpus_lost(const tsr_supervise_gpus *g0, const tsr_supervise_gpus *g,
                             char *buf, size_t cap);

/* The nodes of g with a usable GPU as Open MPI's --host list, "a:4,b:3" (cut at cap). */
void tsr_supervise_gpus_hosts(const tsr_supervise_gpus *g, char *buf, size_t cap);

/* The rank count to relaunch on: np ranks were launched, gpus0 usable GPUs were counted on
 * all the job's nodes before the first launch, gpus now (-1: no count). The GPUs left when
 * fewer than np remain of a job that had a GPU per rank (np <= gpus0); np when nothing was
 * lost, nothing is known, or the job had more ranks than GPUs (the host backend); 0 when no
 * GPU is left. */
int tsr_supervise_shrink(int np, int gpus0, int gpus);

#endif
