/* Explicit time integration: the stage sequence of each scheme and the time-step plan. */
#ifndef TSR_INTEGRATE_H
#define TSR_INTEGRATE_H

#include <stdint.h>

#include "io/case.h"
#include "kernels/models/all.h"

/* Field slots a stage reads and writes: the state u^n and two stage buffers. */
enum { TSR_SLOT_U = 0, TSR_SLOT_T1 = 1, TSR_SLOT_T2 = 2, TSR_NSLOT = 3 };

typedef struct {
  int nstage;
  struct {
    tsr_stage_kind kind;
    double c;    /* stage time = t + c dt */
    int in, out; /* slots */
  } stage[4];
  int result;    /* slot that holds u^{n+1} after the last stage */
  int uses_acc;  /* RK4's accumulator */
  int order;
  const char *name;
} tsr_scheme_plan;

/* The stage sequence of a scheme. */
tsr_scheme_plan tsr_integrate_plan(tsr_scheme scheme);

/* Step size and step count of the case: with time.end, the largest dt <= the requested (or
 * cfl x stable) one that lands a whole number of steps on end; with time.steps, that dt.
 * Errors: TSR_ERR_INPUT when the step count would exceed 2^62 or dt is not positive. */
tsr_err tsr_integrate_time_plan(const tsr_case *c, double *dt, int64_t *nsteps, double *dt_stable);

#endif
