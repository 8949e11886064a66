/* tessera supervise [--max-restarts N] -- LAUNCH COMMAND...: runs a launch command (mpirun,
 * srun, ... running tessera run) and, when it fails, relaunches it from the latest good
 * checkpoint. Not an MPI process: main() dispatches here before MPI_Init.
 *
 * Exit code 0 ends it; 2 (bad input) is not retried; any other code, or death by a signal
 * other than one sent to the supervisor, is a run failure: the command runs again with
 * --restart latest (replacing any --restart it had), at most N more times (default 3), with
 * TESSERA_ATTEMPT=k in its environment (faults from --inject-fault fire only in attempt 1).
 * Before a relaunch it counts the node's usable GPUs (nvidia-smi -L, where present); when
 * fewer remain than the ranks launched, the launcher's -np/-n/-c/--ntasks N is rewritten to
 * what is left. SIGINT, SIGTERM and SIGHUP are forwarded to the command and end supervision.
 * It exits with the last attempt's code (128 + signal for a command killed by a signal). */
#ifndef TSR_SUPERVISE_H
#define TSR_SUPERVISE_H

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

/* The rank count to relaunch on: np ranks were launched, gpus0 usable GPUs were counted on
 * this node before the first launch, gpus now (-1: no count). On one node (np <= gpus0) the
 * GPUs left; across nodes, np less the GPUs this node lost. np when nothing was lost or
 * nothing is known; 0 when no GPU is left. */
int tsr_supervise_shrink(int np, int gpus0, int gpus);

#endif
