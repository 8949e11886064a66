/* Case files: read with libyaml, overridden with --set KEY=VALUE, validated in full.
 *
 * Every problem is reported as "FILE:LINE:COL: KEY: message" (for an override,
 * "--set KEY=VALUE: KEY: message"), all problems of a case at once, one per line. Expressions
 * are kept as text with their position; io/expr compiles them (tsr_case_check_expressions). */
#ifndef TSR_CASE_H
#define TSR_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "decomp/layout.h"
#include "io/error.h"
#include "kernels/models.h"

#define TSR_MAX_PARAMS 64
#define TSR_NFACE 6 /* xlo, xhi, ylo, yhi, zlo, zhi */

/* Where a value came from: a file position (line >= 1), an override (file = the override text
 * "time.end=2", line 0, col: 1-based column inside that text), or a default (file NULL). */
/* The most steps a run takes (time.steps, or time.end / dt): 2^62, so that a step count and
 * its sums stay inside int64_t. */
#define TSR_CASE_MAX_STEPS ((int64_t)1 << 62)

typedef struct {
  const char *file; /* borrowed from the case (its path or the override text); NULL: default */
  int line, col;    /* 1-based; line 0 for overrides and defaults */
} tsr_loc;

/* An expression as written: text NULL when the case gives none. */
typedef struct {
  char *text;
  tsr_loc loc;   /* position of the first character of the expression text itself */
  char *key;     /* dotted key, e.g. "boundary.xlo.value.u" */
} tsr_case_expr;

typedef enum { TSR_METHOD_EXPLICIT = 0, TSR_METHOD_IMPLICIT = 1, TSR_METHOD_PINN = 2 } tsr_method; /* parareal (3): later */
/* time.scheme of method implicit: PETSc's TSBEULER, TSCN, TSBDF (order 2), TSARKIMEX */
typedef enum { TSR_ISCHEME_BEULER = 0, TSR_ISCHEME_CN, TSR_ISCHEME_BDF2, TSR_ISCHEME_ARK_IMEX } tsr_implicit_scheme;
typedef enum { TSR_PINN_TANH = 0, TSR_PINN_SIN } tsr_pinn_act;
typedef enum { TSR_BACKEND_AUTO = 0, TSR_BACKEND_HOST, TSR_BACKEND_CUDA } tsr_backend;
typedef enum { TSR_PRECISION_DOUBLE = 0, TSR_PRECISION_SINGLE } tsr_precision;
typedef enum { TSR_BC_DIRICHLET = 0, TSR_BC_NEUMANN, TSR_BC_PERIODIC } tsr_bc_type;
/* time.fuse's largest value: ghosts 16 x 4 stages deep are already wider than fusing pays */
#define TSR_MAX_FUSE 16
/* time.fuse: auto (tsr_case.time.fuse 0): the run measures 1, 2, 4 and 8 on its first steps */
#define TSR_FUSE_AUTO 0
#define TSR_FUSE_AUTO_MAX 8

typedef enum { TSR_SCHEME_EULER = 0, TSR_SCHEME_SSPRK2, TSR_SCHEME_SSPRK3, TSR_SCHEME_RK4 } tsr_scheme;
typedef enum { TSR_GRAPHS_AUTO = 0, TSR_GRAPHS_ON, TSR_GRAPHS_OFF } tsr_graphs_mode;
/* rebalance.clock: what a CPU rank's compute time is (GPUs time with CUDA events either way) */
typedef enum { TSR_CLOCK_WALL = 0, TSR_CLOCK_CPU } tsr_rebalance_clock;
typedef enum { TSR_PROGRESS_AUTO = 0, TSR_PROGRESS_BAR, TSR_PROGRESS_LINES, TSR_PROGRESS_NONE } tsr_progress_mode;

/* When something is written (output.checkpoint_every, output.snapshot_every): every `steps`
 * steps, or every `time` of simulated time; both 0: never. solver/schedule.h applies it. */
typedef struct {
  int64_t steps; /* >= 1, or 0 */
  double time;   /* > 0, or 0 */
} tsr_case_every;

typedef struct {
  tsr_bc_type type;
  tsr_case_expr value[TSR_MAX_COMP]; /* per component; Dirichlet: u on the face; Neumann: du/dn
                                        (outward normal) on the face. Unused for periodic. */
} tsr_case_bc;

typedef struct {
  /* provenance */
  char *path;          /* case file path as given */
  char *name;          /* `name:` or the file's stem */
  char *text;          /* the file's text, verbatim */
  char **overrides;    /* the --set strings, as given */
  int noverride;
  uint64_t hash;       /* FNV-1a 64 of the text and the overrides, in order */

  tsr_method method;
  tsr_backend backend;
  tsr_precision precision; /* storage of the fields (and of the files that hold them); the
                              PINN's arithmetic too. Default double, single with method pinn */
  tsr_model_id model;
  int ncomp;           /* tsr_models[model].ncomp */

  /* grid: cell-centred, cell (i,j,k) has centre lo + (i + 1/2) h */
  int dim;             /* 2 or 3, from the length of grid.cells (1 with method pinn) */
  int cells[3];        /* 1 on unused axes */
  double lo[3], hi[3]; /* 0 and 1 on unused axes */
  int periodic[3];

  /* params: every name usable in expressions; the model's own params first, in the model's
   * order, with their defaults when the case does not give them */
  int nparam;
  char *param_name[TSR_MAX_PARAMS];
  double param_value[TSR_MAX_PARAMS];
  tsr_loc param_loc[TSR_MAX_PARAMS]; /* line 0 for defaults */

  tsr_case_expr initial[TSR_MAX_COMP]; /* required for every component */
  tsr_case_expr source[TSR_MAX_COMP];  /* optional */
  tsr_case_expr exact[TSR_MAX_COMP];   /* optional */
  tsr_case_bc bc[TSR_NFACE];           /* periodic axes have TSR_BC_PERIODIC on both faces;
                                          in 2D faces zlo, zhi are unused (texts NULL) */

  struct {
    tsr_scheme scheme;
    int dt_auto;       /* 1: dt = cfl * stability limit */
    double dt;         /* when !dt_auto */
    double cfl;        /* default 0.9 */
    int has_end;
    double end;        /* stop at this time (dt shrunk so a whole number of steps lands on it) */
    int has_steps;
    long steps;        /* or after this many steps (at most TSR_CASE_MAX_STEPS) */
    int fuse;          /* time.fuse: steps per halo exchange (deep halos); 1 = every stage;
                          TSR_FUSE_AUTO: measured at start-up (solver/fuse_auto.c) */
  } time;

  struct {
    tsr_part_kind partition; /* rcb (default), slabs, grid (given by ranks:) */
    int ranks[3];            /* for grid; 1 on unused axes */
    int nweights;            /* optional rcb/slabs weights, one per rank */
    double *weights;
    int time_slices;         /* > 1: method pinn: time slabs (space-time subdomains); method
                                explicit: parareal's time slices (parareal below) */
  } decomp;

  struct {
    char *dir;               /* default "out/<name>" */
    int monitor_every;       /* steps between monitor lines; default: about 20 lines per run */
    tsr_progress_mode progress;
    tsr_case_every checkpoint_every; /* checkpoints; never at the last step (final.h5 has it) */
    int keep;                /* checkpoints kept in dir (the newest); default 3 */
    int io;                  /* output.io: 0 auto, 1 serial, 2 parts (io/output.h
                                TSR_OUTPUT_IO_*) */
    tsr_case_every snapshot_every; /* snapshots for viewing (io/snapshot.h) */
    int snapshot_single;     /* output.snapshot_precision: single (float32 datasets) */
    int checkpoint_async;    /* 1 (default): checkpoint files are written by a background thread */
  } output;

  struct {
    double timeout;          /* seconds without progress before the watchdog aborts the job;
                                default 300 (solver/watchdog.h) */
  } comm;

  struct {
    tsr_graphs_mode graphs;  /* CUDA graphs of whole steps (solver/graph.h); auto: on with the
                                CUDA backend */
  } gpu;

  struct {                   /* the rebalancer (decomp/rebalance.h) */
    int every;               /* steps between decisions; default 100 */
    double threshold;        /* imbalance (max/mean - 1 of compute times) to act on; 0.05 */
    int window;              /* steps the figures are measured over, <= every; default every */
    int enabled;             /* 1, 0, or -1 when not given: tsr_rebalance_enabled decides (on
                                with several ranks, off on one) */
    double reserve;          /* GPUs: room each field keeps for a box this fraction larger than
                                the rank's first (capped by free memory); default 0.5 */
    tsr_rebalance_clock clock; /* how CPU ranks time their compute; default wall */
  } rebalance;

  struct {                   /* method: pinn (solver/pinn/pinn.h), set only with it */
    int width, depth;        /* hidden layers of width units; defaults 64, 4 */
    tsr_pinn_act act;        /* default tanh */
    long interior;           /* 0: the grid's cell centres (x times levels in time); N > 0:
                                N random points of the space(-time) box */
    int times;               /* time levels of the cell centres in a time-dependent case */
    long resample_every;     /* with N random points: new points every this many iterations
                                (0: never) */
    long boundary;           /* points per boundary face (over [0, end] with time) */
    long initial;            /* points at t = 0 (time-dependent cases) */
    uint64_t seed;           /* points and weights start from it */
    long iface;              /* interface points (several ranks): 0: the centres of the shared
                                face cells (x time levels); N > 0: N random points per face
                                piece shared with a neighbour */
    double w_pde, w_boundary, w_initial; /* loss weights */
    double w_iface[3];       /* interface terms: value (XPINN, continuity to the average),
                                flux (cPINN), residual (XPINN) */
    long iterations;         /* Adam iterations */
    double lr, decay;        /* learning rate lr * decay^(iteration / decay_every) */
    long decay_every;
    long lbfgs;              /* L-BFGS iterations after Adam's (0: none) */
    int lbfgs_history;       /* its pairs of steps and gradient changes kept */
    long log_every;          /* iterations between progress lines and history rows */
    int causal;              /* time slabs: 0 all at once, 1 causal (one slab after another) */
    int given;               /* 1 when the case has a pinn: section */
  } pinn;

  struct {                   /* method: implicit (io/case_implicit.c), set only with it */
    tsr_implicit_scheme scheme; /* time.scheme; default bdf2 */
    int adaptive;            /* time.adaptive: TS adaptivity from time.dt on, to rtol/atol */
    double rtol, atol;       /* defaults 1e-4, 1e-6 */
    int nopt;                /* the petsc: section, in the file's order: option names without
                                the dash, values as written (NULL: a flag without value) */
    char **opt_name, **opt_value;
    tsr_loc *opt_loc;        /* where each option was written */
  } implicit;

  struct {                   /* parareal (io/case_parareal.c), set only with time_slices > 1 and
                                method explicit */
    int coarsen;             /* the coarse grid is cells / coarsen on every axis; default 2 */
    tsr_scheme coarse_scheme;/* default time.scheme */
    double coarse_cfl;       /* coarse dt = this x the coarse grid's limit (when coarse_dt 0) */
    double coarse_dt;        /* > 0: the coarse step as given */
    double tol;              /* stop when no slice-end state changes by tol (relative max norm) */
    int max_iterations;      /* default time_slices */
    int slices_per_rank;     /* slices a rank runs in turn; default 1 */
  } parareal;

  struct {                   /* for tests and benchmarks only */
    int slowdown;            /* 1 when debug.slowdown is given */
    int slowdown_rank;       /* the rank whose compute is repeated */
    double slowdown_factor;  /* its compute takes this many times as long (>= 1) */
    long slowdown_steps[2];  /* from step a to step b, both included */
    tsr_loc slowdown_loc;    /* where debug.slowdown.rank was given (the rank is checked against
                                the rank count when the run starts) */
  } debug;
} tsr_case;

/* The largest grids a case may give (io/case.c says why): cells per axis, cells in all. */
#define TSR_CASE_MAX_AXIS_CELLS (1 << 29)
#define TSR_CASE_MAX_CELLS ((int64_t)1 << 53)

/* The largest case file tsr_case_load reads, in bytes (a case file is a few KB). */
#define TSR_CASE_MAX_BYTES (64 << 20)

/* Reads and validates the case file at path with the overrides applied in order. On success
 * *out is a new case owned by the caller (tsr_case_destroy). Errors: TSR_ERR_INPUT with every
 * problem found, one per line, and for a path that names no readable file or a file larger
 * than TSR_CASE_MAX_BYTES (a pipe too: the cap holds while reading); TSR_ERR_IO when reading
 * fails part way (message names the file). */
tsr_err tsr_case_load(const char *path, int noverride, char *const *overrides, tsr_case **out);

/* As tsr_case_load, for a case held in memory; name stands for the file in messages. */
tsr_err tsr_case_load_string(const char *name, const char *text, int noverride,
                             char *const *overrides, tsr_case **out);

/* Compiles every expression of the case with io/expr and reports, all at once, each that does
 * not compile as FILE:LINE:COL (column of the offending character). Also refuses params that
 * are neither the model's nor used by any expression (likely typos). Errors: TSR_ERR_INPUT. */
tsr_err tsr_case_check_expressions(const tsr_case *c);

/* Checks what the case says against the run's rank count: debug.slowdown.rank must be one
 * of the ranks. Errors: TSR_ERR_INPUT, the message at the key's FILE:LINE:COL (or --set). */
tsr_err tsr_case_check_ranks(const tsr_case *c, int nranks);

/* Value of the parameter called name (model params always exist). Returns 0 if absent. */
double tsr_case_param(const tsr_case *c, const char *name);

/* Writes loc as messages show it into buf: "FILE:LINE:COL", "--set KEY=VALUE" for an override,
 * "(default)" for a default. Returns buf. */
const char *tsr_case_loc_str(const tsr_loc *loc, char *buf, size_t size);

/* Face index 0..5 from "xlo".."zhi", or -1. */
int tsr_case_face(const char *name);
extern const char *const tsr_case_face_names[TSR_NFACE];

/* Hash of what determines the solution, for checkpoints: as c->hash but leaving out the
 * --set overrides of keys that only say how a run is laid out or where it writes
 * (decomposition.*, output.*, backend, comm.*, gpu.*, rebalance.*, debug.*; pinn.adam.iterations
 * and pinn.log_every, which say where training stops and how often it logs), so a restart may
 * use other ranks or partitioner.
 * Edits to those keys inside the file still change it. */
uint64_t tsr_case_restart_hash(const tsr_case *c);

/* ---- comparing cases (io/case_diff.c) ---------------------------------------------- */

/* One key whose resolved value differs between two cases. */
typedef struct {
  char *key;    /* dotted, as in case files: "params.kappa", "boundary.xlo.value.u" */
  char *a, *b;  /* the two values as text; "(none)" where a case has none */
  int fatal;    /* model or grid.cells (the dimension with it): a state of one case can never
                   continue as the other */
  int stop;     /* time.end or time.steps: where the run stops, not what it computes, so a
                   run that ended continues to a later end (README, Continuing a run) */
} tsr_case_change;

typedef struct {
  int n;        /* differing keys */
  int nfatal;   /* how many of them are fatal */
  int nstop;    /* how many of them are stopping criteria (stop) */
  tsr_case_change *item;
} tsr_case_changes;

/* Compares the resolved values (defaults filled in, overrides applied) of the keys that
 * determine the solution: model, method, grid.*, params.*, initial.*, source.*, exact.*,
 * boundary.* and time.*; not name, backend, decomposition.* nor output.*, which only say how
 * and where a run goes. *out (zeroed first) gets one item per differing key, in that order;
 * the caller frees it with tsr_case_changes_free. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_case_diff(const tsr_case *a, const tsr_case *b, tsr_case_changes *out);

/* Frees the items and zeroes *d; accepts NULL. */
void tsr_case_changes_free(tsr_case_changes *d);

/* Appends "  KEY: A_NAME A, B_NAME B" lines for the first max items (then "  ... and N more")
 * to the current error message with tsr_err_append. */
void tsr_case_changes_append(const tsr_case_changes *d, const char *a_name, const char *b_name,
                             int max);

/* The case as a checkpoint records it: the file's text, then one "# --set KEY=VALUE" comment
 * line per override, in order, so that the file alone says how its state was made. A new
 * string the caller frees; NULL when out of memory. */
char *tsr_case_record(const tsr_case *c);

/* Reads a record made by tsr_case_record back into a case: the text with the "# --set" lines
 * that end it applied as overrides. name stands for the file in messages. As
 * tsr_case_load_string (errors: TSR_ERR_INPUT, TSR_ERR_MEMORY). */
tsr_err tsr_case_load_record(const char *name, const char *record, tsr_case **out);

/* Frees the case and sets *c to NULL; accepts NULL. */
void tsr_case_destroy(tsr_case **c);

/* A PETSc option (name without its dash, value or NULL) that would change the time plan that
 * method implicit sets from time: (its step, end, adaptivity): TS would end elsewhere than
 * time.end while the run reports it done, or step where checkpoints and snapshots do not
 * expect. What sets it instead (a sentence), or NULL for an option PETSc may take. Refused in
 * the case's petsc: section (io/case_implicit.c) and on the command line (the run). */
const char *tsr_case_petsc_owned(const char *name, const char *value, int adaptive);

#endif
