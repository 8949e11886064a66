/* The PINN trainer: set-up (backend, points, network, restart), the loop of Adam iterations in
 * chunks between log points, checkpoints and resampling, and the stop on a non-finite loss. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/pinn_state.h"
#include "io/case_expr.h"
#include "solver/device.h"
#include "solver/fault.h"
#include "solver/pinn/lbfgs.h"
#include "solver/stop.h"
#include "solver/pinn/pinn.h"
#include "solver/pinn/train.h"

const char *const tsr_pinn_hist_names[H_NCOL] = {"iteration", "loss", "pde",  "boundary",
                                                 "initial",   "error_l2", "lr", "seconds"};

static tsr_err choose_device(tsr_pinn_ctx *x, MPI_Comm comm) {
  tsr_backend want = x->opts.backend != TSR_BACKEND_AUTO ? x->opts.backend : x->c->backend;
  TSR_CALL(tsr_run_use_cuda(comm, want, &x->device));
  int dev;
  if (x->device) TSR_CALL(tsr_device_select(comm, &dev));
  return TSR_OK;
}

/* The network and engine options of the case, for the batch b. */
static void engine_opts(const tsr_case *c, const tsr_pinn_batch *b, int device,
                        tsr_pinn_engine_opts *o) {
  memset(o, 0, sizeof *o);
  int nin;
  tsr_pinn_shape(c, &nin, o->in_scale, o->in_shift);
  o->shape = (tsr_net_shape){.nin = nin, .nout = c->ncomp, .width = c->pinn.width,
                             .depth = c->pinn.depth,
                             .act = c->pinn.act == TSR_PINN_SIN ? TSR_NET_SIN : TSR_NET_TANH,
                             .nd1 = nin, .nd2 = c->dim};
  o->single = c->precision == TSR_PRECISION_SINGLE;
  o->device = device;
  tsr_pinn_loss_desc *d = &o->loss;
  d->model = c->model;
  d->ncomp = c->ncomp;
  d->nspace = c->dim;
  d->timed = b->timed;
  d->nd1 = nin;
  d->npts = b->npts;
  d->coef.dim = c->dim;
  for (int i = 0; i < tsr_models[c->model].nparam; ++i) d->coef.p[i] = c->param_value[i];
  tsr_model_coef_derived(c->model, d->coef.p, d->coef.q);
  d->nterm = b->nterm;
  memcpy(d->term, b->term, sizeof d->term);
  o->adam = (tsr_pinn_adam){.lr = c->pinn.lr, .decay = c->pinn.decay,
                            .decay_every = (double)c->pinn.decay_every, .beta1 = 0.9,
                            .beta2 = 0.999, .eps = 1e-8};
  o->hist_cap = (int)(c->pinn.log_every < 4096 ? c->pinn.log_every : 4096);
  o->graphs = c->gpu.graphs != TSR_GRAPHS_OFF;
}

/* The error's points: the grid's cell centres at `times` levels (cell centres of [0, end]), or
 * at once for a steady model; the exact solution there. */
static tsr_err error_points(tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  int has = 0;
  for (int k = 0; k < c->ncomp; ++k) has |= c->exact[k].text != NULL;
  if (!has) return TSR_OK;
  int levels = x->batch.timed ? c->pinn.times : 1, nin = x->batch.nin;
  int64_t ng;
  double *G = NULL;
  TSR_CALL(tsr_pinn_grid_points(c, 0.0, &G, &ng));
  x->ne = ng * levels;
  x->Xe = malloc((size_t)x->ne * nin * sizeof *x->Xe);
  x->ue = malloc((size_t)x->ne * c->ncomp * sizeof *x->ue);
  if (!x->Xe || !x->ue) {
    free(G);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for %lld error points",
                       (long long)x->ne);
  }
  for (int l = 0; l < levels; ++l) {
    double t = x->batch.timed ? (l + 0.5) * (c->time.end / levels) : 0.0;
    for (int64_t p = 0; p < ng; ++p) {
      double *X = x->Xe + (size_t)nin * (l * ng + p);
      memcpy(X, G + (size_t)nin * p, (size_t)nin * sizeof *X);
      if (x->batch.timed) X[c->dim] = t;
    }
  }
  free(G);
  for (int k = 0; k < c->ncomp; ++k) {
    tsr_expr *e = NULL;
    if (c->exact[k].text) TSR_CALL(tsr_case_compile(c, &c->exact[k], &e));
    for (int64_t p = 0; p < x->ne; ++p) {
      const double *X = x->Xe + (size_t)nin * p;
      double t = x->batch.timed ? X[c->dim] : 0.0;
      x->ue[k + c->ncomp * p] =
          e ? tsr_expr_eval(e, X[0], c->dim > 1 ? X[1] : 0.0, c->dim > 2 ? X[2] : 0.0, t) : NAN;
    }
    tsr_expr_destroy(&e);
  }
  return TSR_OK;
}

tsr_err tsr_pinn_error(tsr_pinn_ctx *x, double *err) {
  *err = NAN;
  if (!x->ne) return TSR_OK;
  int nc = x->c->ncomp, cap = x->eo.eval_cap;
  double *u = malloc((size_t)cap * nc * sizeof *u);
  TSR_CHECK(u, TSR_ERR_MEMORY, "out of memory evaluating the error");
  double se = 0.0, sx = 0.0;
  tsr_err e = TSR_OK;
  for (int64_t p0 = 0; p0 < x->ne && !e; p0 += cap) {
    int n = (int)(x->ne - p0 < cap ? x->ne - p0 : cap);
    e = tsr_pinn_engine_eval(x->eng, x->Xe + (size_t)x->batch.nin * p0, n, u);
    for (int64_t i = 0; i < (int64_t)n * nc && !e; ++i) {
      double ex = x->ue[p0 * nc + i];
      if (isnan(ex)) continue; /* a component without exact */
      se += (u[i] - ex) * (u[i] - ex);
      sx += ex * ex;
    }
  }
  free(u);
  TSR_CALL(e);
  *err = sx > 0.0 ? sqrt(se / sx) : sqrt(se);
  return TSR_OK;
}

static tsr_err add_row(tsr_pinn_ctx *x, const double *row) {
  if (x->nrow == x->caprow) {
    int cap = x->caprow ? 2 * x->caprow : 256;
    double *h = realloc(x->hist, (size_t)cap * H_NCOL * sizeof *h);
    TSR_CHECK(h, TSR_ERR_MEMORY, "out of memory for the training history");
    x->hist = h;
    x->caprow = cap;
  }
  memcpy(x->hist + (size_t)x->nrow * H_NCOL, row, H_NCOL * sizeof *row);
  ++x->nrow;
  return TSR_OK;
}

static double lr_at(const tsr_case *c, int64_t it) {
  return c->pinn.lr * pow(c->pinn.decay, (double)it / (double)c->pinn.decay_every);
}

/* Group sums of one iteration's term losses into a history row (the error filled later). */
static void row_of(const tsr_pinn_ctx *x, const double *terms, int64_t it, double *row) {
  for (int k = 0; k < H_NCOL; ++k) row[k] = NAN;
  row[H_ITER] = (double)it;
  double g[TSR_PINN_NGROUP] = {0}, all = 0.0;
  int has[TSR_PINN_NGROUP] = {0};
  for (int k = 0; k < x->batch.nterm; ++k) {
    g[x->batch.group[k]] += terms[k];
    has[x->batch.group[k]] = 1;
    all += terms[k];
  }
  row[H_LOSS] = all;
  for (int k = 0; k < TSR_PINN_NGROUP; ++k)
    if (has[k]) row[H_PDE + k] = g[k];
  row[H_LR] = lr_at(x->c, it);
  row[H_SECONDS] = x->prior_s + x->train_s;
}

/* A term whose loss is not finite in any of the n rows: the stop's message. */
static tsr_err check_finite(const tsr_pinn_ctx *x, const double *rows, int n, int64_t it) {
  int nt = x->batch.nterm;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < nt; ++k) {
      if (isfinite(rows[(size_t)i * nt + k])) continue;
      char last[4300];
      if (x->ckpt_path[0]) snprintf(last, sizeof last, "the last checkpoint, %s, is good: lower "
                                    "pinn.adam.lr and continue from it with --restart latest",
                                    x->ckpt_path);
      else snprintf(last, sizeof last, "no checkpoint was written; lower pinn.adam.lr");
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "the loss became %s at iteration %lld in term %s (%s); %s",
                         isnan(rows[(size_t)i * nt + k]) ? "NaN" : "infinite",
                         (long long)(it + i), x->batch.name[k],
                         tsr_pinn_group_names[x->batch.group[k]], last);
    }
  return TSR_OK;
}

/* Once per group: a warning when its loss has not gone below 0.99 of its best for the last
 * fifth of the run so far (at least 10 log points). */
static void stall_warning(tsr_pinn_ctx *x, tsr_progress *pg, int *warned) {
  int n = x->nrow;
  if (n < 20) return;
  for (int g = 0; g < TSR_PINN_NGROUP; ++g) {
    if (warned[g]) continue;
    int cut = n - n / 5;
    double before = INFINITY, after = INFINITY;
    for (int i = 0; i < n; ++i) {
      double v = x->hist[(size_t)i * H_NCOL + H_PDE + g];
      if (isnan(v)) continue;
      if (i < cut) before = v < before ? v : before;
      else after = v < after ? v : after;
    }
    if (isinf(before) || after < 0.99 * before) continue;
    char line[256];
    snprintf(line, sizeof line, "warning: loss term %s has not decreased since iteration %lld "
             "(best %.3e, now %.3e): the weights (pinn.weights) or the learning rate may need a "
             "change", tsr_pinn_group_names[g], (long long)x->hist[(size_t)cut * H_NCOL],
             before, x->hist[(size_t)(n - 1) * H_NCOL + H_PDE + g]);
    tsr_progress_line(pg, line);
    warned[g] = 1;
  }
}

static tsr_err checkpoint(tsr_pinn_ctx *x, int64_t it) {
  double t0 = MPI_Wtime();
  tsr_pinn_state st = {.iteration = it, .nparam = x->nparam, .hist_rows = x->nrow,
                       .hist_cols = H_NCOL, .hist = x->hist,
                       .net = {x->c->pinn.width, x->c->pinn.depth, x->c->pinn.act,
                               x->c->precision == TSR_PRECISION_SINGLE}};
  st.theta = malloc(3 * x->nparam * sizeof(double));
  TSR_CHECK(st.theta, TSR_ERR_MEMORY, "out of memory for a checkpoint");
  st.m = st.theta + x->nparam;
  st.v = st.m + x->nparam;
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st.theta, st.m, st.v);
  if (!err) err = tsr_pinn_state_write(x->c, x->out_dir, &st, x->ckpt_path, sizeof x->ckpt_path);
  free(st.theta);
  x->ckpt_s += MPI_Wtime() - t0;
  if (!err) ++x->ckpt_count;
  return err;
}

static tsr_err restart(tsr_pinn_ctx *x) {
  tsr_pinn_state st = {.nparam = x->nparam,
                       .net = {x->c->pinn.width, x->c->pinn.depth, x->c->pinn.act,
                               x->c->precision == TSR_PRECISION_SINGLE}};
  TSR_CALL(tsr_pinn_state_read(x->c, x->opts.restart, x->out_dir, &st, x->ckpt_path,
                               sizeof x->ckpt_path));
  tsr_err err = TSR_OK;
  if (st.hist_cols != H_NCOL && st.hist_rows > 0)
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s': its history has %d columns, "
                      "this tessera writes %d; restart with the tessera that wrote it",
                      x->ckpt_path, st.hist_cols, H_NCOL);
  for (int i = 0; i < st.hist_rows && !err; ++i) err = add_row(x, st.hist + (size_t)i * H_NCOL);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, st.theta, st.m, st.v, st.iteration);
  x->it0 = st.iteration;
  if (x->nrow) x->prior_s = x->hist[(size_t)(x->nrow - 1) * H_NCOL + H_SECONDS];
  tsr_pinn_state_free(&st);
  if (!err && !x->opts.quiet)
    printf("restart: iteration %lld from %s\n", (long long)x->it0, x->ckpt_path);
  return err;
}

/* The batch of draw k (resampled interior points) into the engine. */
static tsr_err set_draw(tsr_pinn_ctx *x, uint64_t k) {
  if (k == x->draw && x->batch.X) return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
  tsr_pinn_batch_free(&x->batch);
  TSR_CALL(tsr_pinn_batch_build(x->c, k, &x->batch));
  x->draw = k;
  return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
}

static tsr_err setup(tsr_pinn_ctx *x, MPI_Comm comm) {
  const tsr_case *c = x->c;
  TSR_CALL(choose_device(x, comm));
  TSR_CALL(tsr_pinn_batch_build(c, 0, &x->batch));
  engine_opts(c, &x->batch, x->device, &x->eo);
  x->shape = x->eo.shape;
  x->nparam = tsr_net_nparam(&x->shape);
  TSR_CALL(error_points(x));
  int64_t ng = 1;
  for (int a = 0; a < c->dim; ++a) ng *= c->cells[a];
  int64_t cap = x->ne > ng ? x->ne : ng;
  x->eo.eval_cap = (int)(cap < 65536 ? cap : 65536);
  TSR_CALL(tsr_pinn_engine_create(&x->eo, &x->eng));
  double *theta = malloc(x->nparam * sizeof *theta);
  TSR_CHECK(theta, TSR_ERR_MEMORY, "out of memory for %zu parameters", x->nparam);
  tsr_net_init(&x->shape, c->pinn.seed, theta);
  tsr_err err = tsr_pinn_engine_set_state(x->eng, theta, NULL, NULL, 0);
  free(theta);
  TSR_CALL(err);
  if (x->opts.restart) TSR_CALL(restart(x));
  uint64_t k = c->pinn.resample_every ? (uint64_t)(x->it0 / c->pinn.resample_every) : 0;
  return set_draw(x, k);
}

static void summary(const tsr_pinn_ctx *x, tsr_progress *pg) {
  char line[512];
  int n = snprintf(line, sizeof line, "pinn: %s on %s, %s precision: network %d x %d %s, %zu "
                   "parameters; points", tsr_models[x->c->model].name,
                   x->device ? "the GPU" : "the host",
                   x->eo.single ? "single" : "double", x->shape.depth, x->shape.width,
                   x->shape.act == TSR_NET_SIN ? "sin" : "tanh", x->nparam);
  for (int k = 0; k < x->batch.nterm && n < (int)sizeof line; ++k)
    n += snprintf(line + n, sizeof line - n, "%s %s %d", k ? "," : "", x->batch.name[k],
                  x->batch.term[k].count);
  tsr_progress_line(pg, line);
}

static void log_line(const tsr_pinn_ctx *x, const double *row, int64_t total, tsr_progress *pg,
                     double rate) {
  char line[512];
  int n = snprintf(line, sizeof line, "iteration %lld/%lld loss %.4e (", (long long)row[H_ITER],
                   (long long)total, row[H_LOSS]);
  const char *sep = "";
  for (int g = 0; g < TSR_PINN_NGROUP; ++g) {
    if (isnan(row[H_PDE + g])) continue;
    n += snprintf(line + n, sizeof line - n, "%s%s %.3e", sep, tsr_pinn_group_names[g],
                  row[H_PDE + g]);
    sep = ", ";
  }
  n += snprintf(line + n, sizeof line - n, ")");
  if (!isnan(row[H_ERROR])) n += snprintf(line + n, sizeof line - n, " error %.3e", row[H_ERROR]);
  snprintf(line + n, sizeof line - n, " lr %.3e, %.4g it/s", row[H_LR], rate);
  tsr_progress_line(pg, line);
}

/* How many iterations from it before the next log point, checkpoint, redraw or the end. */
static int chunk(const tsr_pinn_ctx *x, int64_t it, int64_t total) {
  const tsr_case *c = x->c;
  int64_t n = c->pinn.log_every - it % c->pinn.log_every;
  if (total - it < n) n = total - it;
  if (x->eo.hist_cap < n) n = x->eo.hist_cap;
  if (c->pinn.resample_every && c->pinn.resample_every - it % c->pinn.resample_every < n)
    n = c->pinn.resample_every - it % c->pinn.resample_every;
  int64_t ce = c->output.checkpoint_every.steps;
  if (ce && ce - it % ce < n) n = ce - it % ce;
  const tsr_fault *f = x->opts.fault;
  if (f && f->kind == TSR_FAULT_NAN && f->step > it && f->step - it < n) n = f->step - it;
  return (int)n;
}

/* --inject-fault kind=nan: after iteration f->step a parameter becomes NaN. */
static tsr_err inject_nan(tsr_pinn_ctx *x, int64_t it) {
  const tsr_fault *f = x->opts.fault;
  if (!f || f->kind != TSR_FAULT_NAN || f->step != it || !tsr_fault_armed()) return TSR_OK;
  double *st = malloc(3 * x->nparam * sizeof *st);
  TSR_CHECK(st, TSR_ERR_MEMORY, "out of memory");
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st, st + x->nparam, st + 2 * x->nparam);
  st[x->nparam / 2] = NAN;
  if (!err)
    err = tsr_pinn_engine_set_state(x->eng, st, st + x->nparam, st + 2 * x->nparam, it);
  free(st);
  return err;
}

/* A signal or the wall time (solver/stop.h): *why set when training stops here, after the
 * checkpoint of iteration it is written (in Adam's phase; in L-BFGS's the one at Adam's end is
 * the latest) and the command that continues is printed. chunk_s: the last chunk's seconds. */
static tsr_err stop_here(tsr_pinn_ctx *x, tsr_stop *st, int64_t it, double chunk_s, int *why) {
  tsr_stop_margin(st, x->ckpt_s / (x->ckpt_count ? x->ckpt_count : 1), 0.5, chunk_s);
  TSR_CALL(tsr_stop_poll(st, 1, why));
  if (!*why) return TSR_OK;
  const tsr_case *c = x->c;
  int in_adam = it <= c->pinn.iterations;
  if (in_adam && x->opts.write_output) TSR_CALL(checkpoint(x, it));
  fprintf(stderr, "tessera: stopped by %s after iteration %lld of %lld: %s\n",
          tsr_stop_reason(*why), (long long)it, (long long)(c->pinn.iterations + c->pinn.lbfgs),
          !x->opts.write_output ? "no output is written in this run"
          : in_adam ? "the checkpoint 'latest' names holds it"
                    : "during L-BFGS, which a restart runs again from Adam's end (the checkpoint "
                      "'latest' names)");
  fprintf(stderr, "tessera: continue with the same launch and: tessera run %s", c->path);
  for (int i = 0; i < c->noverride; ++i) fprintf(stderr, " --set '%s'", c->overrides[i]);
  if (x->opts.out_dir) fprintf(stderr, " --out '%s'", x->opts.out_dir);
  fprintf(stderr, " --restart latest\n");
  return TSR_OK;
}

/* A history row (and its log line) at iteration it, when it is a log point or the last. */
static tsr_err log_point(tsr_pinn_ctx *x, double *row, int64_t it, int64_t total,
                         tsr_progress *pg, int *warned, int force) {
  if (it % x->c->pinn.log_every != 0 && it != total && !force) return TSR_OK;
  double te = MPI_Wtime();
  TSR_CALL(tsr_pinn_error(x, &row[H_ERROR]));
  x->eval_s += MPI_Wtime() - te;
  row[H_ITER] = (double)it;
  TSR_CALL(add_row(x, row));
  log_line(x, row, total, pg, (double)(it - x->it0) / (x->train_s + 1e-300));
  stall_warning(x, pg, warned);
  return TSR_OK;
}

/* pinn.lbfgs iterations after Adam's, from iteration it (Adam's last). */
static tsr_err lbfgs(tsr_pinn_ctx *x, int64_t *pit, int64_t total, tsr_progress *pg,
                     int *warned, tsr_stop *st, tsr_run_result *res) {
  const tsr_case *c = x->c;
  /* the points of iteration *pit's draw, as a restart from Adam's end has them; L-BFGS keeps
   * them (its line search needs one objective) */
  if (c->pinn.resample_every)
    TSR_CALL(set_draw(x, (uint64_t)(*pit / c->pinn.resample_every)));
  tsr_pinn_lbfgs *l = NULL;
  TSR_CALL(tsr_pinn_lbfgs_create(x->eng, x->nparam, c->pinn.lbfgs_history, x->batch.nterm, &l));
  double terms[TSR_PINN_MAX_TERMS], row[H_NCOL], step;
  tsr_err err = TSR_OK;
  int64_t it = *pit;
  while (it < total && !err) {
    int done = 0;
    double t0 = MPI_Wtime();
    err = tsr_pinn_lbfgs_step(l, terms, &step, &done);
    x->train_s += MPI_Wtime() - t0;
    if (err) break;
    if (done) {
      char line[160];
      snprintf(line, sizeof line, "L-BFGS: no step lowers the loss at iteration %lld; training "
               "ends there", (long long)it);
      tsr_progress_line(pg, line);
      break;
    }
    err = check_finite(x, terms, 1, it);
    if (err) break;
    ++it;
    row_of(x, terms, it - 1, row);
    row[H_LR] = step;
    res->loss = row[H_LOSS];
    tsr_progress_step(pg, it, row[H_LOSS], (double)(it - x->it0) / (x->train_s + 1e-300));
    err = log_point(x, row, it, total, pg, warned, 0);
    if (!err) err = stop_here(x, st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  if (!err && !res->stopped && it < total && x->nrow && x->hist[(size_t)(x->nrow - 1) * H_NCOL] != (double)it) {
    row_of(x, terms, it, row); /* the row of where it stopped */
    err = log_point(x, row, it, total, pg, warned, 1);
  }
  tsr_pinn_lbfgs_destroy(&l);
  *pit = it;
  return err;
}

static tsr_err loop(tsr_pinn_ctx *x, tsr_run_result *res) {
  const tsr_case *c = x->c;
  const int64_t adam = c->pinn.iterations, total = adam + c->pinn.lbfgs;
  TSR_CHECK(x->it0 <= adam, TSR_ERR_INPUT, "the checkpoint is at iteration %lld, past Adam's "
            "%lld iterations (pinn.adam.iterations); raise them to continue it",
            (long long)x->it0, (long long)adam);
  tsr_stop st;
  TSR_CALL(tsr_stop_begin(&st, MPI_COMM_SELF));
  tsr_progress pg;
  tsr_progress_init(&pg, x->opts.quiet ? 3 : (int)c->output.progress, stdout, total);
  pg.unit = "iteration";
  pg.per_s = "it/s";
  summary(x, &pg);
  int nt = x->batch.nterm, warned[TSR_PINN_NGROUP] = {0};
  double *rows = malloc((size_t)x->eo.hist_cap * nt * sizeof *rows);
  TSR_CHECK(rows, TSR_ERR_MEMORY, "out of memory for the loss history");
  tsr_err err = TSR_OK;
  double row[H_NCOL];
  int64_t it = x->it0;
  res->loss = NAN;
  while (it < adam && !err) {
    if (c->pinn.resample_every && it % c->pinn.resample_every == 0 && it > x->it0)
      err = set_draw(x, (uint64_t)(it / c->pinn.resample_every));
    int n = chunk(x, it, adam);
    double t0 = MPI_Wtime();
    if (!err) err = tsr_pinn_engine_run(x->eng, n, rows);
    x->train_s += MPI_Wtime() - t0;
    if (!err) err = check_finite(x, rows, n, it);
    if (err) break;
    it += n;
    row_of(x, rows + (size_t)(n - 1) * nt, it - 1, row);
    res->loss = row[H_LOSS];
    tsr_progress_step(&pg, it, row[H_LOSS], (double)(it - x->it0) / (x->train_s + 1e-300));
    err = log_point(x, row, it, total, &pg, warned, it == adam);
    int64_t ce = c->output.checkpoint_every.steps;
    /* at Adam's end too when L-BFGS follows: L-BFGS has no checkpoints of its own, and from
     * there it runs the same again */
    if (!err && ce && (it % ce == 0 || (it == adam && c->pinn.lbfgs)) && it < total &&
        x->opts.write_output)
      err = checkpoint(x, it);
    if (!err) err = inject_nan(x, it);
    if (!err) err = stop_here(x, &st, it, MPI_Wtime() - t0, &res->stopped);
    if (res->stopped) break;
  }
  if (!err && !res->stopped && it < total) err = lbfgs(x, &it, total, &pg, warned, &st, res);
  tsr_stop_end(&st);
  tsr_progress_finish(&pg);
  free(rows);
  res->steps = it;
  return err;
}

static tsr_err profile(tsr_pinn_ctx *x) {
  const char *env = getenv("TSR_PINN_PROFILE");
  x->prof_n = env ? atoi(env) : 0;
  if (x->prof_n <= 0) return TSR_OK;
  double *st = malloc(3 * x->nparam * sizeof *st);
  TSR_CHECK(st, TSR_ERR_MEMORY, "out of memory");
  int64_t it = x->c->pinn.iterations;
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st, st + x->nparam, st + 2 * x->nparam);
  if (!err) err = tsr_pinn_engine_profile(x->eng, x->prof_n, x->prof);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, st, st + x->nparam, st + 2 * x->nparam, it);
  free(st);
  return err;
}

tsr_err tsr_pinn_run(const tsr_case *c, MPI_Comm comm, const tsr_run_opts *opts,
                     tsr_run_result *res) {
  memset(res, 0, sizeof *res);
  res->pinn = 1;
  res->rel_l2 = NAN;
  int size;
  MPI_Comm_size(comm, &size);
  TSR_CHECK(size == 1, TSR_ERR_INPUT,
            "%s: method pinn trains on one rank in this version, and the run has %d; launch one "
            "rank (decomposed training across ranks is not in this version)", c->path, size);
  tsr_pinn_ctx x = {.c = c, .opts = opts ? *opts : tsr_run_opts_default()};
  x.out_dir = x.opts.out_dir ? x.opts.out_dir : c->output.dir;
  double t0 = MPI_Wtime();
  int created = 0;
  tsr_err err = TSR_OK;
  if (x.opts.write_output) err = tsr_run_prepare_outdir(comm, x.out_dir, &created);
  if (!err) err = setup(&x, comm);
  x.setup_s = MPI_Wtime() - t0;
  if (!err) err = loop(&x, res);
  res->wall = x.train_s;
  res->first_step = x.it0;
  if (!err && !res->stopped) err = profile(&x);
  if (!err) err = tsr_pinn_error(&x, &res->rel_l2);
  if (x.opts.write_output && x.nrow && (!err || x.eng)) {
    /* what was trained stays on disk, also when the loss blew up or a signal came */
    tsr_err e2 = err || res->stopped ? tsr_pinn_write_history(&x)
                                     : tsr_pinn_write_outputs(&x, res);
    if (!err) err = e2;
  }
  tsr_pinn_engine_destroy(&x.eng);
  tsr_pinn_batch_free(&x.batch);
  free(x.Xe);
  free(x.ue);
  free(x.hist);
  return err;
}
