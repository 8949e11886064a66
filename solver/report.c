/* report.json at the end of a run, and the plan `tessera check` prints. */
#include <stdio.h>
#include <string.h>

#include "decomp/rebalance.h"
#include "io/json.h"
#include "solver/threads.h"
#include "solver/graph.h"
#include "solver/implicit/implicit.h"
#include "solver/method.h"
#include "solver/pinn/pinn.h"
#include "solver/parareal/parareal.h"
#include "solver/run_internal.h"
#include "tsr_version.h"

static void json_box(tsr_json *j, const tsr_box *b, int dim) {
  tsr_json_object_begin(j, NULL);
  tsr_json_array_begin(j, "lo");
  for (int d = 0; d < dim; ++d) tsr_json_int(j, NULL, b->lo[d]);
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "hi");
  for (int d = 0; d < dim; ++d) tsr_json_int(j, NULL, b->hi[d]);
  tsr_json_array_end(j);
  tsr_json_int(j, "cells", tsr_box_cells(b));
  tsr_json_object_end(j);
}

tsr_err tsr_report_write(const tsr_run_ctx *x, const tsr_run_result *res, const double *pmax,
                         const double *pmean) {
  const tsr_case *c = x->c;
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/report.json", x->out_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  tsr_output_tmp_track(tmp);
  FILE *fp = fopen(tmp, "w");
  TSR_CHECK(fp, TSR_ERR_IO, "cannot write '%s'; check that the output directory is writable", tmp);
  tsr_json j;
  tsr_json_init(&j, fp);
  tsr_json_object_begin(&j, NULL);
  tsr_json_string(&j, "case", c->name);
  tsr_json_string(&j, "case_file", c->path);
  char hash[32];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)c->hash);
  tsr_json_string(&j, "case_hash", hash);
  tsr_json_string(&j, "tessera_version", TSR_VERSION);
  tsr_json_string(&j, "model", tsr_models[c->model].name);
  tsr_json_string(&j, "method", c->method == TSR_METHOD_IMPLICIT ? "implicit" : "explicit");
  tsr_json_string(&j, "backend", x->be->name);
  int64_t replays = 0;
  tsr_json_string(&j, "gpu_graphs", tsr_graph_mode(x->graph, &replays));
  tsr_json_int(&j, "gpu_graph_steps", replays);
  tsr_json_string(&j, "precision", c->precision == TSR_PRECISION_SINGLE ? "single" : "double");
  tsr_json_string(&j, "scheme", x->scheme_name ? x->scheme_name : x->scheme.name);
  tsr_json_int(&j, "fuse", x->fuse);
  tsr_json_int(&j, "ghost_width", x->ghost);
  tsr_run_fuse_auto_report(x, &j);
  tsr_run_tiles_report(x, &j);
  tsr_json_int(&j, "ranks", x->size);
  tsr_threads_report(&j);
  tsr_json_int(&j, "dim", c->dim);
  tsr_json_array_begin(&j, "cells");
  for (int d = 0; d < c->dim; ++d) tsr_json_int(&j, NULL, c->cells[d]);
  tsr_json_array_end(&j);
  tsr_json_array_begin(&j, "boxes");
  for (int b = 0; b < x->layout.nbox; ++b) json_box(&j, &x->layout.boxes[b], c->dim);
  tsr_json_array_end(&j);
  tsr_json_int(&j, "steps", res->steps);
  tsr_json_number(&j, "dt", res->dt);
  tsr_json_number(&j, "dt_stable", x->dt_stable);
  tsr_json_number(&j, "final_time", res->t_final);
  tsr_json_number(&j, "wall_time", res->wall);
  tsr_json_number(&j, "cells_per_second", res->cells_per_s);
  tsr_json_object_begin(&j, "phases_max_over_ranks");
  for (int p = 0; p < PH_COUNT; ++p) tsr_json_number(&j, tsr_run_phase_names[p], pmax[p]);
  tsr_json_object_end(&j);
  tsr_json_object_begin(&j, "phases_mean_over_ranks");
  for (int p = 0; p < PH_COUNT; ++p) tsr_json_number(&j, tsr_run_phase_names[p], pmean[p]);
  tsr_json_object_end(&j);
  if (res->ckpt_count) { /* the slowest rank's seconds (tsr_run_result) */
    tsr_json_object_begin(&j, "checkpoints");
    tsr_json_int(&j, "count", res->ckpt_count);
    tsr_json_bool(&j, "async", res->ckpt_async);
    tsr_json_number(&j, "stall", res->ckpt_stall);
    tsr_json_number(&j, "stall_max", res->ckpt_stall_max);
    tsr_json_number(&j, "wait_previous", res->ckpt_wait);
    tsr_json_number(&j, "staging_copy", res->ckpt_copy);
    tsr_json_number(&j, "write", res->ckpt_write);
    tsr_json_number(&j, "final_wait", res->ckpt_final_wait);
    tsr_json_number(&j, "staged_bytes_per_rank", res->ckpt_stage_bytes);
    tsr_json_number(&j, "file_field_bytes", res->ckpt_file_bytes);
    tsr_json_object_end(&j);
  }
  tsr_run_rebalance_report(x, &j);
  if (x->m && x->m->report) x->m->report(x, &j);
  tsr_json_object_begin(&j, "fields");
  for (int q = 0; q < c->ncomp; ++q) {
    tsr_json_object_begin(&j, tsr_models[c->model].comp[q]);
    tsr_json_number(&j, "min", res->min[q]);
    tsr_json_number(&j, "max", res->max[q]);
    tsr_json_number(&j, "l2", res->l2[q]);
    tsr_json_number(&j, "integral", res->sum[q]);
    if (c->exact[q].text) {
      tsr_json_number(&j, "error_l2", res->err_l2[q]);
      tsr_json_number(&j, "error_linf", res->err_linf[q]);
    }
    tsr_json_object_end(&j);
  }
  tsr_json_object_end(&j);
  tsr_json_object_end(&j);
  fputc('\n', fp);
  int bad = ferror(fp);
  bad |= fclose(fp) != 0;
  if (bad || rename(tmp, path) != 0) {
    remove(tmp);
    return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__, "cannot write '%s' (disk full?)", path);
  }
  return TSR_OK;
}

/* The plan's rebalance line, and the debug slowdown when one is asked for. */
static void print_rebalance(const tsr_case *c, int nranks, FILE *out) {
  if (c->method == TSR_METHOD_IMPLICIT)
    fprintf(out, "rebalance: off (method implicit)\n");
  else if (c->decomp.time_slices > 1)
    fprintf(out, "rebalance: off (parareal)\n");
  else if (tsr_rebalance_enabled(c->rebalance.enabled, nranks))
    fprintf(out, "rebalance: on, every %d steps over the last %d, threshold %.4g, CPU ranks "
            "timed by %s, fields reserve %.3g on GPUs\n", c->rebalance.every,
            c->rebalance.window, c->rebalance.threshold,
            c->rebalance.clock == TSR_CLOCK_CPU ? "their CPU time (clock cpu)" : "the wall clock",
            c->rebalance.reserve);
  else
    fprintf(out, "rebalance: off (%s)\n", c->rebalance.enabled == 0 ? "rebalance.enabled" :
            "one rank");
  if (c->debug.slowdown)
    fprintf(out, "debug.slowdown: rank %d computes %.4g times as long from step %ld to %ld "
            "(for tests and benchmarks)\n", c->debug.slowdown_rank, c->debug.slowdown_factor,
            c->debug.slowdown_steps[0], c->debug.slowdown_steps[1]);
}

tsr_err tsr_run_check(const tsr_case *c, int nranks, FILE *out) {
  if (c->method == TSR_METHOD_PINN) return tsr_pinn_check(c, nranks, out);
  if (c->method == TSR_METHOD_IMPLICIT) TSR_CALL(tsr_implicit_check(c));
  if (c->decomp.time_slices > 1) { /* the plan below is one time slice group's */
    TSR_CALL(tsr_parareal_plan(c, nranks, &nranks, out));
  }
  tsr_part_opts po = tsr_run_part_opts(c);
  TSR_CHECK(!c->decomp.nweights || c->decomp.nweights == nranks, TSR_ERR_INPUT,
            "%s: decomposition.weights: %d weights given for %d ranks%s; give one per rank",
            c->path, c->decomp.nweights, nranks,
            c->decomp.time_slices > 1 ? " of each time-slice group (which split the grid)" : "");
  TSR_CALL(tsr_case_check_ranks(c, nranks));
  tsr_layout L = {0};
  if (c->decomp.time_slices > 1) { /* parareal cuts the coarse grid and refines its boxes */
    const int r = c->parareal.coarsen;
    int coarse[3] = {c->cells[0], c->cells[1], c->cells[2]};
    for (int d = 0; d < c->dim; ++d) coarse[d] /= r;
    TSR_CALL(tsr_partition(c->dim, coarse, c->periodic, nranks, &po, &L));
    for (int d = 0; d < c->dim; ++d) {
      L.global.hi[d] *= r;
      for (int b = 0; b < L.nbox; ++b) L.boxes[b].lo[d] *= r, L.boxes[b].hi[d] *= r;
    }
  } else {
    TSR_CALL(tsr_partition(c->dim, c->cells, c->periodic, nranks, &po, &L));
  }
  tsr_scheme_plan sp = tsr_integrate_plan(c->time.scheme);
  double dt, dts;
  int64_t nsteps;
  tsr_err err = tsr_integrate_time_plan(c, &dt, &nsteps, &dts);
  if (err) {
    tsr_layout_free(&L);
    return err;
  }
  const char *pn[] = {"rcb", "slabs", "grid"};
  fprintf(out, "case %s (%s): model %s, %dD grid", c->name, c->path, tsr_models[c->model].name,
          c->dim);
  for (int d = 0; d < c->dim; ++d) fprintf(out, "%s%d", d ? " x " : " ", c->cells[d]);
  fprintf(out, ", %s, %lld steps of dt %.6g (stable limit %.6g), %d ranks, partition %s\n",
          c->method == TSR_METHOD_IMPLICIT ? tsr_implicit_scheme_name(c->implicit.scheme)
                                           : sp.name,
          (long long)nsteps, dt, dts, nranks, pn[po.kind]);
  const int autof = c->time.fuse == TSR_FUSE_AUTO && tsr_run_ghost_width(c) > po.min_width;
  /* auto: the table shows fuse 1, where it starts */
  const int ghost = autof ? po.min_width : tsr_run_ghost_width(c);
  /* exchanges per step: one per stage, or one per time.fuse steps */
  const double per_step = ghost > po.min_width ? 1.0 / c->time.fuse : (double)sp.nstage;
  if (autof) {
    int smax = tsr_run_fuse_auto_max(c, &L);
    if (smax > 1)
      fprintf(out, "time.fuse: auto: the run's first steps measure fuse 1 to %d (powers of 2) "
              "and it goes on with the fastest\n", smax);
    else
      fprintf(out, "time.fuse: auto: %s\n", smax ? "1 (the boxes are too thin for fuse 2)" :
              "no face of any box is exchanged: where time tiles apply, the first steps "
              "measure the odd fuses up to the longest pass, else 1");
  }
  if (ghost > po.min_width) {
    fprintf(out, "time.fuse: %d steps per halo exchange, ghosts %d cells deep\n", c->time.fuse,
            ghost);
    err = tsr_run_check_fuse(c, &L);
    if (err) {
      tsr_layout_free(&L);
      return err;
    }
  }
  int nfield = 3 + sp.uses_acc;
  int has_src = 0;
  for (int q = 0; q < c->ncomp; ++q) has_src |= c->source[q].text != NULL;
  nfield += has_src;
  /* parareal's states of a rank's m slices: their starts and the group's end, F and G of each,
   * the copy of the starts an iteration may drop back to, two scratch fields
   * (solver/parareal/setup.c); the coarse grid's and the transfer buffers are small beside them */
  if (c->decomp.time_slices > 1) nfield += 4 * c->parareal.slices_per_rank + 4;
  const int esize = c->precision == TSR_PRECISION_SINGLE ? 4 : 8;
  int64_t total = tsr_box_cells(&L.global), maxc = 0;
  fprintf(out, "%5s  %-28s %12s  %-24s %14s %12s\n", "rank", "box [lo, hi)", "cells",
          "neighbours", "halo B/step", "memory");
  tsr_halo_index *hx = NULL;
  err = tsr_halo_index_create(&L, ghost, &hx);
  for (int r = 0; r < nranks && !err; ++r) {
    tsr_halo_plan hp = {0};
    err = tsr_halo_index_plan(hx, r, &hp);
    if (err) break;
    const tsr_box *b = &hp.owned;
    char bs[64], nb[256] = "";
    if (c->dim == 2)
      snprintf(bs, sizeof bs, "[%d,%d)x[%d,%d)", b->lo[0], b->hi[0], b->lo[1], b->hi[1]);
    else
      snprintf(bs, sizeof bs, "[%d,%d)x[%d,%d)x[%d,%d)", b->lo[0], b->hi[0], b->lo[1], b->hi[1],
               b->lo[2], b->hi[2]);
    size_t w = 0;
    for (int p = 0; p < hp.npeer && w < sizeof nb; ++p)
      w += (size_t)snprintf(nb + w, sizeof nb - w, "%s%d", p ? "," : "", hp.peers[p].peer);
    if (!hp.npeer) snprintf(nb, sizeof nb, "-");
    int64_t halo =
        (int64_t)((double)tsr_halo_bytes_sent(&hp, c->ncomp, esize) * per_step);
    tsr_box g = tsr_box_grow(b, c->dim, ghost);
    double mem = (double)tsr_box_cells(&g) * c->ncomp * esize * nfield +
                 2.0 * (double)tsr_halo_bytes_sent(&hp, c->ncomp, esize);
    fprintf(out, "%5d  %-28s %12lld  %-24s %14lld %9.1f MiB\n", r, bs,
            (long long)tsr_box_cells(b), nb, (long long)halo, mem / 1048576.0);
    if (tsr_box_cells(b) > maxc) maxc = tsr_box_cells(b);
    tsr_halo_plan_free(&hp);
  }
  tsr_halo_index_free(&hx);
  if (!err)
    fprintf(out, "imbalance (max/mean cells): %.4f\n", (double)maxc * nranks / (double)total);
  if (!err) print_rebalance(c, nranks, out);
  tsr_layout_free(&L);
  return err;
}
