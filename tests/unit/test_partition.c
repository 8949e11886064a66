/* Partitioners: coverage, widths, balance, weights, explicit grids, errors, determinism. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/layout.h"

/* Boxes are disjoint, inside the grid, cover it, and are min_width wide on active axes. */
static void assert_valid(const tsr_layout *L, int nranks, int w) {
  assert_int_equal(L->nbox, nranks);
  int64_t sum = 0;
  for (int b = 0; b < L->nbox; ++b) {
    const tsr_box *x = &L->boxes[b];
    assert_int_equal(L->owner[b], b);
    assert_int_equal(tsr_layout_box_of(L, b), b);
    assert_true(tsr_box_contains(&L->global, x));
    for (int d = 0; d < L->dim; ++d) assert_true(tsr_box_len(x, d) >= w);
    if (L->dim == 2) assert_true(x->lo[2] == 0 && x->hi[2] == 1);
    sum += tsr_box_cells(x);
    for (int c = b + 1; c < L->nbox; ++c) {
      tsr_box i = tsr_box_intersect(x, &L->boxes[c]);
      assert_true(tsr_box_empty(&i));
    }
  }
  /* disjoint boxes inside the grid whose cells add up to the grid's cover it */
  assert_true(sum == tsr_box_cells(&L->global));
}

/* Each cut misses its ideal position by at most half a slice, and a child inherits at most
 * its parent's error (scaled by its share, <= 1), so a box's error is at most the sum of half
 * slices along its path from the root. A box of A cells is cut across its longest axis
 * (>= A^(1/dim) cells), so a slice has <= A^((dim-1)/dim) cells; the box at depth k holds
 * ceil(n / 2^k) ranks and about total ceil(n / 2^k) / n cells (10% slack for inherited
 * error). Valid away from the capacity limit, where no clamping happens. */
static double rcb_error_bound(int64_t total, int n, int dim) {
  double bound = 0.0;
  for (int m = n; m > 1; m = (m + 1) / 2)
    bound += 0.5 * pow(1.1 * (double)total * m / n, (dim - 1.0) / dim);
  return bound;
}

static const int shapes[][4] = {
    {2, 64, 64, 1}, {2, 60, 60, 1}, {2, 17, 23, 1}, {2, 100, 7, 1}, {2, 31, 97, 1},
    {3, 17, 23, 9}, {3, 16, 16, 16}, {3, 40, 9, 13}, {3, 8, 64, 8},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static void test_rcb_equal_weights(void **state) {
  (void)state;
  tsr_part_opts o = {TSR_PART_RCB, 1, {1, 1, 1}, NULL};
  double worst = 1.0;
  for (int s = 0; s < NSHAPES; ++s) {
    int dim = shapes[s][0], cells[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    int64_t total = (int64_t)cells[0] * cells[1] * cells[2];
    for (int n = 1; n <= 64; ++n) {
      tsr_layout L;
      assert_int_equal(tsr_partition(dim, cells, NULL, n, &o, &L), TSR_OK);
      assert_valid(&L, n, 1);
      int64_t lo = INT64_MAX, hi = 0;
      for (int b = 0; b < n; ++b) {
        int64_t c = tsr_box_cells(&L.boxes[b]);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
      }
      /* away from the capacity limit (at least 8 cells per rank per axis-ish) */
      if (total / n >= (dim == 2 ? 64 : 512)) {
        double bound = rcb_error_bound(total, n, dim), ideal = (double)total / n;
        if (!(hi - ideal <= bound && ideal - lo <= bound))
          fail_msg("dim %d %dx%dx%d n %d: cells %lld..%lld, ideal %.1f, bound %.1f", dim,
                   cells[0], cells[1], cells[2], n, (long long)lo, (long long)hi, ideal, bound);
        if ((double)hi / lo > worst) worst = (double)hi / lo;
      }
      tsr_layout_free(&L);
    }
  }
  print_message("rcb equal weights: worst max/min cells away from the limit %.3f\n", worst);
}

static void test_rcb_examples(void **state) {
  (void)state;
  tsr_layout L;
  /* a cut across x counts as one across an axis half as long (its faces are strided in
   * memory): 64x64 on 4 ranks is four 64x16 slabs, 256x64 on 2 is cut across x */
  int c64[3] = {64, 64, 1};
  assert_int_equal(tsr_partition(2, c64, NULL, 4, NULL, &L), TSR_OK);
  for (int b = 0; b < 4; ++b) {
    assert_int_equal(tsr_box_len(&L.boxes[b], 0), 64);
    assert_int_equal(tsr_box_len(&L.boxes[b], 1), 16);
  }
  tsr_layout_free(&L);
  int c256[3] = {256, 64, 1};
  assert_int_equal(tsr_partition(2, c256, NULL, 2, NULL, &L), TSR_OK);
  for (int b = 0; b < 2; ++b) {
    assert_int_equal(tsr_box_len(&L.boxes[b], 0), 128);
    assert_int_equal(tsr_box_len(&L.boxes[b], 1), 64);
  }
  tsr_layout_free(&L);
  /* 3 ranks on 60x60: three 60x20 slabs, all 1200 cells */
  int c60[3] = {60, 60, 1};
  assert_int_equal(tsr_partition(2, c60, NULL, 3, NULL, &L), TSR_OK);
  for (int b = 0; b < 3; ++b) assert_int_equal(tsr_box_cells(&L.boxes[b]), 1200);
  tsr_layout_free(&L);
  /* ties go to the highest (slowest) axis: faces are contiguous planes */
  int c3[3] = {16, 16, 16};
  assert_int_equal(tsr_partition(3, c3, NULL, 2, NULL, &L), TSR_OK);
  assert_int_equal(L.boxes[0].hi[2], 8);
  assert_int_equal(tsr_box_len(&L.boxes[0], 0), 16);
  assert_int_equal(tsr_box_len(&L.boxes[0], 1), 16);
  tsr_layout_free(&L);
}

static void test_rcb_weighted(void **state) {
  (void)state;
  int cells[3] = {64, 64, 1};
  double w13[2] = {1, 3};
  tsr_part_opts o = {TSR_PART_RCB, 1, {1, 1, 1}, w13};
  tsr_layout L;
  assert_int_equal(tsr_partition(2, cells, NULL, 2, &o, &L), TSR_OK);
  assert_valid(&L, 2, 1);
  /* 64 * 1/4 = 16 columns exactly */
  assert_int_equal(tsr_box_cells(&L.boxes[0]), 1024);
  assert_int_equal(tsr_box_cells(&L.boxes[1]), 3072);
  tsr_layout_free(&L);

  /* weights 1..4 on odd grids: each box within the error bound of its weighted share */
  double w[64];
  for (int r = 0; r < 64; ++r) w[r] = 1 + r % 4;
  o.weights = w;
  for (int s = 0; s < NSHAPES; ++s) {
    int dim = shapes[s][0], c[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    int64_t total = (int64_t)c[0] * c[1] * c[2];
    for (int n = 2; n <= 16; ++n) {
      assert_int_equal(tsr_partition(dim, c, NULL, n, &o, &L), TSR_OK);
      assert_valid(&L, n, 1);
      double wsum = 0;
      for (int r = 0; r < n; ++r) wsum += w[r];
      for (int r = 0; r < n && total / n >= (dim == 2 ? 256 : 2048); ++r) {
        double ideal = total * w[r] / wsum;
        double dev = fabs((double)tsr_box_cells(&L.boxes[r]) - ideal);
        /* the bound for equal weights, with the largest share (4/10 of a pair) in place of 1/2 */
        assert_true(dev <= rcb_error_bound(total, n, dim) * 1.5);
      }
      tsr_layout_free(&L);
    }
  }
}

static void test_slabs(void **state) {
  (void)state;
  tsr_part_opts o = {TSR_PART_SLABS, 1, {1, 1, 1}, NULL};
  for (int s = 0; s < NSHAPES; ++s) {
    int dim = shapes[s][0], c[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    int axis = 0;
    for (int d = 1; d < dim; ++d)
      if (c[d] >= c[axis]) axis = d; /* ties: the slowest axis */
    for (int n = 1; n <= c[axis] && n <= 64; ++n) {
      tsr_layout L;
      assert_int_equal(tsr_partition(dim, c, NULL, n, &o, &L), TSR_OK);
      assert_valid(&L, n, 1);
      for (int b = 0; b < n; ++b) {
        /* only the longest axis is cut, and slab widths differ by at most one cell */
        for (int d = 0; d < dim; ++d)
          if (d != axis) assert_int_equal(tsr_box_len(&L.boxes[b], d), c[d]);
        int len = tsr_box_len(&L.boxes[b], axis);
        assert_true(len == c[axis] / n || len == c[axis] / n + 1);
      }
      tsr_layout_free(&L);
    }
  }
  int c[3] = {100, 10, 1};
  double w[3] = {1, 2, 2};
  o.weights = w;
  tsr_layout L;
  assert_int_equal(tsr_partition(2, c, NULL, 3, &o, &L), TSR_OK);
  assert_int_equal(tsr_box_len(&L.boxes[0], 0), 20);
  assert_int_equal(tsr_box_len(&L.boxes[1], 0), 40);
  assert_int_equal(tsr_box_len(&L.boxes[2], 0), 40);
  tsr_layout_free(&L);
}

static void test_grid(void **state) {
  (void)state;
  int c[3] = {10, 7, 1};
  tsr_part_opts o = {TSR_PART_GRID, 1, {3, 2, 1}, NULL};
  tsr_layout L;
  assert_int_equal(tsr_partition(2, c, NULL, 6, &o, &L), TSR_OK);
  assert_valid(&L, 6, 1);
  /* x: 10 = 4 + 3 + 3, y: 7 = 4 + 3; rank = i + 3 j */
  static const int want[6][4] = {{0, 4, 0, 4}, {4, 7, 0, 4}, {7, 10, 0, 4},
                                 {0, 4, 4, 7}, {4, 7, 4, 7}, {7, 10, 4, 7}};
  for (int r = 0; r < 6; ++r) {
    assert_int_equal(L.boxes[r].lo[0], want[r][0]);
    assert_int_equal(L.boxes[r].hi[0], want[r][1]);
    assert_int_equal(L.boxes[r].lo[1], want[r][2]);
    assert_int_equal(L.boxes[r].hi[1], want[r][3]);
  }
  tsr_layout_free(&L);

  int c3[3] = {17, 23, 9};
  tsr_part_opts o3 = {TSR_PART_GRID, 2, {2, 3, 4}, NULL};
  assert_int_equal(tsr_partition(3, c3, NULL, 24, &o3, &L), TSR_OK);
  assert_valid(&L, 24, 2);
  tsr_layout_free(&L);

  /* product mismatch, and z ranks in 2D */
  o.grid[0] = 4;
  assert_int_equal(tsr_partition(2, c, NULL, 6, &o, &L), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "has 8 ranks but the run has 6 ranks"));
  assert_null(L.boxes);
  int g2[3] = {3, 1, 2};
  memcpy(o.grid, g2, sizeof g2);
  assert_int_equal(tsr_partition(2, c, NULL, 6, &o, &L), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "along z"));
  /* too many ranks along x: 11 > 10 */
  int g3[3] = {11, 1, 1};
  memcpy(o.grid, g3, sizeof g3);
  assert_int_equal(tsr_partition(2, c, NULL, 11, &o, &L), TSR_ERR_INPUT);
  /* 11 is prime and 11 > 10 and > 7: the best grid holds 10 (10 x 1) */
  assert_int_equal(tsr_partition_max_ranks(2, c, &o, 11), 10);
  assert_non_null(strstr(tsr_err_message(), "at most 10 ranks fit"));
  assert_int_equal(tsr_partition_max_ranks(2, c, &o, 1000), 70);
  /* 7 ranks fit as 1 x 7 but not as 7 x 1 on 6 x 7: the message says which grid works */
  int c67[3] = {6, 7, 1}, g4[3] = {7, 1, 1};
  memcpy(o.grid, g4, sizeof g4);
  assert_int_equal(tsr_partition(2, c67, NULL, 7, &o, &L), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "6 cells along x over 7 ranks"));
  assert_non_null(strstr(tsr_err_message(), "use ranks: [1, 7, 1]"));
}

static void test_too_many_ranks(void **state) {
  (void)state;
  int c[3] = {8, 8, 1};
  tsr_part_opts o = {TSR_PART_RCB, 2, {1, 1, 1}, NULL};
  tsr_layout L;
  assert_int_equal(tsr_partition(2, c, NULL, 20, &o, &L), TSR_ERR_INPUT);
  const char *m = tsr_err_message();
  assert_non_null(strstr(m, "cannot split a 8 x 8 grid over 20 ranks"));
  assert_non_null(strstr(m, "at most 16 ranks fit (partition rcb)"));
  assert_int_equal(tsr_partition_max_ranks(2, c, &o, 20), 16);
  assert_int_equal(tsr_partition(2, c, NULL, 16, &o, &L), TSR_OK);
  assert_valid(&L, 16, 2);
  tsr_layout_free(&L);

  /* the max agrees with trying, for every partitioner, near the limit */
  for (int s = 0; s < NSHAPES; ++s) {
    int dim = shapes[s][0], cc[3] = {shapes[s][1], shapes[s][2], shapes[s][3]};
    for (int kind = TSR_PART_RCB; kind <= TSR_PART_SLABS; ++kind)
      for (int w = 3; w <= 6; ++w) {
        tsr_part_opts q = {kind, w, {1, 1, 1}, NULL};
        int max = tsr_partition_max_ranks(dim, cc, &q, 1 << 20);
        if (max == 0 || max > 400) continue;
        assert_int_equal(tsr_partition(dim, cc, NULL, max, &q, &L), TSR_OK);
        assert_valid(&L, max, w);
        tsr_layout_free(&L);
        assert_int_equal(tsr_partition(dim, cc, NULL, max + 1, &q, &L), TSR_ERR_INPUT);
        char want[64];
        snprintf(want, sizeof want, "at most %d ranks fit", max);
        assert_non_null(strstr(tsr_err_message(), want));
        /* every count below the max works too (RCB bends its rank split near the limit) */
        for (int n = 1; n < max; n += 1 + n / 8) {
          assert_int_equal(tsr_partition(dim, cc, NULL, n, &q, &L), TSR_OK);
          assert_valid(&L, n, w);
          tsr_layout_free(&L);
        }
      }
  }
  /* a grid thinner than min_width fits nobody */
  int thin[3] = {2, 50, 1};
  tsr_part_opts wide = {TSR_PART_RCB, 3, {1, 1, 1}, NULL};
  assert_int_equal(tsr_partition_max_ranks(2, thin, &wide, 10), 0);
  assert_int_equal(tsr_partition(2, thin, NULL, 1, &wide, &L), TSR_ERR_INPUT);
}

static void test_bad_options(void **state) {
  (void)state;
  int c[3] = {16, 16, 16};
  tsr_layout L;
  double w[2] = {1, NAN};
  tsr_part_opts o = {TSR_PART_RCB, 1, {1, 1, 1}, w};
  assert_int_equal(tsr_partition(3, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "weight of rank 1"));
  w[1] = -1;
  assert_int_equal(tsr_partition(3, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  w[1] = 0;
  assert_int_equal(tsr_partition(3, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  /* each finite, the sum not: every share was NaN */
  w[0] = w[1] = 1e308;
  assert_int_equal(tsr_partition(3, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "sum past the range of double"));
  o.weights = NULL;
  assert_int_equal(tsr_partition(3, c, NULL, 0, &o, &L), TSR_ERR_INPUT);
  assert_int_equal(tsr_partition(4, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  assert_int_equal(tsr_partition(1, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
  o.min_width = -1;
  assert_int_equal(tsr_partition(3, c, NULL, 2, &o, &L), TSR_ERR_INPUT);
}

static void test_determinism_and_copy(void **state) {
  (void)state;
  int c[3] = {17, 23, 9}, per[3] = {1, 0, 1};
  double w[37];
  for (int r = 0; r < 37; ++r) w[r] = 0.5 + (r * 7 % 11) / 3.0;
  tsr_part_opts o = {TSR_PART_RCB, 1, {1, 1, 1}, w};
  tsr_layout a, b, copy;
  assert_int_equal(tsr_partition(3, c, per, 37, &o, &a), TSR_OK);
  assert_int_equal(tsr_partition(3, c, per, 37, &o, &b), TSR_OK);
  assert_valid(&a, 37, 1);
  assert_memory_equal(a.boxes, b.boxes, 37 * sizeof *a.boxes);
  assert_int_equal(a.periodic[0], 1);
  assert_int_equal(a.periodic[1], 0);
  assert_int_equal(tsr_layout_copy(&a, &copy), TSR_OK);
  assert_ptr_not_equal(copy.boxes, a.boxes);
  assert_memory_equal(copy.boxes, a.boxes, 37 * sizeof *a.boxes);
  assert_memory_equal(copy.owner, a.owner, 37 * sizeof *a.owner);
  assert_int_equal(tsr_layout_box_of(&copy, 99), -1);
  tsr_layout_free(&a);
  tsr_layout_free(&b);
  tsr_layout_free(&copy);
  tsr_layout_free(&copy); /* twice is safe */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rcb_equal_weights), cmocka_unit_test(test_rcb_examples),
      cmocka_unit_test(test_rcb_weighted),      cmocka_unit_test(test_slabs),
      cmocka_unit_test(test_grid),              cmocka_unit_test(test_too_many_ranks),
      cmocka_unit_test(test_bad_options),       cmocka_unit_test(test_determinism_and_copy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
