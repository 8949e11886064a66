/* The rebalancer's policy (DESIGN.md, Decomposition and rebalancing): from measured compute
 * times and counted work, a new partition whose ranks all take the same predicted time, and
 * the decision whether moving to it pays.
 *
 * Two causes of imbalance are told apart. Costly cells: the kernels count each cell's work
 * (1 per cell update, or the sub-steps a stiff cell takes), and the counts are summed onto
 * coarse blocks of the global grid (the cost map). Slow ranks: a rank's speed is its modelled
 * work over its measured compute time. The work model (tsr_rebalance_model) prices a rank's
 * step as cells + beta * extra, in cell updates: extra is the counts beyond one per cell (a
 * stiff cell's further sub-steps, which cost beta times a cell's update: 2.5-3 on CPU cores);
 * beta is fitted over the run's windows. Costly cells that move (a reaction front) are
 * followed: the map at the window's start and at its end give each costly block's
 * displacement, so that a rank's extra is the mean over the window it was timed in, and the
 * partition is cut for where the cost will be over the next steps (tsr_rebalance_decide).
 * The new partition is weighted RCB (the recursion of decomp/partition.c, x counted at half)
 * where each cut puts the share of the predicted cost that the two sides' summed speeds ask
 * for on each side, so every rank's predicted time is equal. Cuts fall at cell granularity:
 * inside a block the cost is taken as uniform.
 *
 * Everything except tsr_rebalance_gather and tsr_rebalance_costmap_sum is pure and
 * deterministic: work counts are integers (exact sums), times are shared bit for bit by an
 * allgather, and the arithmetic is fixed, so every rank computes the same model, decision and
 * boxes from the same figures. */
#ifndef TSR_REBALANCE_H
#define TSR_REBALANCE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "decomp/layout.h"

/* Work counts summed onto blocks of bs[0] x bs[1] x bs[2] cells of the global grid (the last
 * block of an axis may be shorter). cost[] has nb[0] * nb[1] * nb[2] entries, x fastest. */
typedef struct {
  int dim;
  int cells[3];  /* the global grid (1 on unused axes) */
  int bs[3];     /* block size along each axis (1 on unused axes) */
  int nb[3];     /* blocks along each axis */
  int64_t nblock;
  int64_t *cost; /* owned by the map; zeroed by init */
} tsr_rebalance_costmap;

/* Default bound on a cost map's blocks: 64k int64 (512 KiB per reduction). */
#define TSR_REBALANCE_MAX_BLOCKS 65536

/* Sets up a zeroed map over the global grid with the smallest cubic block size (same on every
 * active axis) that keeps nblock <= max_blocks (<= 0: TSR_REBALANCE_MAX_BLOCKS). Free with
 * tsr_rebalance_costmap_free. Errors: TSR_ERR_INPUT (bad grid), TSR_ERR_MEMORY. */
tsr_err tsr_rebalance_costmap_init(int dim, const int cells[3], int max_blocks,
                                   tsr_rebalance_costmap *map);

/* Releases the map's array; safe on a zeroed map. */
void tsr_rebalance_costmap_free(tsr_rebalance_costmap *map);

/* Sets every block to 0. */
void tsr_rebalance_costmap_clear(tsr_rebalance_costmap *map);

/* Adds work per_cell for every cell of region (global indices, clipped to the grid). */
void tsr_rebalance_costmap_add_uniform(tsr_rebalance_costmap *map, const tsr_box *region,
                                       int64_t per_cell);

/* Adds the per-cell counts work[] of box (x fastest over box, contiguous, host memory): the
 * kernels' counts of one rank's owned cells. box must lie inside the grid. */
void tsr_rebalance_costmap_add_cells(tsr_rebalance_costmap *map, const tsr_box *box,
                                     const uint32_t *work);

/* The map's cost inside box (blocks cut by the box count in proportion to their cells). */
double tsr_rebalance_costmap_box_cost(const tsr_rebalance_costmap *map, const tsr_box *box);

/* Cost-weighted RCB: nranks boxes over the map's grid such that the cost of each side of
 * every cut is in proportion to its ranks' summed rates (rate NULL: equal). Writes *out (box r
 * owned by rank r; free with tsr_layout_free); periodic is copied into it. A uniform map and
 * rate NULL give exactly tsr_partition's RCB boxes. Pure.
 * Errors: TSR_ERR_INPUT (no partition with min_width cells per rank and axis, bad rates),
 * TSR_ERR_MEMORY. */
tsr_err tsr_rebalance_partition(const tsr_rebalance_costmap *map, const int periodic[3],
                                int nranks, const double *rate, int min_width,
                                tsr_layout *out);

/* Settings of a decision (case section rebalance:, plus what the driver knows). */
typedef struct {
  double threshold;      /* imbalance (max/mean - 1 of compute times) above which to act */
  int window;            /* steps over which the predicted saving must repay a migration */
  int min_width;         /* cells per rank and axis the new boxes keep (the ghost width) */
  double bandwidth;      /* bytes/s a migration is assumed to move before one was measured;
                            <= 0: TSR_REBALANCE_BANDWIDTH */
  int64_t bytes_per_cell; /* bytes one cell carries in a migration (all fields, components) */
} tsr_rebalance_opts;

/* The estimate before the first migration is measured: 1 GB/s per rank on CPU ranks, below
 * what MPI over shared memory reaches (with the new fields' first touch), so a first rebalance
 * is never taken for free; 10 GB/s between GPUs, a PCIe-class floor under NCCL (NVLink moves
 * several times more). At 1 GB/s a GPU's first migration was never found to pay: on 2 H100s a
 * 512^3 box with one GPU slowed 2x was predicted to save 0.135 s over 100 steps and charged
 * 0.35 s; the move took 15.7 ms (bench/README.md, rebalance). */
#define TSR_REBALANCE_BANDWIDTH 1e9
#define TSR_REBALANCE_BANDWIDTH_GPU 1e10

/* The part of a measured migration's time taken as fixed (the exchange and the plans rebuilt,
 * whatever the bytes) when the next one moves fewer bytes. */
#define TSR_REBALANCE_FIXED 0.5

/* The work model: rank r's compute per step is (cells_r + beta * extra_r) / speed_r, with
 * extra_r the counts beyond one per cell in its box (the map's cost less its cells). beta is
 * the same on every rank (one code on one kind of core); it is fitted, with a speed for each
 * rank, by least squares over the last TSR_REBALANCE_MODEL_WINDOWS windows (each decision
 * multiplies an older window's weight by TSR_REBALANCE_MODEL_DECAY): a rank whose cells and
 * extra changed between windows (a migration, the front's motion) tells beta apart from its
 * speed. Where the windows cannot tell (every rank's mix the same, or never changing), weak
 * priors decide: the ranks equally fast, then beta 1; a slowed rank's windows outweigh the
 * first at once, and a rank whose speed changed by more than half keeps only its new windows.
 * beta is kept in [0, TSR_REBALANCE_MODEL_BETA_MAX]. A rank's fixed costs per step (its
 * calls, launches) are not modelled: fitted, they took up the change of a cell's cost between
 * windows (ranks sharing cores and caches) and misjudged a slowed rank. Owned by the caller;
 * tsr_rebalance_decide updates it. */
typedef struct {
  int nranks;
  double beta;        /* the cost of an extra count, in cell updates (prior 1) */
  int windows;        /* windows entered so far */
  int len, head;      /* the windows held, and where the next goes */
  double *hist;       /* TSR_REBALANCE_MODEL_WINDOWS x (weight, then cells, extra, seconds
                         per step of each rank) */
  double *inv;        /* per rank: the fit's 1 / speed */
  double last;        /* the imbalance the last decision predicted for its boxes (< 0: none) */
  double margin;      /* how far the measured imbalance came out above the predicted one:
                         the largest shortfall, each decision multiplying the older by
                         TSR_REBALANCE_MARGIN_DECAY, at most half the threshold */
} tsr_rebalance_model;

#define TSR_REBALANCE_MODEL_WINDOWS 16
#define TSR_REBALANCE_MODEL_DECAY 0.8
#define TSR_REBALANCE_MODEL_BETA_MAX 1e4
#define TSR_REBALANCE_MARGIN_DECAY 0.9

/* Sets up a model at its prior for nranks ranks. Free with tsr_rebalance_model_free.
 * Errors: TSR_ERR_MEMORY. */
tsr_err tsr_rebalance_model_init(int nranks, tsr_rebalance_model *model);

/* Releases the model's array; safe on a zeroed model. */
void tsr_rebalance_model_free(tsr_rebalance_model *model);

/* What the ranks measured over the window (tsr_rebalance_gather collects it). */
typedef struct {
  int nranks;
  int nsteps;                       /* steps the figures cover (>= 1) */
  const double *time;               /* per rank: compute seconds over the steps */
  const int64_t *work;              /* per rank: work counted over the steps */
  const tsr_rebalance_costmap *map; /* the work of the same steps on the global grid */
  /* Optional (zero: not given). start: the same map counted at the start of the window, span
   * steps before map, so that the costly cells' motion is followed; model: the work model,
   * updated from these figures (NULL: beta 1, nothing learnt). wall_ratio: the ranks' wall time
 * over their measured time in the window (> 1 where ranks time CPU time on shared cores): the
 * saving is weighed against the migration, timed by the wall clock, in wall seconds (<= 0:
 * 1). */
  const tsr_rebalance_costmap *start;
  int span;
  tsr_rebalance_model *model;
  double wall_ratio;
} tsr_rebalance_measure;

/* What the rebalancer remembers between decisions (checkpoints keep it). */
typedef struct {
  int migrations;        /* migrations done */
  double last_seconds;   /* the last migration's wall time (the slowest rank's; at most twice
                            the cost predicted for it: tsr_rebalance_note_migration) */
  int64_t last_bytes;    /* the bytes the busiest rank moved in it */
} tsr_rebalance_state;

typedef enum {
  TSR_REBALANCE_YES = 0,     /* migrate to the new boxes */
  TSR_REBALANCE_BALANCED,    /* imbalance at or below the threshold */
  TSR_REBALANCE_NO_GAIN,     /* the predicted saving over the window does not repay the move */
  TSR_REBALANCE_SAME_BOXES,  /* the new partition is the current one */
  TSR_REBALANCE_NO_DATA      /* no compute time was measured */
} tsr_rebalance_reason;

/* One decision, for the log line and report.json. Times are per step (seconds). */
typedef struct {
  int rebalance;             /* 1: adopt *next */
  tsr_rebalance_reason reason;
  double imbalance;          /* measured: max/mean - 1 of the ranks' compute times */
  double expected;           /* the same, predicted for the current boxes over the next
                                window (differs from imbalance where costly cells move) */
  double predicted;          /* the same, predicted for the new boxes */
  double step_time;          /* measured: the slowest rank's compute time per step */
  double expected_step_time; /* predicted for the current boxes over the next window */
  double predicted_step_time;/* predicted for the new boxes */
  double saving;             /* (expected_step_time - predicted_step_time) * window, in wall
                                seconds (m->wall_ratio) */
  double beta;               /* the work model's beta the decision used */
  double margin;             /* the model's margin the decision added to expected */
  double migration_cost;     /* seconds: from the last migration (half its time fixed, the
                                other half scaled down for fewer bytes, plus the extra bytes at its rate or at least
                                opts.bandwidth for more), else bytes over opts.bandwidth */
  int migration_measured;    /* 1 when migration_cost comes from a measured migration */
  int64_t cells_moved;       /* cells whose owner changes */
  int64_t bytes_moved;       /* the busiest rank's bytes sent + received */
} tsr_rebalance_decision;

/* Decides from the measurements whether to leave cur for a new partition. A rebalance is
 * considered when the imbalance measured, or the one expected on the current boxes over the
 * next opts->window steps (costly cells that move) plus the model's margin (how far its
 * predictions fell short of the measurements before), is above the threshold, and taken when
 * the predicted saving over those steps exceeds the migration's cost. On return *d is
 * filled; when d->rebalance is 1, *next holds the new layout (free with tsr_layout_free),
 * else *next is zeroed. Speeds that differ by less than half the threshold are taken as
 * equal, so measurement noise moves no cell and a partition returns to its plain RCB boxes
 * once a slowdown ends. m->model, when given, is updated (the same on every rank). Pure: the
 * same inputs give the same *d, *next and model on every rank.
 * Errors: TSR_ERR_INPUT (measurements that do not fit the layout), TSR_ERR_MEMORY. */
tsr_err tsr_rebalance_decide(const tsr_layout *cur, const tsr_rebalance_measure *m,
                             const tsr_rebalance_opts *opts, const tsr_rebalance_state *state,
                             tsr_layout *next, tsr_rebalance_decision *d);

/* The cells whose owner differs between layouts a and b (one box per rank in both). */
int64_t tsr_rebalance_cells_moved(const tsr_layout *a, const tsr_layout *b);

/* Records a migration's wall time and the bytes the busiest rank moved into state. predicted:
 * the cost the decision weighed it against when that came from a measured migration
 * (d->migration_measured), else 0. A time above twice that is recorded as twice that: the
 * next decisions weigh their migration against this one's time, so one migration slowed by
 * something else (a rank descheduled on shared cores: 14 ms where the others took 0.1-0.4 ms,
 * 2 CPU ranks on 2 loaded cores) would price every later one out until the imbalance grew to
 * repay it, and none would measure the cost again. A lasting change is still learned, the
 * recorded cost doubling with each migration. */
void tsr_rebalance_note_migration(tsr_rebalance_state *state, double seconds, int64_t bytes,
                                  double predicted);

/* The reason as a short phrase for the log line ("imbalance below the threshold"). */
const char *tsr_rebalance_reason_text(tsr_rebalance_reason r);

/* Writes the decision's log line into buf, e.g. "rebalance: imbalance 0.412 -> 0.013
 * predicted, 5120 cells moved (estimated 0.4 ms)" or "... not rebalanced: REASON".
 * Returns buf. */
const char *tsr_rebalance_describe(const tsr_rebalance_decision *d, char *buf, size_t size);

/* Collective over comm: shares every rank's compute time and work (one MPI_Allgather into
 * time[nranks] and work[nranks], rank order) and sums the ranks' cost maps in place (one
 * MPI_Allreduce; every rank's map must have the same shape). Afterwards every rank holds the
 * same figures, bit for bit. Errors: TSR_ERR_MPI, TSR_ERR_MEMORY. */
tsr_err tsr_rebalance_gather(MPI_Comm comm, double my_time, int64_t my_work,
                             tsr_rebalance_costmap *map, double *time, int64_t *work);

/* Collective over comm: sums the ranks' cost maps in place (one MPI_Allreduce), as
 * tsr_rebalance_gather does, for a map counted without times (the window's start).
 * Errors: TSR_ERR_MPI. */
tsr_err tsr_rebalance_costmap_sum(MPI_Comm comm, tsr_rebalance_costmap *map);

/* Whether a run rebalances: the case's rebalance.enabled (-1: not given, then on with
 * several ranks, off on one). */
static inline int tsr_rebalance_enabled(int setting, int nranks) {
  return setting < 0 ? nranks > 1 : setting != 0;
}

#endif
