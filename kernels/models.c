#include "kernels/models.h"

#include <math.h>
#include <string.h>

const tsr_model_info tsr_models[TSR_MODEL_COUNT] = {
    [TSR_MODEL_HEAT] = {"heat", "du/dt = kappa lap(u) + s_u", 1, {"u"}, 1,
                        {{"kappa", 1.0, 0.0, 1, "diffusivity"}}, 1, 0, 0, 0,
                        TSR_METHODS_EXPLICIT | TSR_METHODS_PINN | TSR_METHODS_IMPLICIT},
    [TSR_MODEL_ADVECTION_DIFFUSION] =
        {"advection_diffusion", "du/dt = -(vx,vy,vz).grad(u) + kappa lap(u) + s_u", 1, {"u"}, 4,
         {{"kappa", 0.01, 0.0, 0, "diffusivity"},
          {"vx", 1.0, -HUGE_VAL, 0, "velocity, x"},
          {"vy", 0.0, -HUGE_VAL, 0, "velocity, y"},
          {"vz", 0.0, -HUGE_VAL, 0, "velocity, z"}},
         1, 0, 0, 0, TSR_METHODS_EXPLICIT | TSR_METHODS_PINN | TSR_METHODS_IMPLICIT},
    [TSR_MODEL_WAVE] = {"wave", "du/dt = v, dv/dt = c^2 lap(u) + s_v", 2, {"u", "v"}, 1,
                        {{"c", 1.0, 0.0, 1, "wave speed"}}, 1, 0, 0, 0, TSR_METHODS_EXPLICIT},
    [TSR_MODEL_GRAY_SCOTT] =
        {"gray_scott",
         "du/dt = Du lap(u) - u v^2 + F (1 - u), dv/dt = Dv lap(v) + u v^2 - (F + k) v", 2,
         {"u", "v"}, 4,
         {{"Du", 2e-5, 0.0, 0, "diffusivity of u"},
          {"Dv", 1e-5, 0.0, 0, "diffusivity of v"},
          {"F", 0.04, 0.0, 0, "feed rate"},
          {"k", 0.06, 0.0, 0, "kill rate"}},
         1, 0, 0, 0, TSR_METHODS_EXPLICIT | TSR_METHODS_IMPLICIT},
    [TSR_MODEL_ALLEN_CAHN] = {"allen_cahn", "du/dt = eps^2 lap(u) + gamma (u - u^3) + s_u", 1,
                              {"u"}, 2,
                              {{"eps", 0.01, 0.0, 1, "interface width"},
                               {"gamma", 1.0, 0.0, 0, "reaction rate"}},
                              1, 0, 0, 0,
                              TSR_METHODS_EXPLICIT | TSR_METHODS_PINN | TSR_METHODS_IMPLICIT},
    /* kernels/models/ignition.h: the reaction is sub-stepped per cell, delta and nmax set how */
    [TSR_MODEL_IGNITION] =
        {"ignition",
         "du/dt = kappa lap(u) + A (1 - u) s^2, s = max(0, (u - theta) / (1 - theta)) + s_u; "
         "the reaction sub-stepped per cell",
         1,
         {"u"},
         5,
         {{"kappa", 1e-3, 0.0, 1, "diffusivity"},
          {"A", 1e3, 0.0, 0, "reaction rate"},
          {"theta", 0.1, 0.0, 0, "ignition threshold: no reaction below it", 1, 1.0, 1, 0},
          {"delta", 0.01, 0.0, 1, "largest progress of u per reaction sub-step", 1, 1.0, 0, 0},
          {"nmax", 1000, 1.0, 0, "most reaction sub-steps per cell and stage", 1, 1e5, 0, 1}},
         1, 0, 1, 0, TSR_METHODS_EXPLICIT},
    /* steady: the case's source is f in -lap(u) = f; no explicit stage (nothing to step) */
    [TSR_MODEL_POISSON] = {"poisson", "0 = lap(u) + s_u, i.e. -lap(u) = f with f = s_u", 1, {"u"}, 0,
                           {{0}}, 1, 0, 0, 1, TSR_METHODS_PINN},
    [TSR_MODEL_BURGERS] = {"burgers", "du/dt = nu lap(u) - u (du/dx + du/dy [+ du/dz]) + s_u", 1,
                           {"u"}, 1,
                           {{"nu", 0.01 / 3.14159265358979323846, 0.0, 1, "viscosity"}},
                           1, 0, 0, 0, TSR_METHODS_PINN},
};

const tsr_model_info *tsr_model_find(const char *name) {
  for (int m = 0; m < TSR_MODEL_COUNT; ++m)
    if (strcmp(tsr_models[m].name, name) == 0) return &tsr_models[m];
  return NULL;
}

void tsr_model_coef_derived(int model, const double *p, double *q) {
  switch (model) {
  case TSR_MODEL_WAVE: q[0] = p[0] * p[0]; break;
  case TSR_MODEL_GRAY_SCOTT: q[0] = p[2] + p[3]; break;
  case TSR_MODEL_ALLEN_CAHN: q[0] = p[0] * p[0]; break;
  case TSR_MODEL_IGNITION: q[0] = 1.0 / (1.0 - p[2]); break;
  default: break;
  }
}

/* Forward Euler on the 2*dim+1 point Laplacian is stable for dt * D * sum(4/h^2) <= 2. */
static double diffusion_limit(double D, const double h[3], int dim) {
  double s = 0.0;
  for (int d = 0; d < dim; ++d) s += 1.0 / (h[d] * h[d]);
  return D > 0.0 ? 1.0 / (2.0 * D * s) : HUGE_VAL;
}

double tsr_model_dt_limit(tsr_model_id id, const double *p, const double h[3], int dim) {
  switch (id) {
  case TSR_MODEL_HEAT: return diffusion_limit(p[0], h, dim);
  case TSR_MODEL_ADVECTION_DIFFUSION: {
    double a = 0.0;
    for (int d = 0; d < dim; ++d) a += fabs(p[1 + d]) / h[d];
    double adv = a > 0.0 ? 1.0 / a : HUGE_VAL;
    double dif = diffusion_limit(p[0], h, dim);
    return adv < dif ? adv : dif;
  }
  case TSR_MODEL_WAVE: {
    double s = 0.0;
    for (int d = 0; d < dim; ++d) s += 1.0 / (h[d] * h[d]);
    return 1.0 / (p[0] * sqrt(s));
  }
  case TSR_MODEL_GRAY_SCOTT: {
    double D = p[0] > p[1] ? p[0] : p[1];
    double dif = diffusion_limit(D, h, dim);
    return dif < 1.0 ? dif : 1.0; /* reaction rates are O(1) for u, v in [0, 1] */
  }
  case TSR_MODEL_ALLEN_CAHN: {
    /* f'(u) = gamma (1 - 3u^2) lies in [-2 gamma, gamma] for |u| <= 1; gamma <= 1 keeps the
     * bound of gamma = 1, so that the defaults' dt is unchanged */
    double dif = diffusion_limit(p[0] * p[0], h, dim);
    double rea = 0.5 / (p[1] > 1.0 ? p[1] : 1.0);
    return dif < rea ? dif : rea;
  }
  /* the reaction is sub-stepped inside each cell (kernels/models/ignition.h), so only
   * diffusion limits the step */
  case TSR_MODEL_IGNITION: return diffusion_limit(p[0], h, dim);
  /* no explicit stage (tsr_models[].methods) */
  case TSR_MODEL_POISSON:
  case TSR_MODEL_BURGERS:
  case TSR_MODEL_COUNT: break;
  }
  return HUGE_VAL;
}
