/* Whether a checkpoint may continue this run's case: same grid always; the same case unless
 * --restart-force, and the same model even then; a later end (time.end, time.steps) and keys
 * that do not change the solution are the same case (solver/run_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/run_internal.h"

/* At most this many differing keys in a message (its buffer is a few KiB). */
#define MAX_LISTED 24

static void grid_text(char *buf, size_t n, int dim, const int *cells) {
  if (dim == 3) snprintf(buf, n, "%dx%dx%d", cells[0], cells[1], cells[2]);
  else snprintf(buf, n, "%dx%d", cells[0], cells[1]);
}

/* The checkpoint's case against this one, once their hashes differ. Every rank reads and
 * compares the same text, so every rank decides alike. */
static tsr_err compare_cases(tsr_run_ctx *x, const tsr_checkpoint_info *info, const char *mine) {
  char *text = NULL;
  TSR_CALL(tsr_checkpoint_case_text(x->comm, info->path, &text));
  tsr_case *old = NULL;
  char name[4200];
  snprintf(name, sizeof name, "%s (its case_text)", info->path);
  tsr_err perr = tsr_case_load_record(name, text, &old);
  free(text);
  if (perr == TSR_ERR_MEMORY) return perr;
  int force = x->opts.restart_force;
  if (perr) { /* a case of another version, say: no list to give */
    char why[4096];
    snprintf(why, sizeof why, "%s", tsr_err_message());
    if (!force)
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "checkpoint %s was written by a different case (hash %s, this case %s), "
                         "and the case it records does not read here, so the keys that differ "
                         "cannot be listed:\n%s\npass --restart-force to continue anyway",
                         info->path, info->case_hash, mine, why);
    if (x->rank == 0) {
      fprintf(stderr, "tessera: warning: --restart-force: continuing from %s, written by a "
              "different case (hash %s, this case %s) whose text does not read here\n",
              info->path, info->case_hash, mine);
      fflush(stderr);
    }
    return TSR_OK;
  }
  tsr_case_changes d;
  tsr_err err = tsr_case_diff(old, x->c, &d);
  tsr_case_destroy(&old);
  TSR_CALL(err);
  if (d.nfatal) {
    tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                "checkpoint %s holds the state of another model, which cannot continue as this "
                "case's, --restart-force or not:",
                info->path);
    tsr_case_changes_append(&d, "checkpoint", "this case", MAX_LISTED);
    err = TSR_ERR_INPUT;
  } else if (!force && d.n > d.nstop) {
    tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                "checkpoint %s was written by a different case; these keys differ:", info->path);
    tsr_case_changes_append(&d, "checkpoint", "this case", MAX_LISTED);
    tsr_err_append("pass --restart-force to continue anyway, or restart with the case file and "
                   "--set options that wrote it");
    err = TSR_ERR_INPUT;
  } else if (d.n == d.nstop) {
    /* the same solution: a later end (a run continued), or edits of keys that say how and
     * where it runs (comments, name, output.*, decomposition.*) */
    x->restart_same = 1;
    if (x->rank == 0) {
      if (d.n == 0)
        printf("restart: the case text differs from the checkpoint's, but no key that "
               "determines the solution does\n");
      for (int i = 0; i < d.n; ++i)
        printf("restart: continuing with %s = %s (the checkpoint's run had %s)\n",
               d.item[i].key, d.item[i].b, d.item[i].a);
      fflush(stdout);
    }
  } else if (x->rank == 0) {
    fprintf(stderr, "tessera: warning: --restart-force: continuing from %s, written by a "
            "different case%s\n", info->path, d.n ? "; these keys differ:" : " (no key that "
            "determines the solution differs)");
    for (int i = 0; i < d.n; ++i)
      fprintf(stderr, "  %s: checkpoint %s, this case %s\n", d.item[i].key, d.item[i].a,
              d.item[i].b);
    fflush(stderr);
  }
  tsr_case_changes_free(&d);
  return err;
}

tsr_err tsr_run_restart_accept(const tsr_checkpoint_info *info, void *arg) {
  tsr_run_ctx *x = arg;
  const tsr_case *c = x->c;
  int same = info->dim == c->dim;
  for (int d = 0; d < c->dim && same; ++d) same = info->cells[d] == c->cells[d];
  if (!same) {
    char theirs[64], ours[64];
    grid_text(theirs, sizeof theirs, info->dim, info->cells);
    grid_text(ours, sizeof ours, c->dim, c->cells);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "checkpoint %s holds a %dD grid of %s cells and this case has %dD %s "
                       "(grid.cells); a checkpoint continues only on the grid it was written on, "
                       "--restart-force or not",
                       info->path, info->dim, theirs, c->dim, ours);
  }
  /* a checkpoint of method implicit (it records implicit_scheme) continues only as method
   * implicit, and one of the explicit method not as implicit, --restart-force or not */
  if (c->method != TSR_METHOD_PINN) {
    char scheme[64] = "";
    int impl = tsr_output_read_attr(x->comm, info->path, "implicit_scheme", scheme,
                                    sizeof scheme, NULL) == TSR_OK;
    tsr_err_clear();
    if (impl != (c->method == TSR_METHOD_IMPLICIT))
      return tsr_err_set(
          TSR_ERR_INPUT, __FILE__, __LINE__,
          "checkpoint %s was written by method %s%s%s and this case's method is %s: a "
          "checkpoint continues only with the method that wrote it, --restart-force or not "
          "(an implicit one holds BDF's history and a step far beyond the explicit method's "
          "stability limit); restart with method: %s, or run this case from the start",
          info->path, impl ? "implicit (scheme " : "explicit", impl ? scheme : "",
          impl ? ")" : "", impl ? "explicit" : "implicit", impl ? "implicit" : "explicit");
  }
  char mine[17];
  snprintf(mine, sizeof mine, "%016" PRIx64, tsr_case_restart_hash(c));
  x->restart_same = 0;
  if (strcmp(info->case_hash, mine) == 0) {
    x->restart_same = 1;
    return TSR_OK;
  }
  return tsr_run_agree(x->comm, compare_cases(x, info, mine));
}

tsr_err tsr_run_restart_within(const tsr_run_ctx *x, const tsr_checkpoint_info *info) {
  TSR_CHECK(info->step >= 0 && info->step <= x->nsteps, TSR_ERR_INPUT,
            "checkpoint %s is at step %lld (t = %.9g), past this run's %lld steps: give the run "
            "a later end (--set time.end=T or time.steps=N) or restart from an earlier "
            "checkpoint (--restart FILE)", info->path, (long long)info->step, info->time,
            (long long)x->nsteps);
  return TSR_OK;
}

tsr_err tsr_run_refuse_earlier(MPI_Comm comm, const char *dir) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  char latest[256] = "", newest[64] = "";
  if (rank == 0) {
    char name[1][64];
    int named = 0;
    tsr_checkpoint_get_latest(dir, latest, sizeof latest);
    if (tsr_checkpoint_candidates(dir, name, 1, &named) > 0)
      snprintf(newest, sizeof newest, "%s", name[0]);
  }
  MPI_Bcast(latest, (int)sizeof latest, MPI_CHAR, 0, comm);
  MPI_Bcast(newest, (int)sizeof newest, MPI_CHAR, 0, comm);
  if (!latest[0] && !newest[0]) return TSR_OK;
  char what[400];
  if (latest[0] && (!newest[0] || strcmp(latest, newest) == 0))
    snprintf(what, sizeof what, "latest names %s", latest);
  else if (latest[0])
    snprintf(what, sizeof what, "latest names %s; the newest step is %s", latest, newest);
  else snprintf(what, sizeof what, "the newest is %s", newest);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "output directory '%s' holds the checkpoints of an earlier run (%s): a run "
                     "started over there would replace latest and mix its checkpoints with "
                     "those (output.keep would count theirs); continue that run with --restart "
                     "latest, start this one in another directory (--out DIR), or remove them "
                     "first (rm %s/latest %s/%s_*.h5)",
                     dir, what, dir, dir,
                     strncmp(latest, "parareal_", 9) == 0 ? "parareal" : "checkpoint");
}
