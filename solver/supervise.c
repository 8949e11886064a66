/* tessera supervise (solver/supervise.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/supervise.h"
#include "io/text.h"
#include "solver/env.h"
#include "solver/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <dirent.h>
#include <sys/prctl.h>
#endif

#define SAY "tessera supervise: "
#define USAGE "tessera supervise [--max-restarts N] -- mpirun -np 4 tessera run case.yaml ..."

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, SAY);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n  usage: " USAGE "\n");
  return 2;
}

int tsr_supervise_parse(int argc, char **argv, tsr_supervise_opts *o) {
  o->max_restarts = 3;
  o->first = -1;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    const char *a = argv[i], *v = NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      printf("usage: " USAGE "\n\nRuns the launch command and relaunches it with --restart latest "
             "when it fails\n(exit code other than 0, 2 and 4), at most N times (default 3), on "
             "fewer ranks when\nGPUs were lost (counted by tessera probe through the launcher, "
             "TESSERA_PROBE_TIMEOUT\nseconds at most, default 120). Before a relaunch it ends "
             "what the failed attempt\nleft running on this node. See README.md, Recovery.\n");
      return -1;
    }
    if (!strcmp(a, "--max-restarts")) {
      if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
        return usage_error("--max-restarts needs a value: an integer >= 0%s", "");
      v = argv[++i];
    } else if (!strncmp(a, "--max-restarts=", 15)) {
      v = a + 15;
    } else if (a[0] == '-') {
      return usage_error("unknown option '%s' (supervise takes --max-restarts N, then -- and "
                         "the launch command)", a);
    } else {
      return usage_error("expected -- before the launch command, got '%s'", a);
    }
    long n;
    if (!tsr_text_count(v, 0, 1000, &n))
      return usage_error("--max-restarts: expected an integer from 0 to 1000, got '%s'", v);
    o->max_restarts = (int)n;
  }
  if (i >= argc) return usage_error("expected -- and then the launch command%s", "");
  if (i + 1 >= argc) return usage_error("no launch command after --%s", "");
  o->first = i + 1;
  return 0;
}

int tsr_supervise_ranks(int n, char *const *cmd, int *at) {
  static const char *const flags[] = {"-np", "-n", "--np", "-c", "--n", "--ntasks"};
  static const char *const joined[] = {"--np=", "--ntasks=", "-np="};
  *at = -1;
  for (int i = 1; i < n && strcmp(cmd[i], "run") != 0; ++i) {
    long v;
    for (size_t f = 0; f < sizeof flags / sizeof *flags; ++f)
      if (!strcmp(cmd[i], flags[f]) && i + 1 < n && tsr_text_count(cmd[i + 1], 1, 1 << 24, &v)) {
        *at = i + 1;
        return (int)v;
      }
    for (size_t f = 0; f < sizeof joined / sizeof *joined; ++f) {
      size_t len = strlen(joined[f]);
      if (!strncmp(cmd[i], joined[f], len) && tsr_text_count(cmd[i] + len, 1, 1 << 24, &v)) {
        *at = i;
        return (int)v;
      }
    }
  }
  return 0;
}

void tsr_supervise_argv_free(char **argv) {
  for (char **p = argv; p && *p; ++p) free(*p);
  free(argv);
}

char **tsr_supervise_argv(int n, char *const *cmd, int np) {
  char **out = calloc((size_t)n + 3, sizeof *out);
  if (!out) return NULL;
  int at, m = 0, restart = 0;
  tsr_supervise_ranks(n, cmd, &at);
  int ok = 1;
  for (int i = 0; i < n && ok; ++i) {
    char buf[64];
    const char *a = cmd[i];
    if (i == at && np > 0) {
      const char *eq = strchr(a, '=');
      if (eq && a[0] == '-') snprintf(buf, sizeof buf, "%.*s%d", (int)(eq - a + 1), a, np);
      else snprintf(buf, sizeof buf, "%d", np);
      a = buf;
    } else if (!strcmp(a, "--restart") && i + 1 < n) {
      ok = (out[m++] = strdup(a)) != NULL;
      ++i;
      a = "latest";
      restart = 1;
    } else if (!strncmp(a, "--restart=", 10)) {
      a = "--restart=latest";
      restart = 1;
    }
    ok = ok && (out[m++] = strdup(a)) != NULL;
  }
  if (ok && !restart) ok = (out[m++] = strdup("--restart")) && (out[m++] = strdup("latest"));
  if (!ok) {
    tsr_supervise_argv_free(out);
    return NULL;
  }
  return out;
}

int tsr_supervise_shrink(int np, int gpus0, int gpus) {
  if (np <= 0 || gpus0 <= 0 || gpus < 0 || gpus >= np || np > gpus0) return np;
  return gpus;
}

int tsr_supervise_attempt(void) {
  const char *a = getenv("TESSERA_ATTEMPT");
  long v;
  return a && tsr_text_count(a, 1, 1000000, &v) ? (int)v : 1;
}

/* ---- GPUs: the probe (what it says is read in supervise_probe.c) ----------------------- */

static volatile sig_atomic_t got_signal;
static volatile pid_t child_pid;

/* The signals the supervisor passes on to the command, for the command to act on (a stop, or
 * the end of the process): left to their defaults, QUIT or USR2 would end the supervisor and
 * leave the job it launched running unsupervised. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGXCPU,
                                SIGALRM};

/* In a child about to exec: the signals the supervisor forwards or ignores take their default
 * action again (an ignored signal would stay ignored across exec). */
static void default_signals(void) {
  for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; ++i) signal(forwarded[i], SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
}

/* How long a probe may take (TESSERA_PROBE_TIMEOUT seconds, default 120): starting every rank
 * and creating a context on every GPU takes seconds; a GPU that has fallen off the bus can
 * stall the driver for much longer. */
static int probe_seconds(void) {
  long v;
  const char *e = getenv("TESSERA_PROBE_TIMEOUT");
  return e && tsr_text_count(e, 1, 86400, &v) ? (int)v : 120;
}

/* What a hung probe or a failed attempt started that outlived it, on this node. A launcher
 * signalled while still starting a rank may never reach it (the rank sits in a process group of
 * its own: CI, under the sanitizers, found the probe's rank still running 10 s after its
 * launcher had been killed), and a launcher that was killed (SIGKILL, the OOM killer) ends none
 * of its ranks. A rank of a failed attempt left running would go on writing checkpoints beside
 * the relaunch, the two racing on the same temporary file. With this process a subreaper
 * (PR_SET_CHILD_SUBREAPER), such ranks become its children as the launcher exits; they are
 * killed here (SIGKILL: on SIGTERM a rank would write one more checkpoint) with their groups,
 * and so are their own children as they are handed over. Called when no other child is left.
 * A rank stuck in the driver ends only when it leaves it, so this waits 10 s at most, and then
 * leaves them. Returns how many were signalled. Linux only; elsewhere they are left (0). */
static void subreaper(int on) {
#ifdef __linux__
  prctl(PR_SET_CHILD_SUBREAPER, on);
#else
  (void)on;
#endif
}
static int end_orphans(void) {
#ifdef __linux__
  const pid_t me = getpid();
  pid_t seen[64];
  int nseen = 0, ended = 0;
  /* until no child is left: a process killed here hands its own children over only once it has
   * died, which under load (CI's sanitizer run) took more than the second a round once waited,
   * and those came after the last look (session 35); 10 s at most, for one stuck in a driver */
  for (int tick = 0; tick < 100; ++tick) {
    DIR *d = opendir("/proc");
    if (!d) return ended;
    struct dirent *e;
    while ((e = readdir(d))) {
      char *end;
      const long p = strtol(e->d_name, &end, 10);
      if (*end || p <= 0 || p == me) continue;
      char path[64], buf[512];
      snprintf(path, sizeof path, "/proc/%ld/stat", p);
      FILE *f = fopen(path, "r");
      if (!f) continue;
      const size_t n = fread(buf, 1, sizeof buf - 1, f);
      fclose(f);
      buf[n] = '\0';
      /* "pid (name) state ppid ...": the name may hold ')' */
      const char *rp = strrchr(buf, ')');
      char state = 0;
      int ppid = 0;
      if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2 || ppid != me || state == 'Z')
        continue;
      int known = 0;
      for (int k = 0; k < nseen; ++k) known |= seen[k] == (pid_t)p;
      if (known) continue;
      if (nseen < 64) seen[nseen++] = (pid_t)p;
      ++ended;
      if (getpgid((pid_t)p) == (pid_t)p) kill(-(pid_t)p, SIGKILL);
      kill((pid_t)p, SIGKILL);
    }
    closedir(d);
    pid_t r;
    while ((r = waitpid(-1, NULL, WNOHANG)) > 0) {
    }
    if (r < 0 && errno == ECHILD) break; /* none left, so nothing left below us either */
    nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  }
  return ended;
#else
  return 0;
#endif
}

/* fork() with this process the subreaper of what the child starts (end_orphans; the caller
 * turns it off once the child is reaped), our buffered output flushed so that the child does
 * not repeat it. */
static pid_t fork_reaping(void) {
  fflush(stdout);
  fflush(stderr);
  subreaper(1);
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    subreaper(0);
    errno = e;
  }
  return pid;
}

/* Runs the probe command with its standard output captured (its standard error is ours) and
 * reads what it counted into g. Returns 1, or 0 with *why saying what went wrong. */
static int probe(char **argv, tsr_supervise_gpus *g, char *why, size_t cap) {
  memset(g, 0, sizeof *g);
  int out[2];
  if (pipe(out) != 0) {
    snprintf(why, cap, "cannot make a pipe: %s", strerror(errno));
    return 0;
  }
  fcntl(out[0], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork_reaping();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    snprintf(why, cap, "cannot fork: %s", strerror(errno));
    return 0;
  }
  if (pid == 0) {
    setpgid(0, 0); /* a probe that outlives its time is killed with all it started */
    default_signals();
    /* no input: outside the terminal's foreground group, a read from it would stop the probe */
    int none = open("/dev/null", O_RDONLY);
    if (none >= 0) dup2(none, 0);
    dup2(out[1], 1);
    close(out[1]);
    execvp(argv[0], argv);
    fprintf(stderr, SAY "cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  close(out[1]);
  size_t len = 0, size = 4096;
  char *text = malloc(size);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int fd = out[0], late = 0, limit = probe_seconds();
  while (fd >= 0 && text) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    double left = limit - (double)(t.tv_sec - t0.tv_sec) - 1e-9 * (t.tv_nsec - t0.tv_nsec);
    if (left <= 0) {
      late = 1;
      break;
    }
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0) continue;
    if (len + 1024 > size) {
      char *grown = size < (1u << 24) ? realloc(text, size *= 2) : NULL;
      if (!grown) break;
      text = grown;
    }
    ssize_t r = read(fd, text + len, size - len - 1);
    if (r > 0) len += (size_t)r;
    else if (r == 0 || (errno != EINTR && errno != EAGAIN)) fd = -1;
  }
  close(out[0]);
  int status = 0, reaped = 0;
  if (late || !text) {
    /* SIGTERM first: a launcher then ends its ranks, which may sit in process groups of their
     * own (out of reach of a signal to ours), and only then itself. On a loaded node that can
     * take seconds; a SIGKILL too early would leave them running. So wait for it, up to 10 s */
    kill(-pid, SIGTERM);
    for (int i = 0; i < 100 && !reaped; ++i) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) reaped = 1;
      else if (r < 0 && errno != EINTR) break;
      else nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    kill(-pid, SIGKILL); /* whatever of our group is left */
  }
  while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late || !text) end_orphans();
  subreaper(0);
  child_pid = 0;
  int ok = 0;
  if (late) snprintf(why, cap, "no answer within %d s, TESSERA_PROBE_TIMEOUT", limit);
  else if (!text) snprintf(why, cap, "out of memory");
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    snprintf(why, cap, "it ended with exit code %d", WIFEXITED(status) ? WEXITSTATUS(status)
                                                                       : 128 + WTERMSIG(status));
  else {
    text[len] = '\0';
    ok = tsr_supervise_gpus_parse(text, g);
    if (!ok) snprintf(why, cap, "its output has no count of every node");
  }
  free(text);
  if (!ok) tsr_supervise_gpus_free(g);
  return ok;
}

/* ---- running the command --------------------------------------------------------------- */

static void forward(int sig) {
  got_signal = sig;
  if (child_pid > 0) kill(child_pid, sig);
}

/* Why the command failed, from its stderr: the most telling line seen so far wins. */
typedef struct {
  char text[512];
  int score;
  int mpi_rank; /* Open MPI's "Process name: [[j,s],R]" waits for its "Exit code:" line */
} why;

static void note(why *w, int score, const char *text) {
  if (score <= w->score) return;
  w->score = score;
  snprintf(w->text, sizeof w->text, "%s", text);
}

static void scan_line(why *w, char *line) {
  line[strcspn(line, "\r\n")] = '\0';
  char *p, t[320];
  int r, s;
  if ((p = strstr(line, "tessera: watchdog: "))) {
    p += strlen("tessera: watchdog: ");
    char *cut = strstr(p, " (comm.timeout)");
    int len = cut ? (int)(cut - p) : (int)strlen(p);
    snprintf(t, sizeof t, "the watchdog found %.*s", len > 250 ? 250 : len, p);
    /* the rank that stopped outranks the ranks that waited for it */
    note(w, strstr(p, " stopped:") ? 5 : 4, t);
  } else if ((p = strstr(line, "Process name: [[")) && (p = strstr(p, "],")) &&
             sscanf(p + 2, "%d]", &r) == 1) {
    w->mpi_rank = r; /* Open MPI: the first rank that failed; "Exit code:" follows */
  } else if (w->mpi_rank >= 0 && (p = strstr(line, "Exit code:")) &&
             sscanf(p + 10, "%d", &s) == 1) {
    snprintf(t, sizeof t, "rank %d exited with code %d", w->mpi_rank, s);
    note(w, 3, t);
    w->mpi_rank = -1;
  } else if ((p = strstr(line, "process rank ")) && strstr(line, "exited on signal") &&
             sscanf(p, "process rank %d", &r) == 1 &&
             sscanf(strstr(line, "exited on signal") + 16, "%d", &s) == 1) {
    snprintf(t, sizeof t, "rank %d was killed by signal %d", r, s);
    note(w, 3, t);
  } else if ((p = strstr(line, ": task ")) && strstr(line, "Exited with exit code") &&
             sscanf(p, ": task %d", &r) == 1 &&
             sscanf(strstr(line, "Exited with exit code") + 21, "%d", &s) == 1) {
    snprintf(t, sizeof t, "rank %d exited with code %d", r, s); /* Slurm's srun */
    note(w, 3, t);
  } else if (!strncmp(line, "tessera: ", 9) && !strstr(line, "--inject-fault")) {
    snprintf(t, sizeof t, "%.250s", line + 9);
    note(w, 1, t);
  }
}

/* Copies the child's stderr through to ours, line by line into w, until the child exits.
 * Returns its wait status. */
static int pump(pid_t pid, int fd, why *w) {
  char line[4096];
  size_t len = 0;
  int status = 0, done = 0;
  while (!done) {
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, 200);
    if (r > 0) {
      char buf[4096];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        if (write(2, buf, (size_t)n) < 0) { /* our stderr is gone: keep supervising */ }
        for (ssize_t i = 0; i < n; ++i) {
          if (len < sizeof line - 1) line[len++] = buf[i];
          if (buf[i] == '\n') {
            line[len] = '\0';
            scan_line(w, line);
            len = 0;
          }
        }
        continue;
      }
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) fd = -1; /* EOF */
    }
    /* the launcher's own children may keep the pipe open after it exits: its exit ends this */
    pid_t q = waitpid(pid, &status, fd < 0 ? 0 : WNOHANG);
    if (q == pid) done = 1;
    else if (q < 0 && errno != EINTR) done = 1;
  }
  if (fd >= 0) { /* what is left in the pipe */
    fcntl(fd, F_SETFL, O_NONBLOCK);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
      if (write(2, buf, (size_t)n) < 0) break;
  }
  if (len) {
    line[len] = '\0';
    scan_line(w, line);
  }
  return status;
}

/* Runs argv with TESSERA_ATTEMPT=attempt. Returns the wait status, or -1 when it could not be
 * started (message printed). */
static int run_once(char **argv, int attempt, why *w) {
  char num[16];
  snprintf(num, sizeof num, "%d", attempt);
  setenv("TESSERA_ATTEMPT", num, 1);
  int err_pipe[2], exec_pipe[2];
  if (pipe(err_pipe) != 0 || pipe(exec_pipe) != 0) {
    fprintf(stderr, SAY "cannot make a pipe: %s\n", strerror(errno));
    return -1;
  }
  fcntl(exec_pipe[1], F_SETFD, FD_CLOEXEC);
  fcntl(err_pipe[0], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork_reaping();
  if (pid < 0) {
    fprintf(stderr, SAY "cannot fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    default_signals();
    close(exec_pipe[0]);
    dup2(err_pipe[1], 2);
    close(err_pipe[1]);
    execvp(argv[0], argv);
    int e = errno; /* tells the parent why, through the pipe that exec would have closed */
    if (write(exec_pipe[1], &e, sizeof e) < 0) { /* nothing better to do */ }
    _exit(127);
  }
  child_pid = pid;
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(exec_pipe[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  int status = pump(pid, err_pipe[0], w);
  close(err_pipe[0]);
  child_pid = 0;
  /* a run that succeeded has nothing of its own left; what a failed one left must not run on
   * beside the relaunch */
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    const int left = end_orphans();
    if (left > 0)
      fprintf(stderr, SAY "attempt %d: ended %d process%s it left running on this node after "
              "its launcher exited\n", attempt, left, left == 1 ? "" : "es");
  }
  subreaper(0);
  if (n == (ssize_t)sizeof e) {
    fprintf(stderr, SAY "cannot run '%s': %s; give the launcher as it is typed in a shell "
            "(mpirun -np 4 tessera run case.yaml)\n", argv[0], strerror(e));
    return -1;
  }
  return status;
}

static int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

static void print_cmd(const char *lead, char **argv) {
  fprintf(stderr, SAY "%s", lead);
  for (char **p = argv; *p; ++p) fprintf(stderr, " %s", *p);
  fprintf(stderr, "\n");
}

/* Usable GPUs on all the nodes of the job cmd launches (n arguments), counted by a probe
 * launched the same way, with what it found per node in g; -1 when cmd runs no tessera or
 * the probe failed (said on stderr, for a job that had GPUs or before the first launch). */
static int count_gpus(char **cmd, int n, tsr_supervise_gpus *g, int first) {
  char **argv = tsr_supervise_probe_argv(n, cmd), why[256];
  if (!argv) return -1;
  int ok = probe(argv, g, why, sizeof why);
  tsr_supervise_argv_free(argv);
  if (!ok) {
    fprintf(stderr, SAY "could not count the GPUs through the launcher (%s); %s\n", why,
            first ? "relaunches will keep the rank count"
                  : "relaunching on as many ranks as before");
    return -1;
  }
  if (first && g->usable > 0)
    fprintf(stderr, SAY "%d usable GPU%s on %d node%s\n", g->usable, g->usable == 1 ? "" : "s",
            g->nodes, g->nodes == 1 ? "" : "s");
  return g->usable;
}

int tsr_supervise_main(int argc, char **argv) {
  tsr_supervise_opts o;
  int parsed = tsr_supervise_parse(argc, argv, &o);
  if (parsed != 0) return parsed < 0 ? 0 : 2;
  if (tsr_env_check(1)) { /* before anything is launched with it */
    fprintf(stderr, SAY "%s\n", tsr_err_message());
    return 2;
  }
  int n = argc - o.first, total = o.max_restarts + 1, at;
  char **cmd = calloc((size_t)n + 1, sizeof *cmd);
  if (!cmd) return 1;
  for (int i = 0; i < n; ++i) cmd[i] = strdup(argv[o.first + i]);
  int np = tsr_supervise_ranks(n, cmd, &at);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  /* among them a batch system's "stop soon" (sbatch --signal=USR1@T): the run checkpoints and
   * ends with exit status 4, which ends supervision */
  for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; ++i)
    sigaction(forwarded[i], &sa, NULL);
  /* a log reader that ended (| tee, | head) must not end the supervision of the job */
  signal(SIGPIPE, SIG_IGN);
  tsr_supervise_gpus g0 = {0}, left = {0};
  int gpus0 = count_gpus(cmd, n, &g0, 1);

  int code = 1;
  for (int attempt = 1; attempt <= total; ++attempt) {
    if (got_signal) { /* came during a probe */
      fprintf(stderr, SAY "stopped by signal %d; not launching\n", (int)got_signal);
      code = 128 + got_signal;
      break;
    }
    why w = {.score = 0, .mpi_rank = -1};
    int status = run_once(cmd, attempt, &w);
    if (status < 0) {
      code = 2;
      break;
    }
    code = exit_code(status);
    if (got_signal) {
      fprintf(stderr, SAY "stopped by signal %d (forwarded to the command); not relaunching\n",
              (int)got_signal);
      break;
    }
    if (code == 0) {
      if (attempt > 1) fprintf(stderr, SAY "attempt %d/%d succeeded\n", attempt, total);
      break;
    }
    char what[700];
    if (w.score) snprintf(what, sizeof what, "%s", w.text);
    else if (WIFSIGNALED(status))
      snprintf(what, sizeof what, "the command was killed by signal %d", WTERMSIG(status));
    else snprintf(what, sizeof what, "no reason given on its standard error");
    if (code == TSR_STOP_EXIT_CODE) {
      fprintf(stderr, SAY "attempt %d/%d: exit code %d, the run stopped on a signal or its wall "
              "time with a checkpoint written; not relaunching: continue it with --restart "
              "latest\n", attempt, total, code);
      break;
    }
    if (code == 2) {
      fprintf(stderr, SAY "attempt %d/%d: exit code 2, bad input (%s); not relaunching: fix "
              "the case or the command line\n", attempt, total, what);
      if (left.n) { /* the launcher may have placed the fewer ranks badly */
        char hosts[1024];
        tsr_supervise_gpus_hosts(&left, hosts, sizeof hosts);
        fprintf(stderr, SAY "this attempt ran on fewer ranks after GPUs were lost; where a node "
                "got more ranks than it has usable GPUs, give the launcher a host list with the "
                "GPUs left as slots (Open MPI: --host %s)\n", hosts);
      }
      break;
    }
    if (attempt == total) {
      fprintf(stderr, SAY "attempt %d/%d failed with exit code %d (%s); no restarts left "
              "(--max-restarts %d)\n", attempt, total, code, what, o.max_restarts);
      break;
    }
    tsr_supervise_gpus g = {0};
    int gpus = gpus0 > 0 ? count_gpus(cmd, n, &g, 0) : -1;
    int want = tsr_supervise_shrink(np, gpus0, gpus);
    if (want != np) {
      char lost[1024];
      tsr_supervise_gpus_lost(&g0, &g, lost, sizeof lost);
      if (want >= 1)
        fprintf(stderr, SAY "%d usable GPU%s on %d node%s (%d at the first launch; %s): "
                "relaunching on %d ranks instead of %d\n", gpus, gpus == 1 ? "" : "s", g.nodes,
                g.nodes == 1 ? "" : "s", gpus0, lost, want, np);
      else
        fprintf(stderr, SAY "no usable GPU left on the job's nodes (%s); relaunching on %d ranks "
                "as before\n", lost, np);
      if (want < 1) want = np;
    }
    if (want != np) { /* kept: what a relaunch that fails next is told */
      tsr_supervise_gpus_free(&left);
      left = g;
    } else {
      tsr_supervise_gpus_free(&g);
    }
    char **next = tsr_supervise_argv(n, cmd, want != np ? want : 0);
    if (!next) {
      fprintf(stderr, SAY "out of memory\n");
      break;
    }
    tsr_supervise_argv_free(cmd);
    cmd = next;
    np = want;
    n = 0;
    while (cmd[n]) ++n;
    fprintf(stderr, SAY "attempt %d/%d: attempt %d failed with exit code %d (%s); restarting "
            "from the latest checkpoint\n", attempt + 1, total, attempt, code, what);
    print_cmd("relaunching:", cmd);
  }
  tsr_supervise_argv_free(cmd);
  tsr_supervise_gpus_free(&g0);
  tsr_supervise_gpus_free(&left);
  return code;
}
