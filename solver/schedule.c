/* Write schedules by steps or simulated time (solver/schedule.h). */
#include "solver/schedule.h"

#include <math.h>

/* The number of multiples of T that time t has reached: floor(t / T), counting a time a hair
 * below a multiple (rounding in step*dt or in the division) as having reached it. */
static double reached(double t, double T) {
  double q = t / T;
  return floor(q + 1e-9 * (q > 1.0 ? q : 1.0));
}

int tsr_schedule_due(const tsr_case_every *e, int64_t step, double dt) {
  if (!e || step < 1) return 0;
  if (e->steps > 0) return step % e->steps == 0;
  if (!(e->time > 0.0) || !(dt > 0.0)) return 0;
  return reached((double)step * dt, e->time) > reached((double)(step - 1) * dt, e->time);
}

int tsr_schedule_any(const tsr_case_every *e) { return e && (e->steps > 0 || e->time > 0.0); }

int tsr_schedule_due_after(const tsr_case_every *e, int64_t step, double t0, double t1) {
  if (!e || step < 1) return 0;
  if (e->steps > 0) return step % e->steps == 0;
  if (!(e->time > 0.0) || !(t1 > t0)) return 0;
  return reached(t1, e->time) > reached(t0, e->time);
}
