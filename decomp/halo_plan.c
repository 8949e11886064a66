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
  for (int i = 0; i < nshift; ++i) {
    if (q == me && is_zero(s[i])) continue;
    tsr_box r, from;
    if (segment(L, mine, theirs, ghost, s[i], &r, &from)) {
      if (peer->recv) peer->recv[nrecv] = r;
      ++nrecv;
    }
    if (segment(L, theirs, mine, ghost, s[i], &r, &from)) {
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

tsr_err tsr_halo_plan_build(const tsr_layout *layout, int rank, int ghost, tsr_halo_plan *plan) {
  memset(plan, 0, sizeof *plan);
  TSR_CHECK(ghost >= 0, TSR_ERR_INPUT, "the ghost width is %d; it must be 0 or more", ghost);
  int me = tsr_layout_box_of(layout, rank);
  TSR_CHECK(me >= 0, TSR_ERR_INPUT, "rank %d owns no box of the layout (%d boxes)", rank,
            layout->nbox);
  TSR_CALL(check_layout(layout, ghost));
  int s[27][3];
  int nshift = image_shifts(layout, s);

  plan->rank = rank;
  plan->ghost = ghost;
  plan->owned = layout->boxes[me];
  tsr_err e = TSR_OK;
  int cap = 0;
  for (int q = 0; q < layout->nbox && ghost > 0 && !e; ++q) {
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
