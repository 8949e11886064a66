#include "solver/env.h"

#include <stdlib.h>
#include <string.h>

#include "io/text.h"

typedef struct {
  const char *name;
  const char *const *words; /* one of these; NULL: a whole number in [lo, hi] */
  long lo, hi;
  const char *takes;        /* what it takes, for the message */
  int supervise;            /* also checked by tessera supervise */
} env_var;

static const char *const on_off[] = {"on", "off", NULL};
static const char *const zero_one[] = {"0", "1", NULL};
static const char *const net_paths[] = {"0", "1", "2", NULL};

static const env_var vars[] = {
    /* OpenMP's own: libgomp takes "abc" as its default and crashed at 100000 (session 37) */
    {"OMP_NUM_THREADS", NULL, 1, 4096,
     "a whole number of threads per rank from 1 to 4096 (unset: the rank's share of its CPUs)",
     1},
    {"TESSERA_ATTEMPT", NULL, 1, 1000000,
     "the attempt number that tessera supervise sets (1, 2, ...)", 0},
    {"TESSERA_PROBE_TIMEOUT", NULL, 1, 86400,
     "whole seconds from 1 to 86400 (how long tessera supervise waits for a probe; default 120)",
     1},
    {"TESSERA_PROBE_GPUS", NULL, 0, 65536,
     "a count of GPUs from 0 to 65536 (a testing aid: the probe's count for this node)", 1},
    {"TESSERA_TIME_TILES", on_off, 0, 0,
     "on or off (the explicit method's time tiles; default on)", 1},
    {"TSR_NET_FUSED", net_paths, 0, 0,
     "0 (cuBLAS products), 1 (one kernel a pass) or 2 (a kernel a layer): the PINN network's "
     "path on GPUs", 1},
    {"TSR_NET_WGRAD", zero_one, 0, 0,
     "0 or 1 (1: the layers path's weight gradients from a kernel of its own)", 1},
    {"TSR_PINN_TRACE", zero_one, 0, 0, "0 or 1 (1: trace L-BFGS's line searches)", 1},
    {"TSR_PROGRESS_SECONDS", NULL, 1, 86400,
     "whole seconds from 1 to 86400 (progress lines: a step line after this long without a "
     "line; default 60)", 0},
    {"TSR_PINN_PROFILE", NULL, 0, 1000000,
     "a count of iterations from 0 to 1000000 (timed by phase after training; 0: none)", 1},
};

tsr_err tsr_env_check(int supervise) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
    const env_var *e = &vars[i];
    if (supervise && !e->supervise) continue;
    const char *v = getenv(e->name);
    if (!v || !*v) continue;
    int ok = 0;
    if (e->words) {
      for (const char *const *w = e->words; *w && !ok; ++w) ok = strcmp(v, *w) == 0;
    } else {
      ok = tsr_text_count(v, e->lo, e->hi, NULL);
    }
    TSR_CHECK(ok, TSR_ERR_INPUT,
              "environment variable %s='%s': expected %s; set it to such a value or unset it",
              e->name, v, e->takes);
  }
  return TSR_OK;
}
