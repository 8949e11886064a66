/* The PINN's points: the training batch (interior collocation points, boundary and initial
 * points) with the targets of its loss terms, and the evaluation points (the grid's cell
 * centres at given times), all in physical coordinates, host doubles. Private to solver/pinn/.
 *
 * Random points come from a counter-based generator: point i of draw k of stream s is a pure
 * function of (case seed, k, s, i), so a restart redraws exactly the points the run had and
 * the random state a checkpoint needs is the iteration alone. */
#ifndef TSR_PINN_POINTS_H
#define TSR_PINN_POINTS_H

#include <stdint.h>

#include "decomp/layout.h"
#include "io/case.h"
#include "kernels/pinn.h"

enum { TSR_PINN_GROUP_PDE = 0, TSR_PINN_GROUP_BOUNDARY, TSR_PINN_GROUP_INITIAL,
       TSR_PINN_GROUP_INTERFACE, TSR_PINN_NGROUP };
extern const char *const tsr_pinn_group_names[TSR_PINN_NGROUP];

/* The subdomain a rank trains (DESIGN.md, PINN method): box `box` of the layout of every
 * rank's boxes (decomp/layout.h, the classical method's partitioners). NULL wherever one is
 * taken: one subdomain, the whole grid (the bits of a one-rank run). */
typedef struct {
  const tsr_layout *layout; /* borrowed */
  int box;
  /* time slabs (decomposition.time_slices > 1; all 0 without): the subdomain is its box x
   * [t_slab, t_slab+1] of nslab equal slices of [0, end]; the ranks are slab-major, rank =
   * slab x (the layout's ranks) + the box's owner, so rank0 = slab x nbox is the slab's first */
  int slab, nslab, rank0;
  int causal;               /* pinn.slabs: causal (no points on the slab's later face) */
} tsr_pinn_sub;

/* Where the subdomain's points are, per kind, and which neighbours share its faces. Points of
 * a box: interior `cells` are the box's cells (x fastest) times the time levels; N random
 * points become round(N * box cells / grid cells) (at least 1) uniform in the box; boundary
 * points per face become round(N * face share) on the box's part of each physical face (a
 * periodic axis the box spans whole keeps its pairs; a periodic face shared with another box
 * is an interface); initial points round(N * box share). Interface points (issue 18): on each
 * face piece shared with a neighbour box (the intersection of the two faces, a periodic image
 * included), `cells`: the centres of the piece's face cells (times the time levels), or N
 * random points per piece from the generator keyed by the pair of boxes, the axis and the
 * lower box's side, so both sides make the same points (the normal coordinate is each side's
 * own face: lo and hi across a periodic wrap). They are ordered by neighbour rank, then by
 * piece (axis, the lower box's side), then point: each neighbour's points are one run. */
typedef struct {
  int npeer;
  int nspace_peer;  /* the first nspace_peer are neighbours in space (the others in time) */
  int *peer;        /* neighbour ranks: in space ascending, then the earlier slab's rank, then
                       the later slab's */
  int *start;       /* first interface point of each (index from if_start) */
  int *count;       /* interface points shared with it */
} tsr_pinn_peers;

typedef struct {
  int nin, ncomp, nspace, timed;
  int npts;
  double *X;        /* nin x npts: X[j + nin * p] */
  double *T;        /* ncomp x npts: the terms' targets */
  int nterm;
  tsr_loss_term term[TSR_PINN_MAX_TERMS];
  int group[TSR_PINN_MAX_TERMS];     /* TSR_PINN_GROUP_* of each term */
  char name[TSR_PINN_MAX_TERMS][16]; /* "pde", "xlo", "x periodic", "initial", "interface" */
  int if_start, if_count; /* the interface points: the batch's last */
  int if_space;     /* the first if_space of them are on faces in space (the term interface);
                       then the slab faces: the box's cell centres at t0 (the term `slab
                       initial`, against the earlier slab's values), then at t1 (values sent to
                       the later slab; no term of this slab's) */
  double t0, t1;    /* the subdomain's time span ([0, end] without slabs) */
  int *F;           /* if_count faces of the interface points: 2 axis + side (this box's) */
  tsr_pinn_peers peers;
  tsr_box box;      /* the subdomain's cells */
} tsr_pinn_batch;

/* Uniform double in [0, 1) from (seed, draw, stream, i). */
double tsr_pinn_uniform(uint64_t seed, uint64_t draw, uint64_t stream, uint64_t i);

/* Points of the case's batch for draw k (k = iteration / resample_every, 0 without
 * resampling; only the interior points change between draws) with their targets from the
 * case's expressions (boundary values at each point's x and t, the source, the initial
 * condition). Errors: TSR_ERR_INPUT (an expression that does not compile: a message at its
 * position), TSR_ERR_MEMORY. */
tsr_err tsr_pinn_batch_build(const tsr_case *c, const tsr_pinn_sub *sub, uint64_t draw,
                             tsr_pinn_batch *b);

/* The batch's size without building it (for memory checks and the plan); *nif (may be NULL)
 * its interface points. -1 beyond 2^31 points. */
int tsr_pinn_batch_size(const tsr_case *c, const tsr_pinn_sub *sub, int *nterm, int *nif);

/* A batch of n points, nif of them on interfaces (tsr_pinn_batch_size's), that fits the int
 * point indices: TSR_OK, else TSR_ERR_INPUT naming grid.cells and pinn.points. For the run and
 * tessera check alike (check printed -1 points). */
tsr_err tsr_pinn_batch_fits(const tsr_case *c, int n, int nif);

void tsr_pinn_batch_free(tsr_pinn_batch *b);

/* The cell centres of the subdomain's box at time t (x fastest), as network inputs
 * (nin x cells). *X is new (free). Errors: TSR_ERR_MEMORY. */
tsr_err tsr_pinn_grid_points(const tsr_case *c, const tsr_pinn_sub *sub, double t, double **X,
                             int64_t *n);

/* The case's network shape and input normalisation (to [-1, 1] over the subdomain's box and
 * its time span: each rank's network normalises over its own box and slab). */
void tsr_pinn_shape(const tsr_case *c, const tsr_pinn_sub *sub, int *nin, double in_scale[4],
                    double in_shift[4]);

/* The boxes of nranks ranks for the case: the classical method's partitioners
 * (decomposition.partition, ranks, weights) over the grid, a 1-D grid as a 2-D one a cell
 * high, at least one cell per box and axis. *layout new (tsr_layout_free). Errors:
 * TSR_ERR_INPUT (the grid cannot give every rank a cell, weights of another rank count). */
tsr_err tsr_pinn_partition(const tsr_case *c, int nranks, tsr_layout *layout);

/* The time span [*t0, *t1] of the subdomain's slab (the whole [0, end] without slabs): slab k
 * of P spans [end k / P, end (k + 1) / P], the same bits on both sides of a slab face. */
void tsr_pinn_slab_span(const tsr_case *c, const tsr_pinn_sub *sub, double *t0, double *t1);

/* The slab of P (equal slices of [0, end]) whose span holds t (the last holds end). */
int tsr_pinn_slab_of(const tsr_case *c, int nslab, double t);

/* The subdomain's box (the whole grid without a layout) and its physical extent. */
tsr_box tsr_pinn_sub_box(const tsr_case *c, const tsr_pinn_sub *sub, double plo[3],
                         double phi[3]);

/* The physical coordinate of face index i (0..cells) along axis a: lo and hi exactly at the
 * ends, so neighbours and the whole grid agree bit for bit. */
double tsr_pinn_face_coord(const tsr_case *c, int a, int i);

#endif
