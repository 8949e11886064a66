/* The rebalancer's work model (decomp/rebalance.h, decomp/rebalance_impl.h).
 *
 * Why: measured on 4 CPU ranks with the ignition front (bench/README.md, Rebalancer), a front
 * cell's extra sub-step cost 2.5-3 times a cell's update, so with one count per sub-step a
 * rank holding the front read as 2-3 times slower than one holding cold cells, and the next
 * partition gave it fewer cells still. How much an extra count costs depends on the code and
 * the device, so it is fitted from the run's own windows. Deterministic: every rank runs this
 * on the same bits in the same order (built with -ffp-contract=off). */
#include "decomp/rebalance_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tsr_err tsr_rebalance_model_init(int nranks, tsr_rebalance_model *model) {
  memset(model, 0, sizeof *model);
  TSR_CHECK(nranks >= 1, TSR_ERR_INPUT, "a work model of %d ranks", nranks);
  model->nranks = nranks;
  model->beta = 1.0;
  model->last = -1.0;
  model->hist = calloc((size_t)TSR_REBALANCE_MODEL_WINDOWS * (1 + 3 * (size_t)nranks),
                       sizeof *model->hist);
  model->inv = calloc((size_t)nranks, sizeof *model->inv);
  if (!model->hist || !model->inv) {
    tsr_rebalance_model_free(model);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory for the rebalancer's work model of %d ranks", nranks);
  }
  return TSR_OK;
}

void tsr_rebalance_model_free(tsr_rebalance_model *model) {
  if (!model) return;
  free(model->hist);
  free(model->inv);
  model->hist = model->inv = NULL;
}

/* The priors' weights, per unit of the windows' weight: the ranks equally fast (on the
 * relative difference of their speeds), then beta 1. The residuals are relative times: one
 * window of a rank 3 times slower weighs 0.44, twenty times the first prior, while along a
 * direction the windows leave flat (beta against the ranks' speeds when every rank's mix stays
 * the same) the priors decide. */
#define PRIOR_SPEED 0.02
#define PRIOR_BETA 0.001
#define FIT_ITERATIONS 20

/* A rank's speed against its fitted one beyond this factor either way is a change of speed,
 * not noise. */
#define SPEED_CHANGE 1.5

/* Window k of the history (0: the oldest held). */
static double *window_at(const tsr_rebalance_model *m, int k) {
  int at = (m->head - m->len + k + TSR_REBALANCE_MODEL_WINDOWS) % TSR_REBALANCE_MODEL_WINDOWS;
  return m->hist + (size_t)at * (1 + 3 * (size_t)m->nranks);
}

/* Least squares of the relative residuals inv_r (C + beta X) / t - 1 over the windows held,
 * with the priors: alternates between the ranks' inverse speeds inv_r and beta, from the last
 * estimate. */
static void refit(tsr_rebalance_model *m) {
  const int n = m->nranks;
  double beta = m->beta, wsum = 0.0;
  for (int k = 0; k < m->len; ++k) wsum += window_at(m, k)[0];
  for (int r = 0; r < n; ++r) m->inv[r] = 1.0;
  for (int it = 0; it < FIT_ITERATIONS; ++it) {
    double mean = 0.0;
    for (int r = 0; r < n; ++r) mean += m->inv[r] / n;
    for (int r = 0; r < n; ++r) {
      /* inv = argmin sum w (inv q - 1)^2 + prior ((inv - mean) / mean)^2, q: work / time */
      double a = 0.0, b = 0.0, lv = PRIOR_SPEED * wsum / (mean * mean);
      for (int k = 0; k < m->len; ++k) {
        const double *w = window_at(m, k), *f = w + 1 + 3 * r;
        if (!(f[2] > 0.0)) continue;
        double q = (f[0] + beta * f[1]) / f[2];
        a += w[0] * q * q;
        b += w[0] * q;
      }
      m->inv[r] = a > 0.0 ? (b + lv * mean) / (a + lv) : mean;
    }
    /* beta = argmin sum w (g X beta - (1 - g C))^2 + prior (beta - 1)^2, g = inv / t */
    double a = PRIOR_BETA * wsum, b = PRIOR_BETA * wsum;
    for (int k = 0; k < m->len; ++k) {
      const double *w = window_at(m, k);
      for (int r = 0; r < n; ++r) {
        const double *f = w + 1 + 3 * r;
        if (!(f[2] > 0.0)) continue;
        double g = m->inv[r] / f[2];
        a += w[0] * (g * f[1]) * (g * f[1]);
        b += w[0] * (g * f[1]) * (1.0 - g * f[0]);
      }
    }
    beta = b / a;
    if (!(beta >= 0.0)) beta = 0.0;
    if (beta > TSR_REBALANCE_MODEL_BETA_MAX) beta = TSR_REBALANCE_MODEL_BETA_MAX;
  }
  m->beta = beta;
}

void tsr_rb_model_update(tsr_rebalance_model *m, const double *cells, const double *extra,
                         const double *t) {
  const int n = m->nranks;
  for (int k = 0; k < m->len; ++k) window_at(m, k)[0] *= TSR_REBALANCE_MODEL_DECAY;
  /* a rank whose speed changed (a slowdown begins or ends) keeps only its new windows: its
   * old ones would be explained by a wrong beta */
  for (int r = 0; m->len >= 2 && r < n; ++r) {
    double q = m->inv[r] * (cells[r] + m->beta * extra[r]) / t[r];
    if (t[r] > 0.0 && !(q < SPEED_CHANGE && q > 1.0 / SPEED_CHANGE))
      for (int k = 0; k < m->len; ++k) window_at(m, k)[3 + 3 * r] = 0.0;
  }
  double *w = m->hist + (size_t)m->head * (1 + 3 * (size_t)n);
  w[0] = 1.0;
  for (int r = 0; r < n; ++r) {
    w[1 + 3 * r] = cells[r];
    w[2 + 3 * r] = extra[r];
    w[3 + 3 * r] = t[r];
  }
  m->head = (m->head + 1) % TSR_REBALANCE_MODEL_WINDOWS;
  if (m->len < TSR_REBALANCE_MODEL_WINDOWS) m->len++;
  m->windows++;
  /* one window cannot tell a rank's speed from its mix */
  if (m->len >= 2) refit(m);
}

void tsr_rb_model_speeds(const tsr_rebalance_model *m, double beta, double *speed) {
  for (int r = 0; r < m->nranks; ++r) {
    double work = 0.0, time = 0.0;
    for (int k = 0; k < m->len; ++k) {
      const double *w = window_at(m, k), *f = w + 1 + 3 * r;
      if (!(f[2] > 0.0)) continue;
      work += w[0] * (f[0] + beta * f[1]);
      time += w[0] * f[2];
    }
    speed[r] = time > 0.0 ? work / time : 0.0;
  }
}
