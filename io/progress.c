#include "io/progress.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Variables a launcher sets for the processes it starts: Open MPI's mpirun, MPICH's and Intel
 * MPI's Hydra, srun (PMIX_RANK also with --mpi=pmix). */
static int launcher_env(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK",
                                     "SLURM_STEP_ID", "MPI_LOCALRANKID"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i)
    if (getenv(vars[i])) return 1;
  return 0;
}

/* Read before main, so before MPI_Init: Open MPI's singleton start (a run without mpirun)
 * sets PMIX_RANK in MPI_Init, which made a terminal get lines instead of the bar. */
static int g_launched;
__attribute__((constructor)) static void note_launcher(void) { g_launched = launcher_env(); }

static int world_size(void) {
  int init = 0, fin = 0, n = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void tsr_progress_init(tsr_progress *p, int mode, FILE *out, int64_t total) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->total = total > 0 ? total : 1;
  p->first = p->step = -1;
  p->t0 = p->last_line = now();
  p->unit = "step";
  const char *q = getenv("TSR_PROGRESS_SECONDS"); /* checked as tessera starts (env.c) */
  p->quiet_s = q && *q ? atof(q) : 0.0;
  if (!(p->quiet_s > 0.0)) p->quiet_s = 60.0;
  switch (mode) {
  case 1: p->style = TSR_PROGRESS_STYLE_BAR; break;
  case 2: p->style = TSR_PROGRESS_STYLE_LINES; break;
  case 3: p->style = TSR_PROGRESS_STYLE_NONE; break;
  default:
    /* mpirun forwards each rank's output through a pseudo-terminal, so under a launcher a
     * terminal cannot be told from a file: lines there, a bar only when run directly */
    p->style = out && isatty(fileno(out)) && !g_launched && world_size() == 1
                   ? TSR_PROGRESS_STYLE_BAR
                   : TSR_PROGRESS_STYLE_LINES;
  }
  if (!out) p->style = TSR_PROGRESS_STYLE_NONE;
}

static void fmt_time(char *buf, size_t n, double s) {
  if (!(s >= 0)) snprintf(buf, n, "--:--");
  else if (s >= 1e9) snprintf(buf, n, "%.3g years", s / (365.25 * 86400)); /* no ETA to wait for */
  else if (s >= 86400)
    snprintf(buf, n, "%dd %02d:%02d:%02d", (int)(s / 86400), (int)(s / 3600) % 24,
             (int)(s / 60) % 60, (int)s % 60);
  else if (s >= 3600)
    snprintf(buf, n, "%d:%02d:%02d", (int)(s / 3600), (int)(s / 60) % 60, (int)s % 60);
  else snprintf(buf, n, "%02d:%02d", (int)(s / 60), (int)s % 60);
}

void tsr_progress_by_time(tsr_progress *p, double t_start, double end) {
  p->end_time = end > 0.0 ? end : 0.0;
  p->t_start = p->t_now = t_start;
}

/* The time left at the rate of the steps this process made (a restart's start excluded): by
 * steps, or by simulated time. */
static double eta(const tsr_progress *p, double elapsed) {
  if (p->end_time > 0.0) {
    const double done = p->t_now - p->t_start, left = p->end_time - p->t_now;
    return p->step >= 0 && done > 0.0 ? elapsed * (left > 0.0 ? left : 0.0) / done : -1.0;
  }
  int64_t done = p->step - p->first;
  return p->step >= 0 && done > 0 ? elapsed * (double)(p->total - p->step) / (double)done : -1.0;
}

/* Whether steps remain after the last one given. */
static int more(const tsr_progress *p, int64_t step) {
  return p->end_time > 0.0 ? p->t_now < p->end_time * (1.0 - 1e-12) : step < p->total;
}

static void draw(tsr_progress *p, double t, double cps) {
  const int width = 30;
  double frac = p->end_time > 0.0 ? p->t_now / p->end_time : (double)p->step / (double)p->total;
  if (frac > 1.0) frac = 1.0;
  int fill = (int)(frac * width + 0.5);
  char bar[64];
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
  bar[width] = '\0';
  char left[32];
  fmt_time(left, sizeof left, eta(p, now() - p->t0));
  if (p->per_s)
    fprintf(p->out, "\r[%s] %3d%% %s %lld/%lld loss %.4e ETA %s %.4g %s\033[K", bar,
            (int)(100.0 * frac), p->unit, (long long)p->step, (long long)p->total, t, left, cps,
            p->per_s);
  else if (p->end_time > 0.0)
    fprintf(p->out, "\r[%s] %3d%% step %lld t=%.4e of %.4g ETA %s %.3g cells/s\033[K", bar,
            (int)(100.0 * frac), (long long)p->step, t, p->end_time, left, cps);
  else
    fprintf(p->out, "\r[%s] %3d%% step %lld/%lld t=%.4e ETA %s %.3g cells/s\033[K", bar,
            (int)(100.0 * frac), (long long)p->step, (long long)p->total, t, left, cps);
  fflush(p->out);
  p->bar_shown = 1;
  p->last_draw = now();
}

void tsr_progress_step(tsr_progress *p, int64_t step, double t, double cps) {
  if (p->first < 0) p->first = step - 1;
  p->step = step;
  if (p->end_time > 0.0) p->t_now = t;
  if (p->style == TSR_PROGRESS_STYLE_LINES && more(p, step) &&
      now() - p->last_line >= (p->eta_shown ? 30.0 : 1.0) * p->quiet_s) {
    char text[160];
    if (p->per_s)
      snprintf(text, sizeof text, "%s %lld/%lld loss %.4e | %.4g %s", p->unit, (long long)step,
               (long long)p->total, t, cps, p->per_s);
    else if (p->end_time > 0.0)
      snprintf(text, sizeof text, "step %lld t=%.6e of %.6g | %.3g cells/s", (long long)step, t,
               p->end_time, cps);
    else
      snprintf(text, sizeof text, "step %lld/%lld t=%.6e | %.3g cells/s", (long long)step,
               (long long)p->total, t, cps);
    tsr_progress_line(p, text);
  }
  if (p->style != TSR_PROGRESS_STYLE_BAR) return;
  if (more(p, step) && now() - p->last_draw < 0.1) return;
  draw(p, t, cps);
}

void tsr_progress_line(tsr_progress *p, const char *text) {
  if (p->style == TSR_PROGRESS_STYLE_NONE) return;
  double el = now() - p->t0;
  char spent[32], left[32];
  fmt_time(spent, sizeof spent, el);
  fmt_time(left, sizeof left, eta(p, el));
  if (p->bar_shown) fprintf(p->out, "\r\033[K");
  fprintf(p->out, "%s | elapsed %s ETA %s\n", text, spent, left);
  fflush(p->out);
  p->bar_shown = 0;
  p->last_line = now();
  if (p->step > p->first && p->first >= 0) p->eta_shown = 1;
}

void tsr_progress_finish(tsr_progress *p) {
  if (p->style == TSR_PROGRESS_STYLE_BAR && p->bar_shown) fprintf(p->out, "\n");
  p->bar_shown = 0;
}
