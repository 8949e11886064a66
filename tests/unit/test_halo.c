/* Halo plans: every ghost cell received once, pairs agree cell by cell, periodic images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "decomp/halo.h"

static int wrap(int x, int n) { return ((x % n) + n) % n; }

static const tsr_halo_peer *find_peer(const tsr_halo_plan *p, int rank) {
  for (int i = 0; i < p->npeer; ++i)
    if (p->peers[i].peer == rank) return &p->peers[i];
  return NULL;
}

/* (a) and (e): each ghost cell that lies in the grid, or wraps into it on periodic axes, is
 * received exactly once; owned cells and ghosts beyond non-periodic edges never. */
static void check_coverage(const tsr_layout *L, const tsr_halo_plan *p) {
  tsr_box g = tsr_box_grow(&p->owned, L->dim, p->ghost);
  int nx = tsr_box_len(&g, 0), ny = tsr_box_len(&g, 1);
  int *count = calloc((size_t)tsr_box_cells(&g), sizeof *count);
  assert_non_null(count);
  for (int i = 0; i < p->npeer; ++i) {
    const tsr_halo_peer *q = &p->peers[i];
    assert_true(i == 0 || q->peer > p->peers[i - 1].peer);
    for (int s = 0; s < q->nseg; ++s) {
      const tsr_box *r = &q->recv[s];
      assert_false(tsr_box_empty(r));
      assert_true(tsr_box_contains(&g, r));
      for (int k = r->lo[2]; k < r->hi[2]; ++k)
        for (int j = r->lo[1]; j < r->hi[1]; ++j)
          for (int x = r->lo[0]; x < r->hi[0]; ++x)
            ++count[((k - g.lo[2]) * ny + (j - g.lo[1])) * nx + (x - g.lo[0])];
    }
  }
  for (int k = g.lo[2]; k < g.hi[2]; ++k)
    for (int j = g.lo[1]; j < g.hi[1]; ++j)
      for (int x = g.lo[0]; x < g.hi[0]; ++x) {
        int c[3] = {x, j, k}, owned = 1, reachable = 1;
        for (int d = 0; d < 3; ++d) {
          if (c[d] < p->owned.lo[d] || c[d] >= p->owned.hi[d]) owned = 0;
          if ((c[d] < 0 || c[d] >= L->global.hi[d]) && !L->periodic[d]) reachable = 0;
        }
        int want = owned ? 0 : reachable;
        int got = count[((k - g.lo[2]) * ny + (j - g.lo[1])) * nx + (x - g.lo[0])];
        if (got != want)
          fail_msg("rank %d ghost %d cell (%d,%d,%d) received %d times, want %d", p->rank,
                   p->ghost, x, j, k, got, want);
      }
  free(count);
}

/* (b): p's send list to q is q's receive list from p, segment by segment, translated by a
 * whole number of periods, so packed buffers line up cell by cell in x-fastest order. */
static void check_pair(const tsr_layout *L, const tsr_halo_plan *plans, int a, int b) {
  const tsr_halo_peer *ab = find_peer(&plans[a], b), *ba = find_peer(&plans[b], a);
  assert_true((ab == NULL) == (ba == NULL));
  if (!ab) return;
  assert_int_equal(ab->nseg, ba->nseg);
  int64_t sent = 0;
  for (int s = 0; s < ab->nseg; ++s) {
    const tsr_box *snd = &ab->send[s], *rcv = &ba->recv[s];
    assert_true(tsr_box_contains(&plans[a].owned, snd));
    tsr_box in = tsr_box_intersect(rcv, &plans[b].owned);
    assert_true(tsr_box_empty(&in));
    for (int d = 0; d < 3; ++d) {
      int n = tsr_box_len(&L->global, d);
      assert_int_equal(tsr_box_len(snd, d), tsr_box_len(rcv, d));
      int shift = rcv->lo[d] - snd->lo[d];
      /* a segment never straddles the edge: one translation for all of its cells */
      assert_true(shift == 0 || (L->periodic[d] && (shift == n || shift == -n)));
      assert_int_equal(wrap(rcv->lo[d], n), snd->lo[d]);
      assert_int_equal(wrap(rcv->hi[d] - 1, n), snd->hi[d] - 1);
    }
    sent += tsr_box_cells(snd);
  }
  assert_true(sent == ab->send_cells);
}

/* The index's plans (tessera check's) are tsr_halo_plan_build's, peer by peer, segment by
 * segment. */
static void check_index(const tsr_layout *L, int ghost) {
  tsr_halo_index *ix = NULL;
  assert_int_equal(tsr_halo_index_create(L, ghost, &ix), TSR_OK);
  for (int r = 0; r < L->nbox; ++r) {
    tsr_halo_plan a, b;
    assert_int_equal(tsr_halo_plan_build(L, r, ghost, &a), TSR_OK);
    assert_int_equal(tsr_halo_index_plan(ix, r, &b), TSR_OK);
    assert_int_equal(a.rank, b.rank);
    assert_true(tsr_box_equal(&a.owned, &b.owned));
    if (a.npeer != b.npeer)
      fail_msg("rank %d of %d, ghost %d: %d peers, the index found %d", r, L->nbox, ghost,
               a.npeer, b.npeer);
    for (int i = 0; i < a.npeer; ++i) {
      const tsr_halo_peer *p = &a.peers[i], *q = &b.peers[i];
      assert_int_equal(p->peer, q->peer);
      assert_int_equal(p->nseg, q->nseg);
      for (int k = 0; k < p->nseg; ++k) {
        assert_true(tsr_box_equal(&p->send[k], &q->send[k]));
        assert_true(tsr_box_equal(&p->recv[k], &q->recv[k]));
      }
    }
    tsr_halo_plan_free(&a), tsr_halo_plan_free(&b);
  }
  assert_int_equal(tsr_halo_index_plan(ix, L->nbox, &(tsr_halo_plan){0}), TSR_ERR_INPUT);
  tsr_halo_index_free(&ix);
  assert_null(ix);
}

static void check_layout(const tsr_layout *L, int ghost) {
  check_index(L, ghost);
  tsr_halo_plan *plans = calloc((size_t)L->nbox, sizeof *plans);
  assert_non_null(plans);
  for (int r = 0; r < L->nbox; ++r) {
    assert_int_equal(tsr_halo_plan_build(L, r, ghost, &plans[r]), TSR_OK);
    assert_int_equal(plans[r].rank, r);
    assert_true(tsr_box_equal(&plans[r].owned, &L->boxes[r]));
    check_coverage(L, &plans[r]);
  }
  for (int a = 0; a < L->nbox; ++a)
    for (int b = 0; b < L->nbox; ++b) check_pair(L, plans, a, b);
  for (int r = 0; r < L->nbox; ++r) tsr_halo_plan_free(&plans[r]);
  free(plans);
}

static void test_many_layouts(void **state) {
  (void)state;
  static const int shapes[][4] = {{2, 13, 11, 1}, {2, 17, 23, 1}, {2, 6, 40, 1},
                                  {3, 9, 7, 5},   {3, 17, 23, 9}, {3, 6, 6, 12}};
  int nlayout = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    int dim = shapes[s][0], cells[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    for (int per = 0; per < (1 << dim); ++per) {
      int periodic[3] = {per & 1, (per >> 1) & 1, (per >> 2) & 1};
      for (int kind = TSR_PART_RCB; kind <= TSR_PART_SLABS; ++kind)
        for (int ghost = 1; ghost <= 2; ++ghost)
          for (int n = 1; n <= 12; ++n) {
            tsr_part_opts o = {kind, ghost, {1, 1, 1}, NULL};
            tsr_layout L;
            if (tsr_partition(dim, cells, periodic, n, &o, &L) != TSR_OK) continue;
            check_layout(&L, ghost);
            tsr_layout_free(&L);
            ++nlayout;
          }
    }
  }
  /* weighted RCB gives uneven boxes */
  int cells[3] = {17, 23, 9}, periodic[3] = {1, 0, 1};
  double w[7] = {1, 4, 2, 3, 1, 5, 2};
  tsr_part_opts o = {TSR_PART_RCB, 2, {1, 1, 1}, w};
  tsr_layout L;
  assert_int_equal(tsr_partition(3, cells, periodic, 7, &o, &L), TSR_OK);
  check_layout(&L, 2);
  tsr_layout_free(&L);
  assert_true(nlayout > 300);
}

/* Many boxes, so that the index has many buckets: grids whose sides the buckets do not divide,
 * periodic or not, weighted, ghosts up to 3 (deep halos reach past the next box) */
static void test_index_many_boxes(void **state) {
  (void)state;
  static const int shapes[][4] = {{2, 97, 61, 1}, {3, 29, 31, 23}, {3, 64, 8, 40}};
  double w[150];
  for (int i = 0; i < 150; ++i) w[i] = 1.0 + (i * 7 % 5);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    int dim = shapes[s][0], cells[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    for (int per = 0; per < (1 << dim); per += (1 << dim) - 1) {
      int periodic[3] = {per & 1, (per >> 1) & 1, (per >> 2) & 1};
      for (int ghost = 1; ghost <= 3; ++ghost)
        for (int n = 37; n <= 150; n += 113) {
          tsr_part_opts o = {ghost == 2 ? TSR_PART_SLABS : TSR_PART_RCB, ghost, {1, 1, 1},
                             ghost == 3 ? w : NULL};
          tsr_layout L;
          if (tsr_partition(dim, cells, periodic, n, &o, &L) != TSR_OK) continue;
          check_index(&L, ghost);
          tsr_layout_free(&L);
        }
    }
  }
}

/* 3 ranks on 120x60: rank 0 is [0,120) x [0,20) (a cut across x counts as one across an axis
 * half as long, and ties cut the slowest axis), and its +y face touches ranks 1 and 2. */
static void test_two_neighbours_on_one_face(void **state) {
  (void)state;
  int cells[3] = {120, 60, 1};
  tsr_layout L;
  assert_int_equal(tsr_partition(2, cells, NULL, 3, NULL, &L), TSR_OK);
  tsr_halo_plan p;
  assert_int_equal(tsr_halo_plan_build(&L, 0, 1, &p), TSR_OK);
  assert_int_equal(p.npeer, 2);
  for (int i = 0; i < 2; ++i) {
    assert_int_equal(p.peers[i].peer, i + 1);
    assert_int_equal(p.peers[i].nseg, 1);
    const tsr_box *r = &p.peers[i].recv[0];
    assert_int_equal(r->lo[1], 20);
    assert_int_equal(r->hi[1], 21);
    assert_int_equal(r->lo[0], i == 0 ? 0 : 60);
    assert_int_equal(r->hi[0], i == 0 ? 60 : 120);
  }
  tsr_halo_plan_free(&p);
  check_layout(&L, 1);
  check_layout(&L, 3);
  tsr_layout_free(&L);
}

/* (c): one rank, periodic: it is its own peer through every image. */
static void test_self_peer(void **state) {
  (void)state;
  for (int dim = 2; dim <= 3; ++dim) {
    int cells[3] = {8, 6, dim == 3 ? 5 : 1};
    int all[3] = {1, 1, 1}, xonly[3] = {1, 0, 0};
    tsr_layout L;
    tsr_halo_plan p;
    assert_int_equal(tsr_partition(dim, cells, all, 1, NULL, &L), TSR_OK);
    assert_int_equal(tsr_halo_plan_build(&L, 0, 2, &p), TSR_OK);
    assert_int_equal(p.npeer, 1);
    assert_int_equal(p.peers[0].peer, 0);
    assert_int_equal(p.peers[0].nseg, dim == 2 ? 8 : 26);
    assert_true(tsr_halo_bytes_sent(&p, 3, 8) == 0); /* self-copies are not sent */
    tsr_halo_plan_free(&p);
    check_layout(&L, 2);
    tsr_layout_free(&L);

    assert_int_equal(tsr_partition(dim, cells, xonly, 1, NULL, &L), TSR_OK);
    assert_int_equal(tsr_halo_plan_build(&L, 0, 1, &p), TSR_OK);
    assert_int_equal(p.npeer, 1);
    assert_int_equal(p.peers[0].nseg, 2);
    /* two faces of ny (x nz) cells each, edges and corners lie outside the grid */
    assert_true(p.peers[0].recv_cells == 2 * 6 * (dim == 3 ? 5 : 1));
    tsr_halo_plan_free(&p);

    int none[3] = {0, 0, 0};
    tsr_layout_free(&L);
    assert_int_equal(tsr_partition(dim, cells, none, 1, NULL, &L), TSR_OK);
    assert_int_equal(tsr_halo_plan_build(&L, 0, 1, &p), TSR_OK);
    assert_int_equal(p.npeer, 0);
    tsr_halo_plan_free(&p);
    tsr_layout_free(&L);
  }
}

static void test_bytes_and_errors(void **state) {
  (void)state;
  int cells[3] = {16, 4, 1};
  tsr_layout L;
  tsr_halo_plan p;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  assert_int_equal(tsr_halo_plan_build(&L, 0, 1, &p), TSR_OK);
  /* rank 0 sends its x = 7 column of 4 cells, 2 components of 8 bytes */
  assert_true(tsr_halo_bytes_sent(&p, 2, 8) == 64);
  tsr_halo_plan_free(&p);
  tsr_halo_plan_free(&p); /* twice is safe */
  /* boxes 8 wide cannot feed a ghost of 9 */
  assert_int_equal(tsr_halo_plan_build(&L, 1, 9, &p), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "thinner than the ghost width 9"));
  assert_int_equal(tsr_halo_plan_build(&L, 2, 1, &p), TSR_ERR_INPUT);
  assert_int_equal(tsr_halo_plan_build(&L, 0, -1, &p), TSR_ERR_INPUT);
  tsr_layout_free(&L);

  /* a periodic axis shorter than the ghost width would need a second image */
  int small[3] = {3, 10, 1}, per[3] = {1, 0, 0};
  assert_int_equal(tsr_partition(2, small, per, 1, NULL, &L), TSR_OK);
  assert_int_equal(tsr_halo_plan_build(&L, 0, 4, &p), TSR_ERR_INPUT);
  /* a non-periodic axis without neighbours may be thin */
  per[0] = 0;
  L.periodic[0] = 0;
  assert_int_equal(tsr_halo_plan_build(&L, 0, 4, &p), TSR_OK);
  assert_int_equal(p.npeer, 0);
  tsr_halo_plan_free(&p);
  tsr_layout_free(&L);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_many_layouts),
      cmocka_unit_test(test_index_many_boxes),
      cmocka_unit_test(test_two_neighbours_on_one_face),
      cmocka_unit_test(test_self_peer),
      cmocka_unit_test(test_bytes_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
