/* When checkpoints and snapshots are due: every N steps, or after the step that first reaches
 * each multiple k*T of simulated time (the case's tsr_case_every).
 *
 * The answer depends only on the step and dt (a step ends at time step*dt, as the step loop
 * has it), so every rank agrees without communication, any decomposition gives the same
 * writes, and a run restarted at step s writes exactly where the uninterrupted run wrote after
 * s: the next multiple after the restart time. */
#ifndef TSR_SCHEDULE_H
#define TSR_SCHEDULE_H

#include <stdint.h>

#include "io/case.h"

/* 1 when a write is due after step `step` (>= 1; the step that ends at time step*dt), else 0.
 * By time: due when step*dt reaches a multiple of e->time that (step-1)*dt had not reached,
 * with a relative tolerance of 1e-9 so that a dt dividing T lands exactly on its multiples
 * despite rounding (0.1 * 3 is 0.30000000000000004). Never due for step < 1 or an empty e. */
int tsr_schedule_due(const tsr_case_every *e, int64_t step, double dt);

/* As tsr_schedule_due for steps whose sizes vary (method implicit's adaptive steps): the
 * step `step` runs from t0 to t1, and a write by time is due when t1 reaches a multiple of
 * e->time that t0 had not. A restart that goes on with the same steps writes where the
 * uninterrupted run wrote. */
int tsr_schedule_due_after(const tsr_case_every *e, int64_t step, double t0, double t1);

/* 1 when e asks for any writes at all. */
int tsr_schedule_any(const tsr_case_every *e);

#endif
