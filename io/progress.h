/* Progress on rank 0: a live bar with ETA on a terminal, plain periodic lines otherwise. */
#ifndef TSR_PROGRESS_H
#define TSR_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef enum { TSR_PROGRESS_STYLE_NONE = 0, TSR_PROGRESS_STYLE_BAR, TSR_PROGRESS_STYLE_LINES } tsr_progress_style;

typedef struct {
  tsr_progress_style style;
  FILE *out;
  int64_t total;      /* steps in the run */
  double t0;          /* wall clock at start */
  double last_draw;   /* wall clock of the last bar redraw */
  int bar_shown;      /* a bar is on the current terminal line */
} tsr_progress;

/* Chooses the style: mode 0 auto (bar when out is a terminal), 1 bar, 2 lines, 3 none. */
void tsr_progress_init(tsr_progress *p, int mode, FILE *out, int64_t total);

/* Called every step: redraws the bar (at most 10 times a second). Lines style: nothing. */
void tsr_progress_step(tsr_progress *p, int64_t step, double t, double cells_per_s);

/* A monitor line (already formatted, no newline): printed as a line in both styles, above
 * the bar when one is shown. */
void tsr_progress_line(tsr_progress *p, const char *text);

/* Ends the bar line. */
void tsr_progress_finish(tsr_progress *p);

#endif
