/* Halo plans: which ghost cells each rank receives from whom, and what it sends in return,
 * computed from the layout alone (DESIGN.md principle 1).
 *
 * The receiver's point of view is the canonical one. Rank p with box P receives, for every
 * periodic image shift s (in the fixed order below) and every box Q, the cells
 *   grow(P, ghost) ∩ (Q + s N)
 * which Q's owner holds at (those cells) - s N. The owner of Q builds its send list to p by
 * walking the same shifts in the same order, so segment i of q's send list to p and segment i
 * of p's receive list from q are the same cells, translated by s N, in the same x-fastest
 * order. Growing on every axis at once includes edges and corners, so wide stencils work. */
#include "decomp/halo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Periodic image shifts in units of the global extent: z outermost, x innermost, -1 0 +1 on
 * each periodic axis, 0 elsewhere. Both sides of every pair use this order. */
static int image_shifts(const tsr_layout *L, int s[27][3]) {
  int n = 0;
  int span[3];
  for (int d = 0; d < 3; ++d) span[d] = d < L->dim && L->periodic[d] ? 1 : 0;
  for (int z = -span[2]; z <= span[2]; ++z)
    for (int y = -span[1]; y <= span[1]; ++y)
      for (int x = -span[0]; x <= span[0]; ++x) {
        s[n][0] = x, s[n][1] = y, s[n][2] = z;
        ++n;
      }
  return n;
}

static tsr_box image_of(const tsr_layout *L, const tsr_box *b, const int s[3], int sign) {
  int off[3];
  for (int d = 0; d < 3; ++d) off[d] = sign * s[d] * tsr_box_len(&L->global, d);
  return tsr_box_shift(b, off);
}

static int is_zero(const int s[3]) { return !s[0] && !s[1] && !s[2]; }

/* The ghost cells `recv` of box `to` get from box `from` under shift s, and the owned cells
 * of `from` they come from. Returns 0 when the pair shares no cell under s. */
static int segment(const tsr_layout *L, const tsr_box *to, const tsr_box *from, int ghost,
                   const int s[3], tsr_box *recv, tsr_box *send) {
  tsr_box g = tsr_box_grow(to, L->dim, ghost);
  tsr_box img = image_of(L, from, s, +1);
  *recv = tsr_box_intersect(&g, &img);
  if (tsr_box_empty(recv)) return 0;
  *send = image_of(L, recv, s, -1);
  return 1;
}

/* Every rank checks every box, so that all ranks agree on the error and none waits. Linear in
 * the boxes: `tessera check` builds every rank's plan, so a sort here made it quadratic. */
static tsr_err check_layout(const tsr_layout *L, int ghost) {
  int top = 0;
  for (int b = 0; b < L->nbox; ++b) {
    const tsr_box *x = &L->boxes[b];
    TSR_CHECK(!tsr_box_empty(x) && tsr_box_contains(&L->global, x), TSR_ERR_INPUT,
              "box %d of the layout is empty or outside the grid", b);
    TSR_CHECK(L->owner[b] >= 0, TSR_ERR_INPUT, "box %d of the layout has owner %d", b,
              L->owner[b]);
    for (int d = 0; d < L->dim; ++d) {
      int len = tsr_box_len(x, d);
      int neighbours = L->periodic[d] || x->lo[d] > 0 || x->hi[d] < L->global.hi[d];
      TSR_CHECK(!neighbours || len >= ghost, TSR_ERR_INPUT,
                "the box of rank %d is %d cell%s wide along %c, thinner than the ghost width "
                "%d; use fewer ranks, a larger grid or min_width >= %d",
                L->owner[b], len, len == 1 ? "" : "s", "xyz"[d], ghost, ghost);
    }
    if (L->owner[b] > top) top = L->owner[b];
  }
  unsigned char *seen;
  TSR_ALLOC(seen, (size_t)top + 1, "the halo plan's owner check");
  tsr_err e = TSR_OK;
  for (int b = 0; b < L->nbox && !e; ++b)
    if (seen[L->owner[b]]++)
      e = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "rank %d owns more than one box; a halo plan needs one box per rank",
                      L->owner[b]);
  free(seen);
  return e;
}

/* Whether grow(a, ghost) can meet b or one of its periodic images: the test of every pair,
 * cheap enough for a plan of every rank (check) at tens of thousands of ranks. */
static int may_touch(const tsr_layout *L, const tsr_box *a, const tsr_box *b, int ghost) {
  for (int d = 0; d < L->dim; ++d) {
    int n = tsr_box_len(&L->global, d), span = L->periodic[d] ? 1 : 0, hit = 0;
    for (int k = -span; k <= span && !hit; ++k)
      hit = b->lo[d] + k * n < a->hi[d] + ghost && b->hi[d] + k * n > a->lo[d] - ghost;
    if (!hit) return 0;
  }
  return 1;
}

/* Fills peer's segment lists for the pair (me, q): receives from q, sends to q, both in the
 * order the receiver walks. Counting pass when the arrays are NULL. */
static int pair_segments(const tsr_layout *L, int me, int q, int ghost, int s[27][3],
                         int nshift, tsr_halo_peer *peer) {
  int nrecv = 0, nsend = 0;
  const tsr_box *mine = &L->boxes[me], *theirs = &L->boxes[q];
  /* along each axis and for each image -1, 0, +1: whether grow(mine) meets theirs' image
   * (a receive) and grow(theirs) mine's (a send); a shift that fails on some axis yields no
   * segment, and skipping it spares the boxes' arithmetic (most of a plan's time) */
  int okr[3][3], oks[3][3];
  for (int d = 0; d < 3; ++d)
    for (int k = -1; k <= 1; ++k) {
      const int n = k * tsr_box_len(&L->global, d), g = d < L->dim ? ghost : 0;
      okr[d][k + 1] = theirs->lo[d] + n < mine->hi[d] + g && theirs->hi[d] + n > mine->lo[d] - g;
      oks[d][k + 1] = mine->lo[d] + n < theirs->hi[d] + g && mine->hi[d] + n > theirs->lo[d] - g;
    }
  for (int i = 0; i < nshift; ++i) {
    if (q == me && is_zero(s[i])) continue;
    tsr_box r, from;
    int rcv = 1, snd = 1;
    for (int d = 0; d < 3; ++d) rcv &= okr[d][s[i][d] + 1], snd &= oks[d][s[i][d] + 1];
    if (rcv && segment(L, mine, theirs, ghost, s[i], &r, &from)) {
      if (peer->recv) peer->recv[nrecv] = r;
      ++nrecv;
    }
    if (snd && segment(L, theirs, mine, ghost, s[i], &r, &from)) {
      if (peer->send) peer->send[nsend] = from;
      ++nsend;
    }
  }
  /* the pair relation is symmetric under s -> -s and the shift set is too */
  return nrecv == nsend ? nrecv : -1;
}

static int by_peer(const void *a, const void *b) {
  const tsr_halo_peer *x = a, *y = b;
  return (x->peer > y->peer) - (x->peer < y->peer);
}

/* Rank's plan from the boxes cand[0..ncand) that may be its peers (all of them when cand is
 * NULL); the layout already checked. */
static tsr_err build(const tsr_layout *layout, int me, int ghost, const int *cand, int ncand,
                     tsr_halo_plan *plan) {
  memset(plan, 0, sizeof *plan);
  const int rank = layout->owner[me];
  int s[27][3];
  int nshift = image_shifts(layout, s);

  plan->rank = rank;
  plan->ghost = ghost;
  plan->owned = layout->boxes[me];
  tsr_err e = TSR_OK;
  int cap = 0;
  if (!cand) ncand = layout->nbox;
  for (int i = 0; i < ncand && ghost > 0 && !e; ++i) {
    const int q = cand ? cand[i] : i;
    if (!may_touch(layout, &layout->boxes[me], &layout->boxes[q], ghost)) continue;
    tsr_halo_peer p = {0};
    int nseg = pair_segments(layout, me, q, ghost, s, nshift, &p);
    if (nseg < 0) {
      e = tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                      "halo plan of rank %d: send and receive lists of peer %d differ in length",
                      rank, layout->owner[q]);
      break;
    }
    if (nseg == 0) continue;
    if (plan->npeer == cap) {
      cap = cap ? 2 * cap : 32;
      tsr_halo_peer *grown = realloc(plan->peers, (size_t)cap * sizeof *grown);
      if (!grown) {
        e = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                        "out of memory allocating the halo plan's %d peers", cap);
        break;
      }
      plan->peers = grown;
    }
    p.peer = layout->owner[q];
    p.nseg = nseg;
    p.send = calloc((size_t)nseg, sizeof *p.send);
    p.recv = calloc((size_t)nseg, sizeof *p.recv);
    plan->peers[plan->npeer++] = p; /* counted before the check, so that free releases it */
    if (!p.send || !p.recv) {
      e = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                      "out of memory allocating the halo segments of rank %d", rank);
      break;
    }
    pair_segments(layout, me, q, ghost, s, nshift, &plan->peers[plan->npeer - 1]);
    for (int k = 0; k < nseg; ++k) {
      plan->peers[plan->npeer - 1].send_cells += tsr_box_cells(&p.send[k]);
      plan->peers[plan->npeer - 1].recv_cells += tsr_box_cells(&p.recv[k]);
    }
  }
  if (e) tsr_halo_plan_free(plan);
  else if (plan->npeer > 1) qsort(plan->peers, (size_t)plan->npeer, sizeof *plan->peers, by_peer);
  return e;
}

tsr_err tsr_halo_plan_build(const tsr_layout *layout, int rank, int ghost, tsr_halo_plan *plan) {
  memset(plan, 0, sizeof *plan);
  TSR_CHECK(ghost >= 0, TSR_ERR_INPUT, "the ghost width is %d; it must be 0 or more", ghost);
  int me = tsr_layout_box_of(layout, rank);
  TSR_CHECK(me >= 0, TSR_ERR_INPUT, "rank %d owns no box of the layout (%d boxes)", rank,
            layout->nbox);
  TSR_CALL(check_layout(layout, ghost));
  return build(layout, me, ghost, NULL, 0, plan);
}

/* ---- every rank's plan: the boxes in a grid of buckets ------------------------------------
 * Each box is listed in every bucket it overlaps; a rank's candidates are the boxes of the
 * buckets its grown box overlaps (indices wrapped on periodic axes), which may_touch and the
 * segments then test exactly, so the plans are tsr_halo_plan_build's. About one bucket per
 * box: a rank looks at its neighbours' boxes, not at all of them. */
struct tsr_halo_index {
  const tsr_layout *L;
  int ghost;
  int nb[3], width[3];    /* buckets along each axis and their width in cells */
  int *start, *list;      /* CSR: bucket k holds list[start[k] .. start[k + 1]) */
  int *box_of;            /* rank -> box index (-1: none) */
  int *cand, *seen;       /* scratch of one query: candidates, and the query that saw a box */
  int query, top;         /* the last query; the highest rank */
};

/* The buckets along axis d that cells [lo, hi) overlap (wrapped onto the grid on a periodic
 * axis, clipped to it on another): up to two ranges of bucket indices; returns how many. */
static int axis_ranges(const tsr_halo_index *ix, int d, int lo, int hi, int r[2][2]) {
  const tsr_layout *L = ix->L;
  if (d >= L->dim) {
    r[0][0] = r[0][1] = 0;
    return 1;
  }
  const int len = tsr_box_len(&L->global, d), w = ix->width[d];
  lo -= L->global.lo[d], hi -= L->global.lo[d];
  int seg[2][2], n = 0;
  if (L->periodic[d] && hi - lo >= len) {
    seg[n][0] = 0, seg[n++][1] = len;
  } else if (L->periodic[d] && (lo < 0 || hi > len)) { /* hi - lo < len: two disjoint pieces */
    seg[n][0] = lo < 0 ? lo + len : lo, seg[n++][1] = len;
    seg[n][0] = 0, seg[n++][1] = lo < 0 ? hi : hi - len;
  } else {
    seg[n][0] = lo < 0 ? 0 : lo, seg[n][1] = hi > len ? len : hi;
    if (seg[n][0] < seg[n][1]) ++n;
  }
  for (int i = 0; i < n; ++i) r[i][0] = seg[i][0] / w, r[i][1] = (seg[i][1] - 1) / w;
  return n;
}

/* The buckets a box grown by g overlaps, each passed to visit (a bucket may come twice). */
static void each_bucket(tsr_halo_index *ix, const tsr_box *b, int g,
                        void (*visit)(tsr_halo_index *, int, void *), void *arg) {
  int r[3][2][2], n[3];
  for (int d = 0; d < 3; ++d)
    if (!(n[d] = axis_ranges(ix, d, b->lo[d] - g, b->hi[d] + g, r[d]))) return;
  for (int c = 0; c < n[2]; ++c)
    for (int k = r[2][c][0]; k <= r[2][c][1]; ++k)
      for (int bb = 0; bb < n[1]; ++bb)
        for (int j = r[1][bb][0]; j <= r[1][bb][1]; ++j)
          for (int a = 0; a < n[0]; ++a)
            for (int i = r[0][a][0]; i <= r[0][a][1]; ++i)
              visit(ix, (k * ix->nb[1] + j) * ix->nb[0] + i, arg);
}

static void count_in(tsr_halo_index *ix, int k, void *arg) { (void)arg, ++ix->start[k + 1]; }

static void put_in(tsr_halo_index *ix, int k, void *arg) {
  ix->list[ix->cand[k]++] = *(const int *)arg; /* cand: the fill cursor of each bucket here */
}

static void gather(tsr_halo_index *ix, int k, void *arg) {
  int *n = arg;
  for (int i = ix->start[k]; i < ix->start[k + 1]; ++i) {
    const int q = ix->list[i];
    if (ix->seen[q] != ix->query) ix->seen[q] = ix->query, ix->cand[(*n)++] = q;
  }
}

tsr_err tsr_halo_index_create(const tsr_layout *L, int ghost, tsr_halo_index **out) {
  *out = NULL;
  TSR_CHECK(ghost >= 0, TSR_ERR_INPUT, "the ghost width is %d; it must be 0 or more", ghost);
  TSR_CALL(check_layout(L, ghost));
  tsr_halo_index *ix = calloc(1, sizeof *ix);
  TSR_CHECK(ix, TSR_ERR_MEMORY, "out of memory for the halo plans' index");
  ix->L = L;
  ix->ghost = ghost;
  /* buckets about as many as the boxes, as square as the grid */
  double cells = 1.0;
  for (int d = 0; d < L->dim; ++d) cells *= tsr_box_len(&L->global, d);
  const double side = pow(cells / (L->nbox > 0 ? L->nbox : 1), 1.0 / L->dim);
  int64_t nbk = 1;
  for (int d = 0; d < 3; ++d) {
    const int len = d < L->dim ? tsr_box_len(&L->global, d) : 1;
    ix->width[d] = d < L->dim ? (int)fmax(1.0, ceil(side)) : 1;
    if (ix->width[d] > len) ix->width[d] = len;
    ix->nb[d] = (len + ix->width[d] - 1) / ix->width[d];
    nbk *= ix->nb[d];
  }
  int top = 0;
  for (int b = 0; b < L->nbox; ++b)
    if (L->owner[b] > top) top = L->owner[b];
  ix->start = calloc((size_t)nbk + 1, sizeof *ix->start);
  ix->box_of = malloc(((size_t)top + 1) * sizeof *ix->box_of);
  ix->cand = malloc((size_t)(nbk > L->nbox ? nbk : L->nbox) * sizeof *ix->cand);
  ix->seen = malloc((size_t)(L->nbox > 0 ? L->nbox : 1) * sizeof *ix->seen);
  if (!ix->start || !ix->box_of || !ix->cand || !ix->seen) {
    tsr_halo_index_free(&ix);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory for the halo plans' index of %d boxes", L->nbox);
  }
  ix->top = top;
  for (int r = 0; r <= top; ++r) ix->box_of[r] = -1;
  for (int b = 0; b < L->nbox; ++b) {
    ix->box_of[L->owner[b]] = b;
    ix->seen[b] = -1;
    each_bucket(ix, &L->boxes[b], 0, count_in, NULL);
  }
  for (int64_t k = 0; k < nbk; ++k) ix->start[k + 1] += ix->start[k];
  ix->list = malloc((size_t)(ix->start[nbk] > 0 ? ix->start[nbk] : 1) * sizeof *ix->list);
  if (!ix->list) {
    tsr_halo_index_free(&ix);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory for the halo plans' index of %d boxes", L->nbox);
  }
  memcpy(ix->cand, ix->start, (size_t)nbk * sizeof *ix->cand);
  for (int b = 0; b < L->nbox; ++b) each_bucket(ix, &L->boxes[b], 0, put_in, &b);
  *out = ix;
  return TSR_OK;
}

tsr_err tsr_halo_index_plan(tsr_halo_index *ix, int rank, tsr_halo_plan *plan) {
  memset(plan, 0, sizeof *plan);
  const tsr_layout *L = ix->L;
  const int me = rank >= 0 && rank <= ix->top ? ix->box_of[rank] : -1;
  TSR_CHECK(me >= 0, TSR_ERR_INPUT, "rank %d owns no box of the layout (%d boxes)", rank,
            L->nbox);
  int n = 0;
  ++ix->query;
  each_bucket(ix, &L->boxes[me], ix->ghost, gather, &n);
  return build(L, me, ix->ghost, ix->cand, n, plan);
}

void tsr_halo_index_free(tsr_halo_index **ix) {
  if (!ix || !*ix) return;
  free((*ix)->start), free((*ix)->list), free((*ix)->box_of), free((*ix)->cand);
  free((*ix)->seen), free(*ix);
  *ix = NULL;
}

void tsr_halo_plan_free(tsr_halo_plan *plan) {
  if (!plan) return;
  for (int i = 0; i < plan->npeer; ++i) {
    free(plan->peers[i].send);
    free(plan->peers[i].recv);
  }
  free(plan->peers);
  plan->peers = NULL;
  plan->npeer = 0;
}

int64_t tsr_halo_bytes_sent(const tsr_halo_plan *plan, int ncomp, int elem_size) {
  int64_t cells = 0;
  for (int i = 0; i < plan->npeer; ++i)
    if (plan->peers[i].peer != plan->rank) cells += plan->peers[i].send_cells;
  return cells * ncomp * elem_size;
}
