/* The models tessera knows: names, components, parameters with defaults and ranges, and the
 * explicit stability limit. Host-only metadata; the per-cell physics lives in
 * kernels/models/<model>.h (host + device). */
#ifndef TSR_MODELS_H
#define TSR_MODELS_H

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_MAX_COMP 4
#define TSR_MAX_MODEL_PARAMS 8

typedef enum {
  TSR_MODEL_HEAT = 0,
  TSR_MODEL_ADVECTION_DIFFUSION,
  TSR_MODEL_WAVE,
  TSR_MODEL_GRAY_SCOTT,
  TSR_MODEL_ALLEN_CAHN,
  TSR_MODEL_IGNITION,
  TSR_MODEL_POISSON,
  TSR_MODEL_BURGERS,
  TSR_MODEL_COUNT
} tsr_model_id;

typedef struct {
  const char *name;  /* key under params: */
  double def;        /* value when the case does not give one */
  double min;        /* smallest accepted value */
  int min_open;      /* 1: the value must be > min; 0: >= min */
  const char *doc;   /* one line for the README and messages */
  int has_max;       /* 1: the value must also be < max (max_open) or <= max */
  double max;
  int max_open;
  int integer;       /* 1: the value must be a whole number (a count) */
} tsr_param_spec;

typedef struct {
  const char *name;            /* as written in case files: model: <name> */
  const char *equation;        /* the PDE, for messages and `tessera check` */
  int ncomp;                   /* number of solution components */
  const char *comp[TSR_MAX_COMP]; /* component names: keys of initial:, exact:, source:, ... */
  int nparam;
  tsr_param_spec param[TSR_MAX_MODEL_PARAMS];
  int ghost;                   /* stencil radius = ghost width */
  int transcendental;          /* 1 when the per-cell update calls libm (GPU vs host tolerance) */
  int varies;                  /* 1 when a cell's work depends on its state (tsr_model_work) */
  /* fields added later stay at the end, so that positional initialisers above keep working */
  int steady;                  /* 1: no time derivative, the PDE is 0 = F + source (poisson) */
  int methods;                 /* TSR_METHODS_* mask: the methods that can solve the model */
} tsr_model_info;

/* tsr_model_info.methods: a model without TSR_METHODS_EXPLICIT has no explicit stage (the
 * stage dispatch skips it, tsr_stage_cuda refuses it, tsr_model_dt_limit has no limit).
 * TSR_METHODS_IMPLICIT: method implicit (solver/implicit/) assembles its Jacobian from the
 * model's pointwise partials (tsr_model_point with J). */
enum { TSR_METHODS_EXPLICIT = 1, TSR_METHODS_PINN = 2, TSR_METHODS_IMPLICIT = 4 };

/* The table, indexed by tsr_model_id. */
extern const tsr_model_info tsr_models[TSR_MODEL_COUNT];

/* The model called name, or NULL. */
const tsr_model_info *tsr_model_find(const char *name);

/* The derived constants tsr_cell_coef.q of model from its parameters p (model order), computed
 * once on the host by every method (q[0] = eps^2 for allen_cahn, ...). */
void tsr_model_coef_derived(int model, const double *p, double *q);

/* The largest stable forward-Euler-like time step of the explicit scheme for these parameter
 * values (in the model's param order) and cell sizes h[0..dim-1]; before the cfl factor.
 * HUGE_VAL (no finite limit: dt = auto is refused) for a model without an explicit stage. */
double tsr_model_dt_limit(tsr_model_id id, const double *param, const double h[3], int dim);

#ifdef __cplusplus
}
#endif

#endif
