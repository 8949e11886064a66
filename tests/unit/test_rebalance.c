/* The rebalancer's policy: cost maps, cost-weighted RCB (plain RCB when nothing is uneven),
 * slow ranks, costly cells, the decision and its reasons, determinism, the way back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/rebalance.h"
#include "decomp/rebalance_impl.h"

static const int shapes[][4] = {
    {2, 64, 64, 1}, {2, 60, 60, 1}, {2, 17, 23, 1}, {2, 100, 7, 1}, {2, 31, 97, 1},
    {3, 17, 23, 9}, {3, 16, 16, 16}, {3, 40, 9, 13}, {3, 8, 64, 8},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static void assert_same_boxes(const tsr_layout *a, const tsr_layout *b) {
  assert_int_equal(a->nbox, b->nbox);
  for (int r = 0; r < a->nbox; ++r) {
    assert_int_equal(a->owner[r], b->owner[r]);
    assert_true(tsr_box_equal(&a->boxes[r], &b->boxes[r]));
  }
}

static void assert_cover(const tsr_layout *L, int w) {
  int64_t sum = 0;
  for (int b = 0; b < L->nbox; ++b) {
    assert_true(tsr_box_contains(&L->global, &L->boxes[b]));
    for (int d = 0; d < L->dim; ++d) assert_true(tsr_box_len(&L->boxes[b], d) >= w);
    sum += tsr_box_cells(&L->boxes[b]);
    for (int c = b + 1; c < L->nbox; ++c) {
      tsr_box i = tsr_box_intersect(&L->boxes[b], &L->boxes[c]);
      assert_true(tsr_box_empty(&i));
    }
  }
  assert_true(sum == tsr_box_cells(&L->global));
}

static void uniform_map(int dim, const int cells[3], int max_blocks, int64_t per_cell,
                        tsr_rebalance_costmap *m) {
  assert_int_equal(tsr_rebalance_costmap_init(dim, cells, max_blocks, m), TSR_OK);
  tsr_box g = tsr_box_make(dim, cells);
  tsr_rebalance_costmap_add_uniform(m, &g, per_cell);
}

/* Block sizes keep the map small; coarse blocks still sum to the grid's work. */
static void test_costmap_blocks(void **state) {
  (void)state;
  tsr_rebalance_costmap m;
  int big[3] = {1024, 512, 512};
  uniform_map(3, big, 0, 1, &m);
  assert_true(m.nblock <= TSR_REBALANCE_MAX_BLOCKS);
  assert_int_equal(m.bs[0], 16);
  tsr_box g = tsr_box_make(3, big);
  assert_true(tsr_rebalance_costmap_box_cost(&m, &g) == (double)tsr_box_cells(&g));
  tsr_rebalance_costmap_free(&m);
  int small[3] = {64, 48, 1};
  uniform_map(2, small, 0, 1, &m);
  assert_int_equal(m.bs[0], 1);
  assert_int_equal(m.nblock, 64 * 48);
  tsr_rebalance_costmap_free(&m);
  /* 100 x 7 under 64 blocks: blocks of 4 (25 x 2 = 50), not 3 (34 x 3 = 102) */
  int odd[3] = {100, 7, 1};
  uniform_map(2, odd, 64, 1, &m);
  assert_int_equal(m.bs[0], 4);
  assert_int_equal(m.nb[1], 2);
  tsr_rebalance_costmap_free(&m);
}

/* Per-cell counts land in the same blocks as the uniform add. */
static void test_costmap_cells(void **state) {
  (void)state;
  int cells[3] = {30, 20, 10};
  tsr_rebalance_costmap a, b;
  assert_int_equal(tsr_rebalance_costmap_init(3, cells, 200, &a), TSR_OK);
  assert_int_equal(tsr_rebalance_costmap_init(3, cells, 200, &b), TSR_OK);
  assert_true(a.bs[0] > 1);
  tsr_box box = {{3, 5, 1}, {29, 17, 9}};
  int64_t n = tsr_box_cells(&box);
  uint32_t *w = malloc((size_t)n * sizeof *w);
  for (int64_t i = 0; i < n; ++i) w[i] = 3;
  tsr_rebalance_costmap_add_cells(&a, &box, w);
  tsr_rebalance_costmap_add_uniform(&b, &box, 3);
  assert_memory_equal(a.cost, b.cost, (size_t)a.nblock * sizeof *a.cost);
  tsr_box g = tsr_box_make(3, cells);
  assert_true(tsr_rebalance_costmap_box_cost(&a, &g) == 3.0 * n);
  tsr_rebalance_costmap_clear(&a);
  assert_true(tsr_rebalance_costmap_box_cost(&a, &g) == 0.0);
  free(w);
  tsr_rebalance_costmap_free(&a);
  tsr_rebalance_costmap_free(&b);
}

/* Uniform cost, equal ranks: exactly tsr_partition's RCB boxes, for coarse maps too. */
static void test_uniform_is_plain_rcb(void **state) {
  (void)state;
  for (int s = 0; s < NSHAPES; ++s) {
    int dim = shapes[s][0], cells[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    for (int mb = 0; mb < 2; ++mb) {
      tsr_rebalance_costmap m;
      uniform_map(dim, cells, mb ? 37 : 0, 5, &m);
      for (int n = 1; n <= 13; ++n)
        for (int w = 1; w <= 2; ++w) {
          tsr_part_opts o = {TSR_PART_RCB, w, {1, 1, 1}, NULL};
          tsr_layout P, R;
          if (tsr_partition(dim, cells, NULL, n, &o, &P) != TSR_OK) {
            assert_int_equal(tsr_rebalance_partition(&m, NULL, n, NULL, w, &R), TSR_ERR_INPUT);
            continue;
          }
          assert_int_equal(tsr_rebalance_partition(&m, NULL, n, NULL, w, &R), TSR_OK);
          assert_same_boxes(&P, &R);
          tsr_layout_free(&P);
          tsr_layout_free(&R);
        }
      tsr_rebalance_costmap_free(&m);
    }
  }
}

/* Figures of a run on layout L: rank r's work is the map's cost of its box, its time that
 * work over its rate. */
static void measure(const tsr_layout *L, const tsr_rebalance_costmap *m, const double *rate,
                    double *time, int64_t *work) {
  for (int r = 0; r < L->nbox; ++r) {
    double c = tsr_rebalance_costmap_box_cost(m, &L->boxes[tsr_layout_box_of(L, r)]);
    work[r] = (int64_t)c;
    time[r] = c / rate[r];
  }
}

static const tsr_rebalance_opts opts = {0.05, 100, 1, 0.0, 16};

/* A rank twice as slow gets about half the cells of the others, and the predicted times are
 * even; the log line says so. */
static void test_slow_rank(void **state) {
  (void)state;
  int cells[3] = {128, 128, 1};
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 4, NULL, &L), TSR_OK);
  double rate[4] = {1e6, 0.5e6, 1e6, 1e6}, time[4];
  int64_t work[4];
  measure(&L, &m, rate, time, work);
  tsr_rebalance_measure me = {.nranks = 4, .nsteps = 10, .time = time, .work = work, .map = &m};
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  assert_int_equal(d.reason, TSR_REBALANCE_YES);
  assert_true(fabs(d.imbalance - (2.0 * 4 / 5 - 1.0)) < 1e-12); /* times 1, 2, 1, 1 */
  assert_true(d.predicted < 0.02);
  assert_true(d.predicted_step_time < d.step_time);
  assert_true(d.saving > d.migration_cost);
  assert_int_equal(d.migration_measured, 0);
  assert_cover(&N, 1);
  double others = 0.0;
  for (int r = 0; r < 4; ++r)
    if (r != 1) others += tsr_box_cells(&N.boxes[r]) / 3.0;
  double ratio = tsr_box_cells(&N.boxes[1]) / others;
  assert_true(ratio > 0.47 && ratio < 0.53);
  char line[256];
  tsr_rebalance_describe(&d, line, sizeof line);
  assert_non_null(strstr(line, "cells moved"));
  tsr_layout_free(&N);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
}

/* Cells ten times as costly in a band across x: the cuts follow the cost, and every rank's
 * predicted time is equal within the cost of the heaviest one-cell-thick slab (a cut falls on
 * a cell; inside a block the cost is interpolated). */
static void test_hot_band(void **state) {
  (void)state;
  int cells[3] = {128, 64, 1};
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 512, 1, &m); /* blocks of 4 x 4 */
  assert_int_equal(m.bs[0], 4);
  tsr_box band = {{42, 0, 0}, {58, 64, 1}};
  tsr_rebalance_costmap_add_uniform(&m, &band, 9);
  for (int n = 2; n <= 8; ++n) {
    tsr_layout P, R;
    assert_int_equal(tsr_partition(2, cells, NULL, n, NULL, &P), TSR_OK);
    assert_int_equal(tsr_rebalance_partition(&m, NULL, n, NULL, 1, &R), TSR_OK);
    assert_cover(&R, 1);
    double lo = INFINITY, hi = 0.0, plain = 0.0, sum = 0.0;
    for (int r = 0; r < n; ++r) {
      double c = tsr_rebalance_costmap_box_cost(&m, &R.boxes[r]);
      double p = tsr_rebalance_costmap_box_cost(&m, &P.boxes[r]);
      lo = c < lo ? c : lo;
      hi = c > hi ? c : hi;
      plain = p > plain ? p : plain;
      sum += c;
    }
    double slab = 10.0 * 64; /* a column of the band: the heaviest slab either way */
    assert_true(hi - lo <= slab);
    assert_true(hi <= plain); /* never worse than cutting by cells */
    if (plain * n / sum - 1.0 > 0.2) assert_true(hi < plain);
    assert_true(hi * n / sum - 1.0 < 0.1);
    tsr_layout_free(&P);
    tsr_layout_free(&R);
  }
  tsr_rebalance_costmap_free(&m);
}

/* Times within the threshold: nothing moves; an imbalance that a window cannot repay: nothing
 * moves either; no time at all: no data. */
static void test_decision_reasons(void **state) {
  (void)state;
  int cells[3] = {64, 64, 1};
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  double rate[2] = {1e6, 0.96e6}, time[2];
  int64_t work[2];
  measure(&L, &m, rate, time, work);
  tsr_rebalance_measure me = {.nranks = 2, .nsteps = 5, .time = time, .work = work, .map = &m};
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.rebalance, 0);
  assert_int_equal(d.reason, TSR_REBALANCE_BALANCED);
  assert_true(d.imbalance > 0.0 && d.imbalance <= 0.05);
  assert_int_equal(N.nbox, 0);
  assert_null(N.boxes);
  char line[256];
  assert_non_null(strstr(tsr_rebalance_describe(&d, line, sizeof line), "not rebalanced"));

  rate[1] = 0.5e6;
  measure(&L, &m, rate, time, work);
  tsr_rebalance_opts once = opts;
  once.window = 1;
  /* the last migration took 1 s for 1 kB: this one cannot pay within one step */
  tsr_rebalance_state st = {1, 1.0, 1000};
  assert_int_equal(tsr_rebalance_decide(&L, &me, &once, &st, &N, &d), TSR_OK);
  assert_int_equal(d.reason, TSR_REBALANCE_NO_GAIN);
  assert_int_equal(d.migration_measured, 1);
  /* more bytes than the last: its second, plus the rest at the estimated bandwidth */
  assert_true(d.bytes_moved > 1000);
  assert_true(fabs(d.migration_cost - (1.0 + (d.bytes_moved - 1000) / TSR_REBALANCE_BANDWIDTH)) <
              1e-9);
  assert_int_equal(N.nbox, 0);
  /* the same with a fast migration measured: it pays */
  tsr_rebalance_note_migration(&st, 1e-6, 1000000, 0.0);
  assert_int_equal(st.migrations, 2);
  assert_true(st.last_seconds == 1e-6);
  /* a migration that took 70 times the cost predicted from the last measured one is recorded
   * at twice that, so one slow migration does not price out every later one; a cheaper one
   * is recorded as measured */
  tsr_rebalance_state slow = st;
  tsr_rebalance_note_migration(&slow, 70e-6, 1000000, 1e-6);
  assert_int_equal(slow.migrations, 3);
  assert_true(slow.last_seconds == 2e-6);
  assert_int_equal(slow.last_bytes, 1000000);
  tsr_rebalance_note_migration(&slow, 0.5e-6, 1000000, 2e-6);
  assert_true(slow.last_seconds == 0.5e-6);
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, &st, &N, &d), TSR_OK);
  assert_int_equal(d.reason, TSR_REBALANCE_YES);
  tsr_layout_free(&N);

  time[0] = time[1] = 0.0;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.reason, TSR_REBALANCE_NO_DATA);
  assert_int_equal(d.rebalance, 0);

  time[0] = -1.0;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_ERR_INPUT);
  me.nranks = 3;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_ERR_INPUT);
  double bad[2] = {1.0, -2.0};
  assert_int_equal(tsr_rebalance_partition(&m, NULL, 2, bad, 1, &N), TSR_ERR_INPUT);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
}

/* The same figures twice give the same decision and the same boxes, bit for bit. */
static void test_deterministic(void **state) {
  (void)state;
  int cells[3] = {40, 36, 28};
  tsr_rebalance_costmap m;
  uniform_map(3, cells, 1000, 1, &m);
  tsr_box hot = {{5, 3, 0}, {17, 30, 28}};
  tsr_rebalance_costmap_add_uniform(&m, &hot, 6);
  tsr_layout L, A, B;
  assert_int_equal(tsr_partition(3, cells, NULL, 7, NULL, &L), TSR_OK);
  double rate[7] = {1.0, 0.7, 1.3, 1.0, 0.9, 2.0, 1.1}, time[7];
  int64_t work[7];
  measure(&L, &m, rate, time, work);
  tsr_rebalance_measure me = {.nranks = 7, .nsteps = 3, .time = time, .work = work, .map = &m};
  tsr_rebalance_decision da, db;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &A, &da), TSR_OK);
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &B, &db), TSR_OK);
  assert_int_equal(da.rebalance, 1);
  assert_memory_equal(&da, &db, sizeof da);
  assert_memory_equal(A.boxes, B.boxes, 7 * sizeof *A.boxes);
  assert_cover(&A, 1);
  assert_true(da.predicted < da.imbalance / 4);
  tsr_layout_free(&A);
  tsr_layout_free(&B);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
}

/* Cells moved: a cut that shifts by 8 rows of 64 cells moves 512 cells; boxes traded move
 * all; a decision counts the cells and the busiest rank's bytes. */
static void test_cells_moved(void **state) {
  (void)state;
  int cells[3] = {64, 64, 1};
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  /* x counts at half: the cut is across y at 32 */
  assert_int_equal(L.boxes[0].hi[1], 32);
  assert_int_equal(tsr_layout_copy(&L, &N), TSR_OK);
  N.boxes[0].hi[1] = N.boxes[1].lo[1] = 40;
  assert_int_equal(tsr_rebalance_cells_moved(&L, &N), 512);
  assert_int_equal(tsr_rebalance_cells_moved(&L, &L), 0);
  /* the ranks trade boxes: everything moves */
  N.boxes[0] = L.boxes[1];
  N.boxes[1] = L.boxes[0];
  assert_int_equal(tsr_rebalance_cells_moved(&L, &N), 64 * 64);
  tsr_layout_free(&N);

  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  double rate[2] = {1.0, 3.0}, time[2];
  int64_t work[2];
  measure(&L, &m, rate, time, work);
  tsr_rebalance_measure me = {.nranks = 2, .nsteps = 1, .time = time, .work = work, .map = &m};
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  /* rank 0 keeps a quarter of the grid: rows [0, 16) */
  assert_int_equal(N.boxes[0].hi[1], 16);
  assert_int_equal(d.cells_moved, 16 * 64);
  assert_int_equal(d.bytes_moved, 16 * 64 * opts.bytes_per_cell); /* rank 0 sends them all */
  assert_true(fabs(d.migration_cost - d.bytes_moved / TSR_REBALANCE_BANDWIDTH) < 1e-15);
  tsr_layout_free(&N);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
}

/* A slowdown, a rebalance, then equal speeds again: the next decision returns to the plain
 * RCB boxes exactly, and once there, equal speeds move nothing. */
static void test_goes_back(void **state) {
  (void)state;
  int cells[3] = {96, 80, 1};
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  tsr_layout P, S, B, X;
  assert_int_equal(tsr_partition(2, cells, NULL, 4, NULL, &P), TSR_OK);
  double slow[4] = {1e6, 1e6, 1e6, 0.4e6}, even[4] = {1e6, 1e6, 1e6, 1e6}, time[4];
  int64_t work[4];
  measure(&P, &m, slow, time, work);
  tsr_rebalance_measure me = {.nranks = 4, .nsteps = 20, .time = time, .work = work, .map = &m};
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&P, &me, &opts, NULL, &S, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  assert_true(tsr_box_cells(&S.boxes[3]) < tsr_box_cells(&P.boxes[3]) / 2);
  /* equal speeds, measured with a little noise on the rebalanced boxes */
  even[1] *= 1.01;
  measure(&S, &m, even, time, work);
  assert_int_equal(tsr_rebalance_decide(&S, &me, &opts, NULL, &B, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  assert_same_boxes(&P, &B);
  measure(&B, &m, even, time, work);
  assert_int_equal(tsr_rebalance_decide(&B, &me, &opts, NULL, &X, &d), TSR_OK);
  assert_int_equal(d.rebalance, 0);
  tsr_layout_free(&P);
  tsr_layout_free(&S);
  tsr_layout_free(&B);
  tsr_rebalance_costmap_free(&m);
}

/* A band of costly cells 2 columns wide that moved 4 columns in the window: the window's mean
 * lies along its path, the next window's ahead of it, and the cells' own count stays. */
static void band_map(const int cells[3], int x0, int64_t extra, tsr_rebalance_costmap *m) {
  uniform_map(2, cells, 0, 1, m);
  tsr_box band = {{x0, 0, 0}, {x0 + 2, cells[1], 1}};
  tsr_rebalance_costmap_add_uniform(m, &band, extra);
}

static double columns(const tsr_rebalance_costmap *m, const double *v, int x0, int x1) {
  tsr_box b = {{x0, 0, 0}, {x1, m->cells[1], 1}};
  return tsr_rb_box_sum(m, v, &b);
}

static void test_motion(void **state) {
  (void)state;
  int cells[3] = {64, 16, 1};
  tsr_rebalance_costmap s, e;
  band_map(cells, 20, 100, &s);
  band_map(cells, 24, 100, &e);
  double *past = malloc(2 * (size_t)e.nblock * sizeof *past), *next = past + e.nblock;
  const double all = 100.0 * 2 * 16;
  /* no start: both are the end's extra where it is */
  assert_int_equal(tsr_rb_motion(&e, NULL, 1.0, past, next), TSR_OK);
  assert_true(columns(&e, past, 24, 26) == all && columns(&e, next, 24, 26) == all);
  assert_int_equal(tsr_rb_motion(&e, &s, 1.0, past, next), TSR_OK);
  /* over the window: spread from 20 to 26, the same total, none left behind or ahead */
  assert_true(fabs(columns(&e, past, 0, 64) - all) < 1e-9 * all);
  assert_true(columns(&e, past, 20, 26) == columns(&e, past, 0, 64));
  assert_true(columns(&e, past, 20, 23) > 0.3 * all && columns(&e, past, 23, 26) > 0.3 * all);
  /* ahead: from 24 on to 30 over the next window of the same length, none behind */
  assert_true(fabs(columns(&e, next, 24, 30) - all) < 1e-9 * all);
  assert_true(columns(&e, next, 27, 30) > 0.4 * all);
  /* twice as long ahead: twice as far */
  assert_int_equal(tsr_rb_motion(&e, &s, 2.0, past, next), TSR_OK);
  assert_true(columns(&e, next, 30, 34) > 0.3 * all);
  /* carried out of the grid: dropped */
  tsr_rebalance_costmap_free(&s);
  tsr_rebalance_costmap_free(&e);
  band_map(cells, 56, 100, &s);
  band_map(cells, 60, 100, &e);
  assert_int_equal(tsr_rb_motion(&e, &s, 1.0, past, next), TSR_OK);
  assert_true(columns(&e, next, 0, 64) < 0.75 * all && columns(&e, next, 60, 64) > 0.5 * all);
  free(past);
  tsr_rebalance_costmap_free(&s);
  tsr_rebalance_costmap_free(&e);
}

/* Two ranks and a costly band moving along x: the decision that knows where the band was
 * cuts for where it will be over the next window, the one that does not for where it is. */
static void test_moving_cut(void **state) {
  (void)state;
  int cells[3] = {64, 16, 1};
  tsr_rebalance_costmap s, e, ahead;
  band_map(cells, 20, 100, &s);
  band_map(cells, 24, 100, &e);
  band_map(cells, 24, 20, &ahead); /* the next window: the band from 24 on to 28 */
  for (int x = 25; x <= 28; ++x) {
    tsr_box b = {{x, 0, 0}, {x + 2, cells[1], 1}};
    tsr_rebalance_costmap_add_uniform(&ahead, &b, 20);
  }
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  assert_int_equal(L.boxes[0].hi[0], 32); /* x counts at half: the cut is across x */
  double rate[2] = {1e6, 1e6}, time[2];
  int64_t work[2];
  measure(&L, &e, rate, time, work);
  tsr_rebalance_measure me = {.nranks = 2, .nsteps = 1, .time = time, .work = work, .map = &e};
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &opts, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  int still = N.boxes[0].hi[0];
  tsr_layout_free(&N);
  me.start = &s;
  me.span = 10;
  tsr_rebalance_opts o = opts;
  o.window = 10;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &o, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.rebalance, 1);
  int moving = N.boxes[0].hi[0];
  /* the halves of the cost ahead: the moving cut leaves them far closer to equal */
  double lo = columns(&ahead, NULL, 0, moving), hi = columns(&ahead, NULL, moving, 64);
  double lo0 = columns(&ahead, NULL, 0, still), hi0 = columns(&ahead, NULL, still, 64);
  assert_true(moving > still);
  assert_true(fabs(lo - hi) < 0.25 * fabs(lo0 - hi0));
  tsr_layout_free(&N);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&s);
  tsr_rebalance_costmap_free(&e);
  tsr_rebalance_costmap_free(&ahead);
}

/* The work model: windows of 4 ranks whose cells and extra vary, each extra count costing 3
 * cell updates. Equally fast ranks: beta comes out 3 and the speeds equal; rank 2 three times
 * slower: beta still 3 and rank 2 three times slower; the speed changing mid-way: rank 2's
 * old windows are dropped and beta stays. */
static void model_windows(tsr_rebalance_model *m, const double *speed, int from, int to) {
  for (int k = from; k < to; ++k) {
    double c[4], x[4], t[4];
    for (int r = 0; r < 4; ++r) {
      c[r] = 1000.0 + 700.0 * ((r + k) % 4);
      x[r] = 5000.0 * ((r * 3 + k * 5) % 7);
      t[r] = (c[r] + 3.0 * x[r]) / speed[r] * (1.0 + 0.02 * (((r + 2 * k) % 5) - 2));
    }
    tsr_rb_model_update(m, c, x, t);
  }
}

static void test_model(void **state) {
  (void)state;
  tsr_rebalance_model m;
  double even[4] = {1e8, 1e8, 1e8, 1e8}, slow[4] = {1e8, 1e8, 1e8 / 3, 1e8};
  assert_int_equal(tsr_rebalance_model_init(4, &m), TSR_OK);
  assert_true(m.beta == 1.0);
  model_windows(&m, even, 0, 1);
  assert_true(m.beta == 1.0); /* one window cannot tell */
  model_windows(&m, even, 1, 8);
  assert_true(fabs(m.beta - 3.0) < 0.15);
  for (int r = 1; r < 4; ++r) assert_true(fabs(m.inv[r] / m.inv[0] - 1.0) < 0.05);
  tsr_rebalance_model_free(&m);
  assert_int_equal(tsr_rebalance_model_init(4, &m), TSR_OK);
  model_windows(&m, slow, 0, 8);
  assert_true(fabs(m.beta - 3.0) < 0.15);
  assert_true(fabs(m.inv[2] / m.inv[0] - 3.0) < 0.25); /* the prior pulls it a little */
  model_windows(&m, even, 8, 12);
  assert_true(fabs(m.beta - 3.0) < 0.15);
  assert_true(fabs(m.inv[2] / m.inv[0] - 1.0) < 0.1);
  assert_int_equal(m.windows, 12);
  tsr_rebalance_model_free(&m);
  tsr_rebalance_model_free(&m); /* safe twice */
}

/* The margin: a decision whose prediction fell short by 0.1 considers rebalancing once the
 * imbalance expected plus that margin passes the threshold, though the one measured has not. */
static void test_margin(void **state) {
  (void)state;
  int cells[3] = {64, 64, 1};
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  double rate[2] = {1e6, 0.8e6}, time[2]; /* imbalance 1 / 0.9 - 1 = 0.11 */
  int64_t work[2];
  measure(&L, &m, rate, time, work);
  tsr_rebalance_model mo;
  assert_int_equal(tsr_rebalance_model_init(2, &mo), TSR_OK);
  tsr_rebalance_measure me = {.nranks = 2, .nsteps = 1, .time = time, .work = work, .map = &m,
                              .model = &mo};
  tsr_rebalance_opts o = opts;
  o.threshold = 0.2;
  tsr_rebalance_decision d;
  assert_int_equal(tsr_rebalance_decide(&L, &me, &o, NULL, &N, &d), TSR_OK);
  assert_int_equal(d.reason, TSR_REBALANCE_BALANCED);
  assert_true(fabs(mo.last - d.expected) == 0.0 && fabs(d.expected - 0.111) < 0.001);
  mo.last = 0.0; /* as if the last decision had predicted an even window */
  assert_int_equal(tsr_rebalance_decide(&L, &me, &o, NULL, &N, &d), TSR_OK);
  assert_true(fabs(d.margin - 0.1) < 0.001); /* at most half the threshold */
  assert_int_equal(d.reason, TSR_REBALANCE_YES);
  assert_true(mo.last == d.predicted);
  tsr_layout_free(&N);
  tsr_rebalance_model_free(&mo);
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
}

/* Window-to-window noise (up to 4% on each rank's time; two H200s measured a few percent from
 * window to window) after a rank slowed 2x was rebalanced, migrations costing 1.4 steps: the
 * model's speeds over its windows leave the boxes where they are, where the last window's
 * speeds alone move the cut back and forth. */
static int noisy_rounds(tsr_rebalance_model *mo, int *paying) {
  static const double noise[2][16] = {{0, 1, -1, 0.5, -0.5, 1, 0, -1, 1, -0.5, 0.5, -1, 1, 0, -1, 1},
                                      {0, -1, 1, -1, 0.5, -1, 1, 0.5, -1, 1, -1, 0, -1, 1, 0.5, -1}};
  int cells[3] = {512, 512, 1}, moves = 0;
  *paying = 0;
  tsr_rebalance_costmap m;
  uniform_map(2, cells, 0, 1, &m);
  tsr_layout L, N;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, NULL, &L), TSR_OK);
  double rate[2] = {2e8, 1e8}, time[2];
  int64_t work[2];
  tsr_rebalance_opts o = {0.05, 50, 1, 0.0, 16};
  tsr_rebalance_state st = {0};
  tsr_rebalance_measure me = {.nranks = 2, .nsteps = 50, .time = time, .work = work, .map = &m,
                              .model = mo};
  tsr_rebalance_decision d;
  for (int k = 0; k < 16; ++k) {
    measure(&L, &m, rate, time, work);
    for (int r = 0; r < 2; ++r) time[r] *= 50.0 * (1.0 + 0.04 * noise[r][k]);
    assert_int_equal(tsr_rebalance_decide(&L, &me, &o, &st, &N, &d), TSR_OK);
    if (k == 0) assert_int_equal(d.rebalance, 1); /* the slowed rank: 0.33 */
    *paying += k > 0 && d.saving > d.migration_cost;
    if (d.rebalance) {
      moves += k > 0;
      /* 1.4 steps of the balanced 0.87 ms */
      st.migrations++, st.last_seconds = 1.2e-3, st.last_bytes = d.bytes_moved;
      tsr_layout_free(&L);
      L = N;
    }
  }
  tsr_layout_free(&L);
  tsr_rebalance_costmap_free(&m);
  return moves;
}

static void test_noise(void **state) {
  (void)state;
  tsr_rebalance_model mo;
  int paying;
  assert_int_equal(tsr_rebalance_model_init(2, &mo), TSR_OK);
  assert_int_equal(noisy_rounds(&mo, &paying), 0);
  assert_int_equal(paying, 0);
  tsr_rebalance_model_free(&mo);
  /* on one window's speeds the noise alone repays a migration (all 15 times here): above the
   * threshold, as the margin put it on two H200s, it was taken */
  assert_int_equal(noisy_rounds(NULL, &paying), 0);
  assert_true(paying > 10);
}

static void test_enabled_default(void **state) {
  (void)state;
  assert_int_equal(tsr_rebalance_enabled(-1, 1), 0);
  assert_int_equal(tsr_rebalance_enabled(-1, 2), 1);
  assert_int_equal(tsr_rebalance_enabled(0, 8), 0);
  assert_int_equal(tsr_rebalance_enabled(1, 1), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_costmap_blocks),     cmocka_unit_test(test_costmap_cells),
      cmocka_unit_test(test_uniform_is_plain_rcb), cmocka_unit_test(test_slow_rank),
      cmocka_unit_test(test_hot_band),           cmocka_unit_test(test_decision_reasons),
      cmocka_unit_test(test_deterministic),      cmocka_unit_test(test_cells_moved),
      cmocka_unit_test(test_goes_back),          cmocka_unit_test(test_motion),
      cmocka_unit_test(test_moving_cut),         cmocka_unit_test(test_model),
      cmocka_unit_test(test_margin),             cmocka_unit_test(test_enabled_default),
      cmocka_unit_test(test_noise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
