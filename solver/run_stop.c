/* The step loop's side of stopping early (solver/stop.h): when to stop, and the checkpoint
 * and message of the stop (solver/run_internal.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "solver/ckpt_writer.h"
#include "solver/run_internal.h"
#include "solver/watchdog.h"


tsr_err tsr_run_stop_poll(tsr_run_ctx *x, int now, int *why) {
  if (x->stop.comm == MPI_COMM_NULL) {
    TSR_CALL(tsr_run_agree(x->comm, tsr_stop_begin(&x->stop, x->comm)));
    x->stop_last = MPI_Wtime();
  }
  double t = MPI_Wtime();
  if (!now && t - x->stop_last > x->stop_gap) x->stop_gap = t - x->stop_last;
  x->stop_last = t;
  if (x->rank == 0) {
    double bytes = (double)tsr_box_cells(&x->layout.global) * x->c->ncomp *
                   (x->c->precision == TSR_PRECISION_SINGLE ? 4.0 : 8.0);
    tsr_stop_margin(&x->stop, tsr_ckpt_writer_longest(x->ckpt), bytes,
                    x->stop_gap);
  }
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err err = tsr_stop_poll(&x->stop, now, why);
  tsr_watchdog_waiting(0);
  return err;
}

tsr_err tsr_run_stop_checkpoint(tsr_run_ctx *x, int64_t step, double t, int why) {
  double t0 = MPI_Wtime();
  if (!x->ckpt) TSR_CALL(tsr_ckpt_writer_create(x, &x->ckpt));
  /* the write is waited for: the process is about to end, and latest must name it first */
  if (x->ckpt_step != step || step == 0) {
    TSR_CALL(tsr_ckpt_writer_save(x->ckpt, x, step, t));
    x->ckpt_step = step;
  }
  TSR_CALL(tsr_ckpt_writer_wait(x->ckpt));
  tsr_watchdog_beat(step);
  if (x->rank != 0) return TSR_OK;
  char of[32];
  snprintf(of, sizeof of, " of %" PRId64, x->nsteps);
  tsr_run_stop_say(x, step, of, t, why, MPI_Wtime() - t0);
  return TSR_OK;
}

/* One shell word, so that the line can be pasted whatever the path or value holds: as it is
 * where nothing in it is special to the shell, else in single quotes (a quote as '\''). */
static void put_word(FILE *f, const char *w) {
  if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-")
                == strlen(w)) {
    fputs(w, f);
    return;
  }
  fputc('\'', f);
  for (; *w; ++w) {
    if (*w == '\'') fputs("'\\''", f);
    else fputc(*w, f);
  }
  fputc('\'', f);
}

void tsr_run_stop_say(const tsr_run_ctx *x, int64_t step, const char *of, double t, int why,
                      double seconds) {
  const tsr_case *c = x->c;
  char path[4200];
  tsr_checkpoint_path(path, sizeof path, x->out_dir, step);
  fprintf(stderr, "tessera: stopped by %s after step %" PRId64 "%s (t = %.9g): checkpoint '%s' "
          "written in %.2f s, and 'latest' names it\n", tsr_stop_reason(why), step, of, t, path,
          seconds);
  if (why == TSR_STOP_WALLTIME)
    fprintf(stderr, "tessera: %.2f s of the %.0f s --walltime spent, this checkpoint's write "
            "included\n", tsr_stop_elapsed(), tsr_stop_walltime());
  fprintf(stderr, "tessera: continue with the same launch and: tessera run ");
  put_word(stderr, c->path);
  for (int i = 0; i < c->noverride; ++i) {
    fprintf(stderr, " --set ");
    put_word(stderr, c->overrides[i]);
  }
  if (x->opts.out_dir) {
    fprintf(stderr, " --out ");
    put_word(stderr, x->opts.out_dir);
  }
  fprintf(stderr, " --restart latest\n");
  fflush(stderr);
}
