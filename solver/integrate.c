#include "solver/integrate.h"

#include <math.h>

tsr_scheme_plan tsr_integrate_plan(tsr_scheme scheme) {
  tsr_scheme_plan p = {0};
  switch (scheme) {
  case TSR_SCHEME_EULER:
    p = (tsr_scheme_plan){1, {{TSR_STAGE_EULER, 0.0, TSR_SLOT_U, TSR_SLOT_T1}}, TSR_SLOT_T1, 0, 1,
                          "euler"};
    break;
  case TSR_SCHEME_SSPRK2:
    p = (tsr_scheme_plan){2,
                          {{TSR_STAGE_EULER, 0.0, TSR_SLOT_U, TSR_SLOT_T1},
                           {TSR_STAGE_SSP2_2, 1.0, TSR_SLOT_T1, TSR_SLOT_T2}},
                          TSR_SLOT_T2, 0, 2, "ssp_rk2"};
    break;
  case TSR_SCHEME_SSPRK3:
    p = (tsr_scheme_plan){3,
                          {{TSR_STAGE_EULER, 0.0, TSR_SLOT_U, TSR_SLOT_T1},
                           {TSR_STAGE_SSP3_2, 1.0, TSR_SLOT_T1, TSR_SLOT_T2},
                           {TSR_STAGE_SSP3_3, 0.5, TSR_SLOT_T2, TSR_SLOT_T1}},
                          TSR_SLOT_T1, 0, 3, "ssp_rk3"};
    break;
  case TSR_SCHEME_RK4:
    p = (tsr_scheme_plan){4,
                          {{TSR_STAGE_RK4_1, 0.0, TSR_SLOT_U, TSR_SLOT_T1},
                           {TSR_STAGE_RK4_2, 0.5, TSR_SLOT_T1, TSR_SLOT_T2},
                           {TSR_STAGE_RK4_3, 0.5, TSR_SLOT_T2, TSR_SLOT_T1},
                           {TSR_STAGE_RK4_4, 1.0, TSR_SLOT_T1, TSR_SLOT_T2}},
                          TSR_SLOT_T2, 1, 4, "rk4"};
    break;
  }
  return p;
}

tsr_err tsr_integrate_time_plan(const tsr_case *c, double *dt, int64_t *nsteps, double *dt_stable) {
  double h[3];
  for (int d = 0; d < 3; ++d) h[d] = (c->hi[d] - c->lo[d]) / c->cells[d];
  double limit = tsr_model_dt_limit(c->model, c->param_value, h, c->dim);
  *dt_stable = limit;
  double want = c->time.dt_auto ? c->time.cfl * limit : c->time.dt;
  TSR_CHECK(isfinite(want) && want > 0.0, TSR_ERR_INPUT,
            "%s: time.dt: dt = auto needs a finite stability limit, but model %s with these "
            "parameters has none; give time.dt a number",
            c->path, tsr_models[c->model].name);
  if (c->time.has_steps) {
    *dt = want;
    *nsteps = c->time.steps;
    return TSR_OK;
  }
  double n = ceil(c->time.end / want * (1.0 - 1e-12));
  TSR_CHECK(n >= 1.0 && n <= (double)TSR_CASE_MAX_STEPS, TSR_ERR_INPUT,
            "%s: time.end = %g with dt = %g needs %.3g steps, more than %.3g; shorten time.end "
            "or raise dt", c->path, c->time.end, want, n, (double)TSR_CASE_MAX_STEPS);
  *nsteps = (int64_t)n;
  *dt = c->time.end / n;
  return TSR_OK;
}
