/* The PINN's interface exchange (solver/pinn/iface.h) over MPI on however many ranks it runs:
 * boxes from RCB, slabs and an explicit grid, in 1-D + t, 2D (steady and + t) and 3D + t,
 * periodic axes included (a periodic face shared with another rank, two faces shared with one
 * neighbour), interface points of face cells and random ones. Every rank's network differs
 * (its own seed); after one exchange each rank checks, for every neighbour and point, that
 *   - the neighbour made the same point: every coordinate the same bits, but the normal one
 *     across a periodic wrap, which is lo on one side and hi on the other; the faces opposite;
 *   - what it received is bit for bit what the neighbour computed and sent from its own
 *     network there (value, outward flux, residual; gathered from the neighbour separately);
 *   - a second exchange gives the same bits.
 * With time slabs (decomposition.time_slices 2, on an even rank count; ranks slab-major) the
 * slab faces are interface points too: the later slab's points at t_k are the earlier's, bit
 * for bit, and what each receives is what the other's network computed there.
 * And misuse: a second begin while one is in flight, an end without a begin. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/pinn/engine.h"
#include "solver/pinn/iface.h"

static int g_rank, g_size;
#include "tests/check.h"

/* Every rank's arrays, gathered. */
typedef struct {
  int *nif, *npeer, *ioff, *poff;
  double *X, *S;
  int *F, *peer, *start, *count;
} gathered;

static void *gatherv(const void *mine, int n, MPI_Datatype t, size_t es, int *counts, int *offs) {
  MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  int tot = 0;
  for (int r = 0; r < g_size; ++r) offs[r] = tot, tot += counts[r];
  void *all = malloc((size_t)(tot ? tot : 1) * es);
  CHECK(all, "out of memory");
  MPI_Allgatherv(mine, n, t, all, counts, offs, t, MPI_COMM_WORLD);
  return all;
}

static int one_case(const char *name, const char *text, int nranks_grid, int single,
                    int nslab) {
  if (nslab > 1 && g_size % nslab) return 0; /* slabs need a multiple of their count */
  tsr_case *c = NULL;
  char *set[2];
  char grid[64], slabs[64];
  int nset = 0, nsp = g_size / (nslab > 1 ? nslab : 1);
  if (nslab > 1) {
    snprintf(slabs, sizeof slabs, "decomposition.time_slices=%d", nslab);
    set[nset++] = slabs;
  }
  if (nranks_grid) { /* the explicit grid: [size, 1] or [2, 2] */
    if (g_size == 4) snprintf(grid, sizeof grid, "decomposition.ranks=[2,2]");
    else snprintf(grid, sizeof grid, "decomposition.ranks=[%d,1]", g_size);
    set[nset++] = grid;
  }
  CHECK(tsr_case_load_string(name, text, nset, set, &c) == TSR_OK, "%s", name);
  c->precision = single ? TSR_PRECISION_SINGLE : TSR_PRECISION_DOUBLE;
  tsr_layout L;
  CHECK(tsr_pinn_partition(c, nsp, &L) == TSR_OK, "%s: partition", name);
  tsr_pinn_sub sub = {.layout = &L, .box = tsr_layout_box_of(&L, g_rank % nsp)};
  if (nslab > 1) sub.slab = g_rank / nsp, sub.nslab = nslab, sub.rank0 = sub.slab * nsp;
  tsr_pinn_batch b;
  CHECK(tsr_pinn_batch_build(c, &sub, 0, &b) == TSR_OK, "%s: batch", name);
  tsr_pinn_engine_opts o;
  tsr_pinn_engine_opts_of(c, &sub, &b, 0, &o);
  o.eval_cap = 16;
  tsr_pinn_engine *e = NULL;
  CHECK(tsr_pinn_engine_create(&o, &e) == TSR_OK, "%s: engine", name);
  CHECK(tsr_pinn_engine_set_batch(e, b.X, b.T) == TSR_OK, "%s", name);
  size_t np = tsr_net_nparam(&o.shape);
  double *theta = malloc(np * sizeof *theta);
  tsr_net_init(&o.shape, 11 + (uint64_t)g_rank, theta); /* each rank's own network */
  CHECK(tsr_pinn_engine_set_state(e, theta, NULL, NULL, 0) == TSR_OK, "%s", name);
  int nv = TSR_PINN_IFACE_NV * c->ncomp;
  tsr_pinn_iface *x = NULL;
  CHECK(tsr_pinn_iface_create_mpi(MPI_COMM_WORLD, &b.peers, nv, &x) == TSR_OK, "%s", name);
  CHECK(tsr_pinn_engine_set_interface(e, b.F, x) == TSR_OK, "%s", name);
  size_t n = (size_t)b.if_count * nv;
  double *S = malloc((n ? n : 1) * sizeof *S), *R = malloc((n ? n : 1) * sizeof *R);
  double *R2 = malloc((n ? n : 1) * sizeof *R2);
  CHECK(tsr_pinn_engine_exchange(e, S, R) == TSR_OK, "%s: exchange", name);
  CHECK(tsr_pinn_engine_exchange(e, NULL, R2) == TSR_OK, "%s: exchange", name);
  CHECK(n == 0 || memcmp(R, R2, n * sizeof *R) == 0, "%s: a second exchange differs", name);
  CHECK(g_size == 1 || b.if_count > 0, "%s: rank %d has no interface points", name, g_rank);

  /* every rank's points, faces, values sent and neighbours */
  gathered G;
  int *cnt = malloc(4 * (size_t)g_size * sizeof *cnt), *off = cnt + g_size;
  int *cnt2 = cnt + 2 * g_size, *off2 = cnt + 3 * g_size;
  G.X = gatherv(b.X + (size_t)b.nin * b.if_start, b.if_count * b.nin, MPI_DOUBLE, 8, cnt, off);
  G.ioff = malloc((size_t)g_size * sizeof(int));
  for (int r = 0; r < g_size; ++r) G.ioff[r] = off[r] / b.nin;
  G.S = gatherv(S, (int)n, MPI_DOUBLE, 8, cnt, off);
  G.F = gatherv(b.F, b.if_count, MPI_INT, sizeof(int), cnt, off);
  G.peer = gatherv(b.peers.peer, b.peers.npeer, MPI_INT, sizeof(int), cnt2, off2);
  G.start = gatherv(b.peers.start, b.peers.npeer, MPI_INT, sizeof(int), cnt2, off2);
  G.count = gatherv(b.peers.count, b.peers.npeer, MPI_INT, sizeof(int), cnt2, off2);
  int64_t checked = 0;
  for (int i = 0; i < b.peers.npeer; ++i) {
    int q = b.peers.peer[i], j = -1;
    for (int k = 0; k < cnt2[q]; ++k)
      if (G.peer[off2[q] + k] == g_rank) j = off2[q] + k;
    CHECK(j >= 0, "%s: neighbour %d does not list rank %d", name, q, g_rank);
    CHECK(G.count[j] == b.peers.count[i], "%s: %d points for neighbour %d, it has %d", name,
          b.peers.count[i], q, G.count[j]);
    for (int k = 0; k < b.peers.count[i]; ++k) {
      int me = b.peers.start[i] + k, nb = G.start[j] + k;
      const double *xm = b.X + (size_t)b.nin * (b.if_start + me);
      const double *xn = G.X + (size_t)b.nin * (G.ioff[q] + nb);
      int fm = b.F[me], fn = G.F[G.ioff[q] + nb];
      CHECK(fm / 2 == fn / 2 && fm % 2 != fn % 2, "%s: point %d: faces %d and %d", name, me, fm,
            fn);
      for (int a = 0; a < b.nin; ++a) {
        int same = memcmp(&xm[a], &xn[a], sizeof *xm) == 0;
        int wrap = a == fm / 2 && c->periodic[a] &&
                   ((xm[a] == c->lo[a] && xn[a] == c->hi[a]) ||
                    (xm[a] == c->hi[a] && xn[a] == c->lo[a]));
        CHECK(same || wrap, "%s: point %d with neighbour %d: coordinate %d is %.17g there, "
              "%.17g here", name, k, q, a, xn[a], xm[a]);
      }
      CHECK(memcmp(R + (size_t)me * nv, G.S + (size_t)(G.ioff[q] + nb) * nv,
                   (size_t)nv * sizeof *R) == 0,
            "%s: point %d from neighbour %d: received %.17g, it computed %.17g", name, k, q,
            R[(size_t)me * nv], G.S[(size_t)(G.ioff[q] + nb) * nv]);
      ++checked;
    }
  }
  /* misuse: a second begin while one is in flight, an end without a begin */
  CHECK(tsr_pinn_iface_begin(x, S, R2, NULL) == TSR_OK, "%s", name);
  CHECK(tsr_pinn_iface_begin(x, S, R2, NULL) == TSR_ERR_STATE, "%s: a second begin", name);
  CHECK(tsr_pinn_iface_end(x, NULL) == TSR_OK, "%s", name);
  CHECK(tsr_pinn_iface_end(x, NULL) == TSR_ERR_STATE, "%s: an end without a begin", name);
  long long all = 0, mine = checked;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("%-36s %s on %d rank%s: %lld interface points, values received bit for bit as sent\n",
           name,
           single ? "single" : "double", g_size, g_size == 1 ? "" : "s", all);
  tsr_pinn_iface_destroy(&x);
  CHECK(x == NULL, "destroy sets NULL");
  tsr_pinn_engine_destroy(&e);
  tsr_pinn_batch_free(&b);
  tsr_layout_free(&L);
  tsr_case_destroy(&c);
  free(theta);
  free(S);
  free(R);
  free(R2);
  free(cnt);
  free(G.X);
  free(G.ioff);
  free(G.S);
  free(G.F);
  free(G.peer);
  free(G.start);
  free(G.count);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  one_case("poisson 2D, rcb, cells",
           "model: poisson\nmethod: pinn\ngrid: {cells: [12, 9], hi: [1.5, 1]}\n"
           "source: {u: \"sin(x)*y\"}\nboundary: {default: {type: dirichlet, value: 0}}\n"
           "pinn: {points: {boundary: 8}, network: {width: 6, depth: 2}}\n", 0, 0, 1);
  one_case("heat 2D + t, x periodic, slabs, N",
           "model: heat\nmethod: pinn\ngrid: {cells: [8, 10], periodic: [true, false]}\n"
           "initial: {u: \"sin(2*pi*x)*y\"}\ntime: {end: 0.5}\nsource: {u: \"x*t\"}\n"
           "decomposition: {partition: slabs}\n"
           "pinn: {points: {interior: 50, interface: 7, times: 3, boundary: 8, initial: 9},"
           " network: {width: 5, depth: 2}}\n", 0, 1, 1);
  one_case("heat 2D + t, periodic, grid, cells",
           "model: heat\nmethod: pinn\ngrid: {cells: [8, 6], periodic: [true, true]}\n"
           "initial: {u: \"sin(2*pi*x)*cos(2*pi*y)\"}\ntime: {end: 0.5}\n"
           "pinn: {points: {times: 2, boundary: 8, initial: 9}, network: {width: 5, depth: 2}}\n",
           1, 0, 1);
  one_case("allen_cahn 1D + t, periodic, rcb",
           "model: allen_cahn\nmethod: pinn\ngrid: {cells: [16], lo: [-1], hi: [1], periodic: true}\n"
           "params: {eps: 0.1, gamma: 5}\ninitial: {u: \"x*x*cos(pi*x)\"}\ntime: {end: 0.5}\n"
           "pinn: {points: {interior: 30, times: 4, boundary: 6, initial: 7},"
           " network: {width: 6, depth: 2}}\n", 0, 0, 1);
  one_case("heat 3D + t, periodic x z, rcb",
           "model: heat\nmethod: pinn\ngrid: {cells: [6, 5, 4], periodic: [true, false, true]}\n"
           "initial: {u: \"sin(2*pi*x)*y*cos(2*pi*z)\"}\ntime: {end: 0.3}\n"
           "pinn: {points: {interior: 40, times: 2, boundary: 6, initial: 9},"
           " network: {width: 5, depth: 2}}\n", 0, 0, 1);
  one_case("heat 2D + t, 2 time slabs, rcb",
           "model: heat\nmethod: pinn\ngrid: {cells: [8, 6]}\n"
           "initial: {u: \"sin(pi*x)*y\"}\ntime: {end: 0.5}\nsource: {u: \"x*t\"}\n"
           "pinn: {points: {interior: 30, times: 2, boundary: 6, initial: 9},"
           " network: {width: 5, depth: 2}}\n", 0, 1, 2);
  one_case("allen_cahn 1D + t, 2 slabs, periodic",
           "model: allen_cahn\nmethod: pinn\ngrid: {cells: [16], lo: [-1], hi: [1], periodic: true}\n"
           "params: {eps: 0.1, gamma: 5}\ninitial: {u: \"x*x*cos(pi*x)\"}\ntime: {end: 0.7}\n"
           "pinn: {points: {interior: 30, times: 4, boundary: 6, initial: 7},"
           " network: {width: 6, depth: 2}}\n", 0, 0, 2);
  MPI_Finalize();
  return 0;
}
