/* tessera supervise's GPU probe, the parts without processes (solver/supervise.h): the probe's
 * command, reading what it printed, and saying what was lost. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/supervise.h"

char **tsr_supervise_probe_argv(int n, char *const *cmd) {
  int run = -1;
  for (int i = 1; i < n && run < 0; ++i)
    if (!strcmp(cmd[i], "run")) run = i;
  if (run < 0) return NULL;
  char **out = calloc((size_t)run + 2, sizeof *out);
  if (!out) return NULL;
  int ok = 1;
  for (int i = 0; i < run && ok; ++i) ok = (out[i] = strdup(cmd[i])) != NULL;
  if (ok) ok = (out[run] = strdup("probe")) != NULL;
  if (!ok) {
    tsr_supervise_argv_free(out);
    return NULL;
  }
  return out;
}

void tsr_supervise_gpus_free(tsr_supervise_gpus *g) {
  free(g->node);
  memset(g, 0, sizeof *g);
}

int tsr_supervise_gpus_parse(const char *text, tsr_supervise_gpus *g) {
  memset(g, 0, sizeof *g);
  int total = 0;
  for (const char *p = text; p && *p;) {
    char line[512];
    size_t len = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    p += len + (p[len] == '\n');
    tsr_supervise_node nd;
    int u, s, k;
    if (sscanf(line, "tessera probe: node %255[^:]: %d of %d GPUs usable", nd.name, &nd.usable,
               &nd.seen) == 3) {
      if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        tsr_supervise_node *grown = realloc(g->node, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        g->node = grown;
        g->cap = cap;
      }
      g->node[g->n++] = nd;
    } else if (sscanf(line, "tessera probe: total %d of %d GPUs usable on %d node", &u, &s, &k) ==
               3) {
      g->usable = u;
      g->nodes = k;
      total = 1;
    }
  }
  return total && g->n == g->nodes && g->nodes > 0;
}

void tsr_supervise_gpus_lost(const tsr_supervise_gpus *g0, const tsr_supervise_gpus *g,
                            char *buf, size_t cap) {
  size_t len = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (int i = 0; i < g0->n; ++i) {
    const tsr_supervise_node *now = NULL;
    for (int j = 0; j < g->n && !now; ++j)
      if (!strcmp(g->node[j].name, g0->node[i].name)) now = &g->node[j];
    if (now && now->usable >= g0->node[i].usable) continue;
    if (shown == 4) {
      ++more;
      continue;
    }
    char one[320];
    if (now)
      snprintf(one, sizeof one, "%s: %d of %d usable (had %d)", now->name, now->usable,
               now->seen, g0->node[i].usable);
    else
      snprintf(one, sizeof one, "%s: not reached", g0->node[i].name);
    len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", shown ? ", " : "", one);
    ++shown;
  }
  if (more && len < cap) snprintf(buf + len, cap - len, " and %d more node%s", more,
                                  more == 1 ? "" : "s");
}

void tsr_supervise_gpus_hosts(const tsr_supervise_gpus *g, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < g->n && len < cap; ++i)
    if (g->node[i].usable > 0)
      len += (size_t)snprintf(buf + len, cap - len, "%s%s:%d", len ? "," : "", g->node[i].name,
                              g->node[i].usable);
}
