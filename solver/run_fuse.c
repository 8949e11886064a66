/* time.fuse: auto. The fields are as deep as the largest fuse that fits the boxes (up to
 * TSR_FUSE_AUTO_MAX); the run's first steps measure fuse 1, 2, 4, ... each with an exchange of
 * its own depth and its time tiles (solver/run_tiles.c: what the rest of the run would take),
 * or, where no face is exchanged, the odd fuses 1, 3, ... up to the longest pass (a block of s
 * is then one pass of s; an even block would end in a plain step). Two rounds (up, then down,
 * so a drift in the machine's speed weighs on every candidate alike), and the rest of the run
 * takes the fastest. The steps measured are
 * steps of the run: every fuse gives the same bits, so nothing is thrown away. They are issued
 * plainly (no CUDA graphs), the device drained at each candidate's ends, and the time that
 * monitors and snapshots take inside them left out; every rank takes the slowest rank's
 * figures, so all choose alike. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/run_internal.h"

/* A candidate's slot ends at the first end of one of its blocks after QUOTA steps, so each
 * begins at a block start and no pass straddles two (its steps are counted as they ran). */
enum { WARMUP = 2, QUOTA = 8, ROUNDS = 2, MAXCAND = 4 };

struct tsr_fuse_auto {
  int n;                       /* candidates: 1, 2, 4, ... (1, 3, 5, ... where none exchanges) */
  int s[MAXCAND];
  tsr_halo_plan plan[MAXCAND]; /* [0] unused: fuse 1 is the run's own plan and exchange; */
  tsr_halo *halo[MAXCAND];     /* NULL (the run's) where no face is exchanged */
  tsr_halo *own;               /* the run's exchange (fuse 1) */
  double sec[MAXCAND];         /* summed over the rounds; after the choice, per step */
  int64_t steps[MAXCAND];
  int64_t passes[MAXCAND];     /* time tiles' passes while it measured */
  int64_t pass0;               /* x->tile_passes at the slot's start */
  int64_t last;                /* the measurement's last step */
  int slot;                    /* position in the schedule: round r, candidate order */
  int64_t done;                /* steps of the current slot (or of the warm-up, slot -1) */
  double t0, skip0;            /* the slot's start, and monitors' + outputs' time then */
  int measuring;               /* 1 until the choice */
  int chosen;
  char why[160];
};

/* The candidate of schedule slot k: round 0 upwards, round 1 downwards. */
static int cand_of(const struct tsr_fuse_auto *a, int k) {
  int r = k / a->n, i = k % a->n;
  return r % 2 ? a->n - 1 - i : i;
}

static double skipped(const tsr_run_ctx *x) {
  return x->phase[PH_MONITOR] + x->phase[PH_OUTPUT];
}

static void use(tsr_run_ctx *x, struct tsr_fuse_auto *a, int i) {
  x->fuse = a->s[i];
  x->xghost = a->halo[i] ? a->plan[i].ghost : x->radius;
  x->halo = a->halo[i] ? a->halo[i] : a->own;
  x->fuse_pos = x->fuse_len = 0; /* the next step begins a block */
  if (!i) tsr_run_split_shell(x, 0); /* a fused block's first stage left its own split */
}

/* The choice, with fuse 1 kept unless another is faster by 2% (noise must not move it). */
static tsr_err choose(tsr_run_ctx *x, struct tsr_fuse_auto *a, char *line, size_t size) {
  TSR_CALL(tsr_run_agree(x->comm, x->be->sync(x)));
  MPI_Allreduce(MPI_IN_PLACE, a->sec, a->n, MPI_DOUBLE, MPI_MAX, x->comm);
  int best = 0;
  for (int i = 0; i < a->n; ++i) {
    a->sec[i] /= (double)(a->steps[i] > 0 ? a->steps[i] : 1);
    if (a->sec[i] < 0.98 * a->sec[best]) best = i;
  }
  a->chosen = a->s[best];
  a->measuring = 0;
  use(x, a, best);
  x->halo = a->own;
  if (a->halo[best]) {
    /* the chosen depth becomes the run's own plan (the rebalancer rebuilds it), its exchange
     * made again over it there (an exchange borrows its plan's address) */
    tsr_halo_destroy(&a->own);
    tsr_halo_plan_free(&x->plan);
    x->plan = a->plan[best];
    memset(&a->plan[best], 0, sizeof a->plan[best]);
    x->halo = NULL;
    TSR_CALL(x->be->halo_new(x, &x->plan, &x->halo));
  }
  for (int i = 1; i < a->n; ++i) tsr_halo_destroy(&a->halo[i]);
  a->own = NULL; /* x->halo is the run's exchange now (a migration makes it again) */
  int n = snprintf(line, size, "time.fuse auto: %d, seconds per step", a->chosen);
  for (int i = 0; i < a->n && n > 0 && (size_t)n < size; ++i) {
    n += snprintf(line + n, size - (size_t)n, "%s fuse %d %.3g", i ? "," : "", a->s[i],
                  a->sec[i]);
    if (a->passes[i] && n > 0 && (size_t)n < size)
      n += snprintf(line + n, size - (size_t)n, " (%" PRId64 " time tile passes)", a->passes[i]);
  }
  snprintf(a->why, sizeof a->why, "measured over steps %d to %" PRId64 ", the fastest%s",
           WARMUP + 1, a->last, best ? "" : " (no other faster by 2%)");
  return TSR_OK;
}

/* x->fuse stays 1 and the report says why. */
static tsr_err fixed(tsr_run_ctx *x, const char *why) {
  struct tsr_fuse_auto *a;
  TSR_ALLOC(a, 1, "time.fuse auto");
  a->chosen = 1;
  snprintf(a->why, sizeof a->why, "%s", why);
  x->fa = a;
  return TSR_OK;
}

tsr_err tsr_run_fuse_auto_create(tsr_run_ctx *x) {
  const tsr_case *c = x->c;
  if (c->time.fuse != TSR_FUSE_AUTO || c->method != TSR_METHOD_EXPLICIT) return TSR_OK;
  const int smax = tsr_run_fuse_auto_max(c, &x->layout);
  const int pmax = x->tile_max - (x->tile_max % 2 == 0); /* the longest pass: odd */
  /* an SSP pass of one step is a pass (its stages are levels); a forward Euler one is not */
  const int passes = x->tile_max > 0 && (pmax >= 3 || x->scheme.nstage > 1);
  int n = 0, s[MAXCAND];
  if (smax == 0 && !passes) {
    char why[160];
    snprintf(why, sizeof why, "no face of any box is exchanged and no time tiles (%s)",
             x->tile_why ? x->tile_why : "passes of one step");
    return fixed(x, why);
  }
  if (smax == 1) return fixed(x, "the boxes are too thin for fuse 2's ghosts");
  if (smax == 0) {
    for (int f = 1; f <= pmax && n < MAXCAND; f += 2) s[n++] = f;
    if (n == 1) s[n++] = 2; /* passes of one step: fuse 1 takes none, fuse 2 two */
  } else
    for (int f = 1; f <= smax && n < MAXCAND; f *= 2) s[n++] = f;
  int64_t trial = WARMUP; /* with blocks not cut by monitors: QUOTA rounded up to whole ones */
  for (int i = 0; i < n; ++i) trial += (int64_t)ROUNDS * s[i] * ((QUOTA + s[i] - 1) / s[i]);
  if (x->nsteps - x->start_step < 4 * trial)
    return fixed(x, "too few steps to measure (fewer than 4 x the measurement's)");
  if (x->rb && c->rebalance.every <= trial)
    return fixed(x, "the rebalancer decides before the measurement would end");
  struct tsr_fuse_auto *a;
  TSR_ALLOC(a, 1, "time.fuse auto");
  x->fa = a;
  a->n = n;
  a->own = x->halo;
  for (int i = 0; i < n; ++i) {
    a->s[i] = s[i];
    if (!i || smax == 0) continue;
    int g = x->radius * a->s[i] * x->scheme.nstage;
    TSR_CALL(tsr_halo_plan_build(&x->layout, x->rank, g, &a->plan[i]));
    TSR_CALL(x->be->halo_new(x, &a->plan[i], &a->halo[i]));
  }
  a->measuring = 1;
  a->slot = -1;
  return TSR_OK;
}

int tsr_run_fuse_auto_busy(const tsr_run_ctx *x) { return x->fa && x->fa->measuring; }

tsr_err tsr_run_fuse_auto_after_step(tsr_run_ctx *x, int64_t step, char *line, size_t size) {
  line[0] = '\0';
  struct tsr_fuse_auto *a = x->fa;
  if (!a || !a->measuring) return TSR_OK;
  ++a->done;
  if (x->fuse > 1 && x->fuse_pos < x->fuse_len) return TSR_OK; /* inside a block */
  const int quota = a->slot < 0 ? WARMUP : QUOTA;
  if (a->done < quota) return TSR_OK;
  TSR_CALL(x->be->sync(x));
  double now = MPI_Wtime();
  if (a->slot >= 0) {
    int i = cand_of(a, a->slot);
    a->sec[i] += now - a->t0 - (skipped(x) - a->skip0);
    a->steps[i] += a->done;
    a->passes[i] += x->tile_passes - a->pass0;
  }
  a->last = step + 1;
  if (++a->slot == a->n * ROUNDS) return choose(x, a, line, size);
  use(x, a, cand_of(a, a->slot));
  a->done = 0;
  a->pass0 = x->tile_passes;
  a->t0 = MPI_Wtime();
  a->skip0 = skipped(x);
  return TSR_OK;
}

void tsr_run_fuse_auto_report(const tsr_run_ctx *x, tsr_json *j) {
  const struct tsr_fuse_auto *a = x->fa;
  if (!a) return;
  tsr_json_object_begin(j, "fuse_auto");
  tsr_json_int(j, "chosen", a->chosen);
  tsr_json_string(j, "why", a->measuring ? "the run ended before the measurement" : a->why);
  tsr_json_array_begin(j, "candidates");
  for (int i = 0; i < a->n; ++i) tsr_json_int(j, NULL, a->s[i]);
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "seconds_per_step");
  for (int i = 0; i < a->n && !a->measuring; ++i) tsr_json_number(j, NULL, a->sec[i]);
  tsr_json_array_end(j);
  tsr_json_array_begin(j, "passes"); /* time tiles' passes while it measured */
  for (int i = 0; i < a->n; ++i) tsr_json_int(j, NULL, a->passes[i]);
  tsr_json_array_end(j);
  tsr_json_object_end(j);
}

void tsr_run_fuse_auto_free(tsr_run_ctx *x) {
  struct tsr_fuse_auto *a = x->fa;
  if (!a) return;
  /* stopped while measuring: the backend's teardown frees the run's own exchange */
  if (a->measuring && a->own) x->halo = a->own;
  for (int i = 1; i < a->n; ++i) {
    tsr_halo_destroy(&a->halo[i]);
    tsr_halo_plan_free(&a->plan[i]);
  }
  free(a);
  x->fa = NULL;
}
