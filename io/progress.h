/* Progress on rank 0: a live bar with ETA on a terminal, plain periodic lines otherwise. */
#ifndef TSR_PROGRESS_H
#define TSR_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
  TSR_PROGRESS_STYLE_NONE = 0,
  TSR_PROGRESS_STYLE_BAR,
  TSR_PROGRESS_STYLE_LINES
} tsr_progress_style;

typedef struct {
  tsr_progress_style style;
  FILE *out;
  int64_t total;      /* the run's last step */
  int64_t first;      /* the step before the first tsr_progress_step (a restart's), or -1 */
  int64_t step;       /* the last step tsr_progress_step was given, or -1 */
  double t0;          /* wall clock at start */
  double last_draw;   /* wall clock of the last bar redraw */
  int bar_shown;      /* a bar is on the current terminal line */
  const char *unit;   /* what the bar counts: "step" (tsr_progress_init's), or "iteration" */
  const char *per_s;  /* NULL: the bar shows t and cells/s; else it shows tsr_progress_step's
                         t as the loss and its rate with this unit (the PINN: "it/s") */
  double last_line;   /* wall clock of the last line */
  double quiet_s;     /* lines style: a step line after this long without a line */
  int eta_shown;      /* a line with an ETA was printed */
  double end_time;    /* > 0 (tsr_progress_by_time): progress is t against this end */
  double t_start, t_now; /* with end_time: t before the first step, and at the last */
} tsr_progress;

/* Chooses the style: mode 0 auto, 1 bar, 2 lines, 3 none. Auto is the bar when out is a
 * terminal and the process was started directly (not by mpirun, mpiexec or srun: judged from
 * the environment the process started with, which Open MPI's singleton start changes in
 * MPI_Init) and is alone in MPI_COMM_WORLD; lines otherwise. Not collective. */
void tsr_progress_init(tsr_progress *p, int mode, FILE *out, int64_t total);

/* Progress by simulated time where the step count is not known in advance (method
 * implicit's adaptive steps): the bar's fraction and the ETA go by how far t has come from
 * t_start (a restart's time) to end, the bar and step lines say "step N t=T of END", and
 * total is unused. After tsr_progress_init. */
void tsr_progress_by_time(tsr_progress *p, double t_start, double end);

/* Called after every step with the steps done so far (counted from the run's start, so a
 * restart's first call gives its first step + 1): redraws the bar (at most 10 times a second);
 * lines style: notes the step for the next line's ETA, and prints a step line of its own
 * ("step N/total t=... | rate | elapsed ... ETA ...") when no line has come for a while: the
 * first after 60 s (TSR_PROGRESS_SECONDS), later ones after 30 times that, so that a job's log
 * gives its ETA early however far apart its monitor lines are. */
void tsr_progress_step(tsr_progress *p, int64_t step, double t, double cells_per_s);

/* A monitor line (already formatted, no newline): printed as a line in both styles, above the
 * bar when one is shown, with " | elapsed MM:SS ETA MM:SS" after it (ETA --:-- before the
 * first step; H:MM:SS from an hour on, then "Nd HH:MM:SS"). */
void tsr_progress_line(tsr_progress *p, const char *text);

/* Ends the bar line. */
void tsr_progress_finish(tsr_progress *p);

#endif
