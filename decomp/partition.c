/* Partitioners: weighted recursive coordinate bisection (default), slabs and explicit grids.
 *
 * Every rank runs this code on the same input and must get the same boxes, so the arithmetic
 * is fixed: weights are summed in rank order, cut positions are rounded with floor(x + 0.5),
 * and there is no contraction (-ffp-contract=off). Feasibility uses the capacity of a box,
 * prod_d floor(len_d / min_width): no guillotine split can give more boxes that are min_width
 * wide on every axis, and RCB reaches it because a cut is only taken where both sides keep
 * enough capacity for their ranks. */
#include "decomp/layout.h"
#include "decomp/partition_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_name[] = {"rcb", "slabs", "grid"};

/* Boxes of min_width cells on every active axis that fit in b, saturated at INT_MAX. */
static int64_t box_capacity(const tsr_box *b, int dim, int w) {
  int64_t cap = 1;
  for (int d = 0; d < dim; ++d) {
    cap *= tsr_box_len(b, d) / w;
    if (cap > INT_MAX) cap = INT_MAX;
  }
  return cap;
}

/* Capacity of b with axis `skip` left out: how many ranks one min_width-thick layer holds. */
static int64_t layer_capacity(const tsr_box *b, int dim, int w, int skip) {
  int64_t cap = 1;
  for (int d = 0; d < dim; ++d) {
    if (d == skip) continue;
    cap *= tsr_box_len(b, d) / w;
    if (cap > INT_MAX) cap = INT_MAX;
  }
  return cap;
}

/* A cut across x costs as much as one across another axis twice as long: its faces are one
 * cell per row in memory (x fastest), so the halo packs and the shell kernels touch a 32-byte
 * sector per cell, where faces of the other axes are contiguous rows or planes (measured on
 * nvidia-h200-x2, 512^2 faces: pack + unpack + shell 51 us across x, 12 us across z). */
static int cut_length(const tsr_box *b, int d) {
  return d == 0 ? tsr_box_len(b, 0) / 2 : tsr_box_len(b, d);
}

/* Active axes by decreasing cut_length, ties to the higher index (the slowest axis first). */
static void axes_by_length(const tsr_box *b, int dim, int order[3]) {
  for (int d = 0; d < dim; ++d) {
    int i = d;
    while (i > 0 && cut_length(b, order[i - 1]) <= cut_length(b, d)) {
      order[i] = order[i - 1];
      --i;
    }
    order[i] = d;
  }
}

static double weight_sum(const double *wt, int r0, int r1) {
  double s = 0.0;
  for (int r = r0; r < r1; ++r) s += wt ? wt[r] : 1.0;
  return s;
}

/* The cut (cells on the low side) closest to len * part / total, kept inside [lo, hi]. */
static int rounded_cut(int len, double part, double total, int lo, int hi) {
  double ideal = (double)len * (part / total);
  double c = floor(ideal + 0.5);
  if (c < lo) return lo;
  if (c > hi) return hi;
  return (int)c;
}

int tsr_partition_rounded_cut(int len, double part, double total, int lo, int hi) {
  return rounded_cut(len, part, total, lo, hi);
}

/* Tries to split n ranks as n1 + (n - n1) across one of b's axes (longest first). Returns
 * 1 and the cut when both sides keep enough capacity for their ranks. The cutter, when given,
 * places the cut inside [lo, hi] (the rebalancer's cost map); else the cells are split. */
static int rcb_try(const tsr_box *b, int dim, int w, const double *wt, int r0, int n, int n1,
                   const tsr_part_cutter *cutter, int *axis, int *cut) {
  int order[3] = {0, 1, 2};
  axes_by_length(b, dim, order);
  int n2 = n - n1;
  for (int i = 0; i < dim; ++i) {
    int d = order[i];
    int64_t layer = layer_capacity(b, dim, w, d);
    if (layer == 0) return 0;
    int64_t lo = (int64_t)w * ((n1 + layer - 1) / layer);
    int64_t hi = tsr_box_len(b, d) - (int64_t)w * ((n2 + layer - 1) / layer);
    if (lo > hi) continue;
    *axis = d;
    double part = weight_sum(wt, r0, r0 + n1), total = weight_sum(wt, r0, r0 + n);
    *cut = cutter ? cutter->cut(cutter->ctx, b, d, part, total, (int)lo, (int)hi)
                  : rounded_cut(tsr_box_len(b, d), part, total, (int)lo, (int)hi);
    return 1;
  }
  return 0;
}

/* Splits b over ranks [r0, r0 + n). The rank split is n/2 first; only where no axis can
 * take that split (close to the capacity limit) the nearest other split that fits is used,
 * so that every rank count up to the capacity is served. */
static int rcb(tsr_box b, int dim, int w, const double *wt, int r0, int n,
               const tsr_part_cutter *cutter, tsr_box *out) {
  if (box_capacity(&b, dim, w) < n) return 0;
  if (n == 1) {
    out[r0] = b;
    return 1;
  }
  int axis = -1, cut = 0, n1 = 0;
  for (int delta = 0; delta < n && axis < 0; ++delta) {
    for (int sign = 0; sign < 2 && axis < 0; ++sign) {
      if (delta == 0 && sign == 1) break;
      n1 = n / 2 + (sign ? delta : -delta);
      if (n1 < 1 || n1 >= n) continue;
      if (!rcb_try(&b, dim, w, wt, r0, n, n1, cutter, &axis, &cut)) axis = -1;
    }
  }
  if (axis < 0) return 0;
  tsr_box lo = b, hi = b;
  lo.hi[axis] = b.lo[axis] + cut;
  hi.lo[axis] = b.lo[axis] + cut;
  return rcb(lo, dim, w, wt, r0, n1, cutter, out) &&
         rcb(hi, dim, w, wt, r0 + n1, n - n1, cutter, out);
}

int tsr_partition_rcb(tsr_box global, int dim, int min_width, const double *weights,
                      int nranks, const tsr_part_cutter *cutter, tsr_box *out) {
  return rcb(global, dim, min_width > 0 ? min_width : 1, weights, 0, nranks, cutter, out);
}

/* Cuts along the longest axis into n slabs, each side of each cut sized by the weights. */
static int slabs(tsr_box b, int dim, int w, const double *wt, int n, tsr_box *out) {
  int order[3] = {0, 1, 2};
  axes_by_length(&b, dim, order);
  int d = order[0];
  int len = tsr_box_len(&b, d);
  for (int a = 0; a < dim; ++a)
    if (tsr_box_len(&b, a) < w) return 0;
  if ((int64_t)n * w > len) return 0;
  double total = weight_sum(wt, 0, n), cum = 0.0;
  int prev = 0;
  for (int r = 0; r < n; ++r) {
    cum += wt ? wt[r] : 1.0;
    int c = r == n - 1 ? len : rounded_cut(len, cum, total, prev + w, len - (n - 1 - r) * w);
    out[r] = b;
    out[r].lo[d] = b.lo[d] + prev;
    out[r].hi[d] = b.lo[d] + c;
    prev = c;
  }
  return 1;
}

/* An explicit px*py*pz grid, rank r at (i, j, k) with r = i + px (j + py k); the first
 * len % p parts of each axis are one cell longer. */
static int grid(tsr_box b, int dim, int w, const int p[3], tsr_box *out) {
  for (int d = 0; d < dim; ++d)
    if (tsr_box_len(&b, d) / p[d] < w) return 0;
  int r = 0;
  for (int k = 0; k < p[2]; ++k)
    for (int j = 0; j < p[1]; ++j)
      for (int i = 0; i < p[0]; ++i, ++r) {
        int idx[3] = {i, j, k};
        out[r] = b;
        for (int d = 0; d < dim; ++d) {
          int len = tsr_box_len(&b, d), q = len / p[d], m = len % p[d], x = idx[d];
          out[r].lo[d] = b.lo[d] + x * q + (x < m ? x : m);
          out[r].hi[d] = out[r].lo[d] + q + (x < m ? 1 : 0);
        }
      }
  return 1;
}

/* The best px*py*pz = n with p_d <= cap_d on active axes: 1 and p when one exists. */
static int grid_factor(int dim, const int cap[3], int n, int p[3]) {
  for (int px = 1; px <= n && px <= cap[0]; ++px) {
    if (n % px) continue;
    int rest = n / px;
    for (int py = 1; py <= rest && py <= cap[1]; ++py) {
      if (rest % py) continue;
      int pz = rest / py;
      if ((dim == 2 && pz != 1) || pz > cap[2]) continue;
      p[0] = px, p[1] = py, p[2] = pz;
      return 1;
    }
  }
  return 0;
}

static int min_width_of(const tsr_part_opts *opts) {
  return opts->min_width > 0 ? opts->min_width : 1;
}

static void describe_grid(char *buf, size_t size, int dim, const int cells[3]) {
  if (dim == 3)
    snprintf(buf, size, "%d x %d x %d", cells[0], cells[1], cells[2]);
  else
    snprintf(buf, size, "%d x %d", cells[0], cells[1]);
}

int tsr_partition_max_ranks(int dim, const int cells[3], const tsr_part_opts *opts, int upto) {
  if ((dim != 2 && dim != 3) || !opts || upto < 1 || opts->min_width < 0) return 0;
  int w = min_width_of(opts);
  tsr_box g = tsr_box_make(dim, cells);
  for (int d = 0; d < dim; ++d)
    if (cells[d] < w) return 0;
  int64_t cap = box_capacity(&g, dim, w);
  int start = cap < upto ? (int)cap : upto;
  if (opts->kind == TSR_PART_SLABS) {
    int order[3] = {0, 1, 2};
    axes_by_length(&g, dim, order);
    int fit = cells[order[0]] / w;
    return fit < upto ? fit : upto;
  }
  if (opts->kind == TSR_PART_GRID) {
    int axcap[3] = {1, 1, 1}, p[3];
    for (int d = 0; d < dim; ++d) axcap[d] = cells[d] / w;
    for (int n = start; n >= 1; --n)
      if (grid_factor(dim, axcap, n, p)) return n;
    return 0;
  }
  /* RCB serves every count up to the capacity; trying confirms it rather than trusting it. */
  for (int n = start; n >= 1; --n) {
    tsr_box *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) return 0;
    int ok = rcb(g, dim, w, NULL, 0, n, NULL, tmp);
    free(tmp);
    if (ok) return n;
  }
  return 0;
}

/* Checks everything about the request that does not depend on fitting the grid. */
static tsr_err validate(int dim, const int cells[3], int nranks, const tsr_part_opts *o) {
  TSR_CHECK(dim == 2 || dim == 3, TSR_ERR_INPUT,
            "the grid has %d dimensions; tessera supports 2 or 3", dim);
  for (int d = 0; d < dim; ++d)
    TSR_CHECK(cells[d] >= 1, TSR_ERR_INPUT, "the grid has %d cells along %c; give at least 1",
              cells[d], "xyz"[d]);
  TSR_CHECK(nranks >= 1, TSR_ERR_INPUT, "cannot partition over %d ranks; need at least 1", nranks);
  TSR_CHECK(o->kind >= TSR_PART_RCB && o->kind <= TSR_PART_GRID, TSR_ERR_INPUT,
            "unknown partitioner %d (expected rcb, slabs or grid)", (int)o->kind);
  TSR_CHECK(o->min_width >= 0, TSR_ERR_INPUT, "min_width is %d; it must be at least 1",
            o->min_width);
  if (o->kind == TSR_PART_GRID) {
    for (int d = 0; d < 3; ++d)
      TSR_CHECK(o->grid[d] >= 1, TSR_ERR_INPUT,
                "the rank grid has %d ranks along %c; each axis needs at least 1", o->grid[d],
                "xyz"[d]);
    TSR_CHECK(dim == 3 || o->grid[2] == 1, TSR_ERR_INPUT,
              "the rank grid has %d ranks along z but the grid is 2D; use 1", o->grid[2]);
    int64_t prod = (int64_t)o->grid[0] * o->grid[1] * o->grid[2];
    TSR_CHECK(prod == nranks, TSR_ERR_INPUT,
              "the rank grid %d x %d x %d has %lld ranks but the run has %d ranks; make the "
              "product equal the rank count",
              o->grid[0], o->grid[1], o->grid[2], (long long)prod, nranks);
  } else if (o->weights) {
    double sum = 0.0;
    for (int r = 0; r < nranks; ++r) {
      TSR_CHECK(isfinite(o->weights[r]) && o->weights[r] > 0.0, TSR_ERR_INPUT,
                "the weight of rank %d is %g; weights must be positive and finite", r,
                o->weights[r]);
      sum += o->weights[r];
    }
    /* an infinite sum makes every share inf / inf: NaN cuts */
    TSR_CHECK(isfinite(sum), TSR_ERR_INPUT,
              "the weights of the %d ranks sum past the range of double; scale them down",
              nranks);
  }
  return TSR_OK;
}

tsr_err tsr_partition(int dim, const int cells[3], const int periodic[3], int nranks,
                      const tsr_part_opts *opts, tsr_layout *layout) {
  memset(layout, 0, sizeof *layout);
  tsr_part_opts defaults = {TSR_PART_RCB, 1, {1, 1, 1}, NULL};
  if (!opts) opts = &defaults;
  TSR_CALL(validate(dim, cells, nranks, opts));
  int w = min_width_of(opts);
  tsr_box g = tsr_box_make(dim, cells);

  tsr_box *boxes;
  TSR_ALLOC(boxes, nranks, "the partition's boxes");
  int ok = 0;
  switch (opts->kind) {
  case TSR_PART_RCB: ok = rcb(g, dim, w, opts->weights, 0, nranks, NULL, boxes); break;
  case TSR_PART_SLABS: ok = slabs(g, dim, w, opts->weights, nranks, boxes); break;
  case TSR_PART_GRID: ok = grid(g, dim, w, opts->grid, boxes); break;
  }
  if (!ok) {
    free(boxes);
    char desc[96], tail[128] = "";
    describe_grid(desc, sizeof desc, dim, cells);
    int fit = tsr_partition_max_ranks(dim, cells, opts, nranks);
    if (opts->kind == TSR_PART_GRID)
      snprintf(tail, sizeof tail, ", as the best px x py%s grid; %d x %d x %d was asked",
               dim == 3 ? " x pz" : "", opts->grid[0], opts->grid[1], opts->grid[2]);
    if (opts->kind == TSR_PART_GRID && fit == nranks) {
      int axcap[3] = {1, 1, 1}, p[3] = {1, 1, 1}, bad = 0;
      for (int d = 0; d < dim; ++d) {
        axcap[d] = cells[d] / w;
        if (opts->grid[d] > axcap[d]) bad = d;
      }
      grid_factor(dim, axcap, nranks, p);
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "cannot split a %s grid into %d x %d x %d ranks: %d cells along %c "
                         "over %d ranks leave fewer than %d per rank; use ranks: [%d, %d, %d]",
                         desc, opts->grid[0], opts->grid[1], opts->grid[2], cells[bad],
                         "xyz"[bad], opts->grid[bad], w, p[0], p[1], p[2]);
    }
    if (fit == 0)
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "a %s grid is thinner than min_width %d along some axis; no rank count "
                         "fits (partition %s)", desc, w, kind_name[opts->kind]);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "cannot split a %s grid over %d ranks with at least %d cell%s per rank "
                       "and axis: at most %d ranks fit (partition %s%s)",
                       desc, nranks, w, w == 1 ? "" : "s", fit, kind_name[opts->kind], tail);
  }

  int *owner = malloc((size_t)nranks * sizeof *owner);
  if (!owner) {
    free(boxes);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory allocating the owners of %d boxes", nranks);
  }
  for (int r = 0; r < nranks; ++r) owner[r] = r;
  layout->dim = dim;
  layout->global = g;
  for (int d = 0; d < 3; ++d) layout->periodic[d] = periodic && d < dim ? !!periodic[d] : 0;
  layout->nbox = nranks;
  layout->boxes = boxes;
  layout->owner = owner;
  return TSR_OK;
}

int tsr_layout_box_of(const tsr_layout *layout, int rank) {
  for (int b = 0; b < layout->nbox; ++b)
    if (layout->owner[b] == rank) return b;
  return -1;
}

tsr_err tsr_layout_copy(const tsr_layout *src, tsr_layout *dst) {
  tsr_layout t = *src;
  t.boxes = NULL;
  t.owner = NULL;
  memset(dst, 0, sizeof *dst);
  TSR_ALLOC(t.boxes, src->nbox, "a copy of the layout's boxes");
  t.owner = calloc(src->nbox ? (size_t)src->nbox : 1, sizeof *t.owner);
  if (!t.owner) {
    free(t.boxes);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory copying the owners of %d boxes", src->nbox);
  }
  if (src->nbox > 0) {
    memcpy(t.boxes, src->boxes, (size_t)src->nbox * sizeof *t.boxes);
    memcpy(t.owner, src->owner, (size_t)src->nbox * sizeof *t.owner);
  }
  *dst = t;
  return TSR_OK;
}

void tsr_layout_free(tsr_layout *layout) {
  if (!layout) return;
  free(layout->boxes);
  free(layout->owner);
  layout->boxes = NULL;
  layout->owner = NULL;
  layout->nbox = 0;
}
