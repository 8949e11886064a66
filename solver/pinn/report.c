/* What a PINN run writes: the network sampled on the grid (final.h5, snapshots, XDMF), the
 * training history (history.csv) and report.json; and `tessera check`'s plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/output.h"
#include "solver/pinn/pinn.h"
#include "solver/pinn/train.h"
#include "solver/run.h"
#include "solver/threads.h"
#include "tsr_version.h"

/* Closes fp, written at tmp, and renames it to path: the file is whole or absent. */
static tsr_err commit(FILE *fp, const char *tmp, const char *path) {
  int bad = ferror(fp);
  if (fclose(fp) != 0 || bad) {
    remove(tmp);
    return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__, "cannot write '%s' (disk full?)", path);
  }
  TSR_CHECK(rename(tmp, path) == 0, TSR_ERR_IO, "cannot rename '%s' to '%s'", tmp, path);
  return TSR_OK;
}

/* The grid as files hold it: a 1-D case as a 2-D grid one cell high, which ParaView shows. */
static tsr_grid_meta meta_of(const tsr_case *c, double t, int64_t it) {
  tsr_grid_meta m = {.dim = c->dim < 2 ? 2 : c->dim, .time = t, .step = it,
                     .single = c->precision == TSR_PRECISION_SINGLE};
  for (int a = 0; a < 3; ++a) {
    m.cells[a] = c->cells[a];
    m.lo[a] = c->lo[a];
    m.hi[a] = c->hi[a];
  }
  return m;
}

/* The networks at the grid's cell centres at time t into a fields file: each rank samples its
 * own network over its own box, and the ranks write their boxes through the output module.
 * Collective. */
static tsr_err sample(tsr_pinn_ctx *x, const char *path, double t, int64_t it) {
  const tsr_case *c = x->c;
  double *X = NULL, *u = NULL, *f = NULL;
  int64_t n = 0;
  /* time slabs: the cells at t are the slab's holding t (the last holds end); the other
   * ranks write nothing */
  int mine = x->nslab < 2 || tsr_pinn_slab_of(c, x->nslab, t) == x->sub.slab;
  tsr_err err = mine ? tsr_pinn_grid_points(c, x->psub, t, &X, &n) : TSR_OK;
  int nc = c->ncomp, cap = x->eo.eval_cap;
  if (!err) {
    u = malloc((size_t)(n ? n : 1) * nc * sizeof *u);
    f = malloc((size_t)(n ? n : 1) * nc * sizeof *f);
    if (!u || !f)
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory sampling the network");
  }
  for (int64_t p0 = 0; p0 < n && !err; p0 += cap) {
    int m = (int)(n - p0 < cap ? n - p0 : cap);
    err = tsr_pinn_engine_eval(x->eng, X + (size_t)x->batch.nin * p0, m, u + p0 * nc);
  }
  /* components interleaved at the points -> one array per component */
  for (int64_t p = 0; p < n && !err; ++p)
    for (int k = 0; k < nc; ++k) f[k * n + p] = u[p * nc + k];
  const double *data[TSR_MAX_COMP];
  for (int k = 0; k < nc; ++k) data[k] = f ? f + k * n : NULL;
  tsr_grid_meta meta = meta_of(c, t, it);
  tsr_box owned = x->psub ? x->batch.box : tsr_box_make(meta.dim, meta.cells);
  if (!mine) owned.hi[0] = owned.lo[0]; /* empty */
  tsr_output_opts oo = {.force_serial = 1};
  err = tsr_run_agree(x->comm, err);
  if (!err)
    err = tsr_output_write_fields(x->comm, path, &meta, &owned, nc, tsr_models[c->model].comp,
                                  data, &oo);
  free(X);
  free(u);
  free(f);
  return err;
}

static tsr_err snapshots(tsr_pinn_ctx *x, int64_t it) {
  const tsr_case *c = x->c;
  double T = c->output.snapshot_every.time, end = c->time.end;
  if (!(T > 0.0) || tsr_models[c->model].steady) return TSR_OK;
  int n = (int)floor(end / T + 1e-9) + 1;
  int last_extra = fabs((n - 1) * T - end) > 1e-12 * end;
  int total = n + last_extra;
  tsr_xdmf_step *steps = calloc((size_t)total, sizeof *steps);
  char(*names)[64] = calloc((size_t)total, sizeof *names);
  tsr_err err = steps && names ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                                      "out of memory for snapshots");
  for (int k = 0; k < total && !err; ++k) {
    double t = k < n ? k * T : end;
    snprintf(names[k], sizeof names[k], "snapshot_%08d.h5", k);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", x->out_dir, names[k]);
    err = sample(x, path, t, it);
    steps[k] = (tsr_xdmf_step){.h5_name = names[k], .time = t, .step = k,
                               .precision = c->precision == TSR_PRECISION_SINGLE ? 4 : 8};
  }
  if (!err && x->rank == 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/snapshots.xmf", x->out_dir);
    tsr_grid_meta meta = meta_of(c, 0.0, it);
    err = tsr_output_write_xdmf_series(path, &meta, total, steps, c->ncomp,
                                       tsr_models[c->model].comp);
  }
  err = tsr_run_agree(x->comm, err);
  free(steps);
  free(names);
  return err;
}

tsr_err tsr_pinn_write_history(const tsr_pinn_ctx *x) {
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/history.csv", x->out_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  TSR_CHECK(fp, TSR_ERR_IO, "cannot write '%s'; check that the output directory is writable",
            tmp);
  for (int k = 0; k < H_NCOL; ++k) fprintf(fp, "%s%s", k ? "," : "", tsr_pinn_hist_names[k]);
  fputc('\n', fp);
  for (int i = 0; i < x->nrow; ++i) {
    const double *r = x->hist + (size_t)i * H_NCOL;
    fprintf(fp, "%lld", (long long)r[H_ITER]);
    for (int k = 1; k < H_NCOL; ++k) {
      if (isnan(r[k])) fprintf(fp, ",");
      else fprintf(fp, ",%.9g", r[k]);
    }
    fputc('\n', fp);
  }
  return commit(fp, tmp, path);
}

static void report_body(const tsr_pinn_ctx *x, const tsr_run_result *res, tsr_json *j) {
  const tsr_case *c = x->c;
  tsr_json_string(j, "case", c->name);
  tsr_json_string(j, "case_file", c->path);
  tsr_json_string(j, "tessera_version", TSR_VERSION);
  tsr_json_string(j, "model", tsr_models[c->model].name);
  tsr_json_string(j, "method", "pinn");
  tsr_json_string(j, "backend", x->device ? "cuda" : "host");
  tsr_json_string(j, "precision", x->eo.single ? "single" : "double");
  tsr_json_int(j, "ranks", x->size);
  tsr_threads_report(j);
  tsr_json_object_begin(j, "network");
  tsr_json_int(j, "inputs", x->shape.nin);
  tsr_json_int(j, "outputs", x->shape.nout);
  tsr_json_int(j, "width", x->shape.width);
  tsr_json_int(j, "depth", x->shape.depth);
  tsr_json_string(j, "activation", x->shape.act == TSR_NET_SIN ? "sin" : "tanh");
  tsr_json_int(j, "parameters", (int64_t)x->nparam);
  tsr_json_string(j, "path", tsr_pinn_engine_net_path(x->eng));
  tsr_json_object_end(j);
  tsr_json_array_begin(j, "terms");
  for (int k = 0; k < x->batch.nterm; ++k) {
    tsr_json_object_begin(j, NULL);
    tsr_json_string(j, "name", x->batch.name[k]);
    tsr_json_string(j, "group", tsr_pinn_group_names[x->batch.group[k]]);
    tsr_json_int(j, "points", x->batch.term[k].count);
    tsr_json_number(j, "weight", x->batch.term[k].weight);
    tsr_json_object_end(j);
  }
  tsr_json_array_end(j);
  tsr_json_int(j, "iterations", res->steps);
  tsr_json_int(j, "start_iteration", x->it0);
  tsr_json_number(j, "train_seconds", x->run_s);
  tsr_json_number(j, "iterations_per_second",
                  x->run_s > 0.0 ? (double)(res->steps - x->it0) / x->run_s : 0.0);
  if (x->device) {
    int64_t replays = 0;
    tsr_json_string(j, "gpu_graphs", tsr_pinn_engine_graph_mode(x->eng, &replays));
    tsr_json_int(j, "gpu_graph_iterations", replays);
    /* more ranks than GPUs on a node: ranks share GPUs, the exchange over MPI */
    tsr_json_int(j, "ranks_per_gpu", x->shared ? x->per_gpu : 1);
  }
  tsr_json_number(j, "setup_seconds", x->setup_s);
  tsr_json_number(j, "error_eval_seconds", x->eval_s);
  tsr_json_number(j, "checkpoint_seconds", x->ckpt_s);
  tsr_json_int(j, "checkpoints", x->ckpt_count);
  if (x->prof_n > 0) {
    static const char *const names[4] = {"forward", "loss", "backward", "adam"};
    tsr_json_object_begin(j, "breakdown");
    tsr_json_int(j, "iterations", x->prof_n);
    for (int k = 0; k < 4; ++k) tsr_json_number(j, names[k], x->prof[k] / x->prof_n);
    if (x->xch) {
      /* each timed alone: the interface points' forward pass and values, and the exchange
       * posted to completed (in an iteration of the run it overlaps the batch's forward pass) */
      tsr_json_number(j, "interface_values", x->prof[4] / x->prof_n);
      tsr_json_number(j, "exchange", x->prof[5] / x->prof_n);
    }
    double f = tsr_pinn_engine_gemm_flops(x->eng);
    tsr_json_number(j, "gemm_flops", f);
    tsr_json_number(j, "gemm_flop_rate_forward_backward",
                    f * x->prof_n / (x->prof[0] + x->prof[2]));
    tsr_json_object_end(j);
  }
  tsr_json_number(j, "loss", res->loss);
  tsr_json_number(j, "rel_l2_error", res->rel_l2);
  if (x->size > 1 && x->subs) {
    static const char *const parts[] = {"rcb", "slabs", "grid"};
    tsr_json_string(j, "partition", parts[c->decomp.partition]);
    tsr_json_string(j, "interface_points", c->pinn.iface ? "random" : "cells");
    tsr_json_object_begin(j, "interface_weights");
    tsr_json_number(j, "value", c->pinn.w_iface[0]);
    tsr_json_number(j, "flux", c->pinn.w_iface[1]);
    tsr_json_number(j, "residual", c->pinn.w_iface[2]);
    tsr_json_object_end(j);
    double mm = 0.0;
    for (int r = 0; r < x->size; ++r) mm = fmax(mm, x->subs[r].mismatch);
    tsr_json_number(j, "interface_mismatch", mm);
    tsr_json_int(j, "time_slices", x->nslab);
    if (x->nslab > 1) {
      tsr_json_string(j, "slabs", x->causal ? "causal" : "all");
      tsr_json_int(j, "slab_iterations", c->pinn.iterations);
      if (x->causal) tsr_json_int(j, "slab_lbfgs_iterations", c->pinn.lbfgs);
    }
    /* each rank's network at the last iteration: its box, its terms, its mismatch */
    tsr_json_array_begin(j, "subdomains");
    for (int r = 0; r < x->size; ++r) {
      const tsr_pinn_subdomain *q = &x->subs[r];
      tsr_json_object_begin(j, NULL);
      tsr_json_int(j, "rank", r);
      tsr_json_int(j, "slab", q->slab);
      tsr_json_number(j, "t0", q->t0);
      tsr_json_number(j, "t1", q->t1);
      tsr_json_array_begin(j, "box_lo");
      for (int a = 0; a < c->dim; ++a) tsr_json_int(j, NULL, q->box[a]);
      tsr_json_array_end(j);
      tsr_json_array_begin(j, "box_hi");
      for (int a = 0; a < c->dim; ++a) tsr_json_int(j, NULL, q->box[3 + a]);
      tsr_json_array_end(j);
      tsr_json_int(j, "points", q->npts);
      double sum = 0.0;
      for (int k = 0; k < q->nterm; ++k) sum += q->loss[k];
      tsr_json_number(j, "loss", sum);
      tsr_json_array_begin(j, "terms");
      for (int k = 0; k < q->nterm; ++k) {
        tsr_json_object_begin(j, NULL);
        tsr_json_string(j, "name", q->name[k]);
        tsr_json_int(j, "points", q->count[k]);
        tsr_json_number(j, "loss", q->loss[k]);
        tsr_json_object_end(j);
      }
      tsr_json_array_end(j);
      tsr_json_number(j, "interface_mismatch", q->mismatch);
      tsr_json_object_end(j);
    }
    tsr_json_array_end(j);
  }
  tsr_json_array_begin(j, "history_columns");
  for (int k = 0; k < H_NCOL; ++k) tsr_json_string(j, NULL, tsr_pinn_hist_names[k]);
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "history");
  for (int i = 0; i < x->nrow; ++i) {
    tsr_json_array_begin(j, NULL);
    for (int k = 0; k < H_NCOL; ++k) tsr_json_number(j, NULL, x->hist[(size_t)i * H_NCOL + k]);
    tsr_json_array_end(j);
  }
  tsr_json_array_end(j);
}

static tsr_err write_report(const tsr_pinn_ctx *x, const tsr_run_result *res) {
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/report.json", x->out_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  TSR_CHECK(fp, TSR_ERR_IO, "cannot write '%s'; check that the output directory is writable",
            tmp);
  tsr_json j;
  tsr_json_init(&j, fp);
  tsr_json_object_begin(&j, NULL);
  report_body(x, res, &j);
  tsr_json_object_end(&j);
  fputc('\n', fp);
  return commit(fp, tmp, path);
}

tsr_err tsr_pinn_write_outputs(tsr_pinn_ctx *x, const tsr_run_result *res) {
  double t0 = MPI_Wtime();
  const tsr_case *c = x->c;
  double end = tsr_models[c->model].steady ? 0.0 : c->time.end;
  char path[4200];
  snprintf(path, sizeof path, "%s/final.h5", x->out_dir);
  TSR_CALL(sample(x, path, end, res->steps));
  tsr_err err = TSR_OK;
  if (x->rank == 0) {
    snprintf(path, sizeof path, "%s/final.xmf", x->out_dir);
    tsr_grid_meta meta = meta_of(c, end, res->steps);
    err = tsr_output_write_xdmf(path, "final.h5", &meta, c->ncomp, tsr_models[c->model].comp);
  }
  TSR_CALL(tsr_run_agree(x->comm, err));
  TSR_CALL(snapshots(x, res->steps));
  err = x->rank == 0 ? tsr_pinn_write_history(x) : TSR_OK;
  x->output_s = MPI_Wtime() - t0;
  if (!err && x->rank == 0) err = write_report(x, res);
  return tsr_run_agree(x->comm, err);
}

tsr_err tsr_pinn_check(const tsr_case *c, int nranks, FILE *out) {
  tsr_layout L = {0};
  tsr_pinn_sub sub = {.layout = &L, .box = 0};
  const tsr_pinn_sub *ps = nranks > 1 ? &sub : NULL;
  int nslab = c->decomp.time_slices > 1 ? c->decomp.time_slices : 1;
  TSR_CHECK(nranks % nslab == 0, TSR_ERR_INPUT, "%s: decomposition.time_slices: %d time slabs "
            "need a rank count that is a multiple of %d (space x time subdomains, slab-major); "
            "check with --ranks %d, %d, ...", c->path, nslab, nslab, nslab, 2 * nslab);
  int nsp = nranks / nslab;
  if (nranks > 1) TSR_CALL(tsr_pinn_partition(c, nsp, &L));
  if (nslab > 1) sub.nslab = nslab, sub.causal = c->pinn.causal;
  int nterm, nin, nif;
  double sc[4], sh[4];
  tsr_pinn_shape(c, ps, &nin, sc, sh);
  int npts = tsr_pinn_batch_size(c, ps, &nterm, &nif);
  tsr_err err = tsr_pinn_batch_fits(c, npts, nif);
  for (int r = 0; !err && nranks > 1 && r < nranks; ++r) { /* every rank's, before a line */
    sub.box = tsr_layout_box_of(&L, r % nsp);
    if (nslab > 1) sub.slab = r / nsp, sub.rank0 = sub.slab * nsp;
    int n = tsr_pinn_batch_size(c, &sub, NULL, &nif);
    err = tsr_pinn_batch_fits(c, n, nif);
  }
  if (err) {
    tsr_layout_free(&L);
    return err;
  }
  tsr_net_shape s = {.nin = nin, .nout = c->ncomp, .width = c->pinn.width,
                     .depth = c->pinn.depth, .nd1 = nin, .nd2 = c->dim, .lap = 1};
  tsr_net_opts no = {.shape = s, .single = c->precision == TSR_PRECISION_SINGLE, .npts = npts};
  fprintf(out, "case %s: model %s, method pinn, %dD%s, %s precision\n", c->name,
          tsr_models[c->model].name, c->dim, tsr_models[c->model].steady ? " (steady)" : " + t",
          no.single ? "single" : "double");
  fprintf(out, "network: %d inputs, %d hidden layers of %d (%s), %d output%s: %zu parameters%s\n",
          nin, s.depth, s.width, c->pinn.act == TSR_PINN_SIN ? "sin" : "tanh", s.nout,
          s.nout == 1 ? "" : "s", tsr_net_nparam(&s), nranks > 1 ? " per rank" : "");
  fprintf(out, "points: %d in %d loss terms (interior %s), %d channels each%s\n", npts, nterm,
          c->pinn.interior ? "random" : "the cell centres", tsr_net_channels(&s),
          nranks > 1 ? " (rank 0)" : "");
  for (int r = 0; nranks > 1 && r < nranks; ++r) {
    sub.box = tsr_layout_box_of(&L, r % nsp);
    if (nslab > 1) sub.slab = r / nsp, sub.rank0 = sub.slab * nsp;
    const tsr_box *b = &L.boxes[sub.box];
    int n = tsr_pinn_batch_size(c, &sub, NULL, &nif);
    if (r < 16 || r == nranks - 1) {
      char sl[64] = "";
      double t0, t1;
      tsr_pinn_slab_span(c, &sub, &t0, &t1);
      if (nslab > 1) snprintf(sl, sizeof sl, ", slab %d: t in [%g, %g]", sub.slab, t0, t1);
      fprintf(out, "rank %d: cells [%d, %d) x [%d, %d) x [%d, %d)%s, %d points, %d on "
              "interfaces\n", r, b->lo[0], b->hi[0], b->lo[1], b->hi[1], b->lo[2], b->hi[2],
              sl, n, nif);
    } else if (r == 16) {
      fprintf(out, "...\n");
    }
  }
  fprintf(out, "training: %ld Adam iterations, lr %g x %g^(it/%ld)", c->pinn.iterations,
          c->pinn.lr, c->pinn.decay, c->pinn.decay_every);
  if (c->pinn.lbfgs > 0)
    fprintf(out, ", then %ld L-BFGS iterations (history %d%s)", c->pinn.lbfgs,
            c->pinn.lbfgs_history,
            nranks > 1 ? "; each rank its own, the interface values exchanged once an iteration "
                         "and frozen in its line search" : "");
  if (nslab > 1)
    fprintf(out, "; %d time slabs, %s", nslab,
            c->pinn.causal ? "causal: each slab's iterations (Adam's, then L-BFGS's) in turn, "
                             "from the slab before's values at its face and weights"
                           : "all at once, the slab faces exchanged every iteration");
  fputc('\n', out);
  fprintf(out, "memory: %.1f MiB for the network's workspace%s\n",
          (double)tsr_net_workspace_bytes(&no) / 1048576.0, nranks > 1 ? " (rank 0)" : "");
  tsr_layout_free(&L);
  return TSR_OK;
}
