/* Small PINN cases of every PDE the method takes, and an engine for one of them, shared by
 * tests/unit/test_pinn.c (host) and tests/gpu/test_pinn_gpu.c (device against host). */
#ifndef TSR_TEST_PINN_CASES_H
#define TSR_TEST_PINN_CASES_H

#include <stdlib.h>
#include <string.h>

#include "io/case.h"
#include "kernels/net.h"
#include "solver/pinn/engine.h"
#include "solver/pinn/points.h"

/* Every boundary kind (Dirichlet, Neumann, periodic) and time dependence appears in one. */
static const char *const tsr_test_pinn_cases[] = {
    "model: poisson\nmethod: pinn\ngrid: {cells: [6, 5], hi: [1, 2]}\n"
    "source: {u: \"sin(x)*cos(y)\"}\nboundary: {default: {type: dirichlet, value: \"x*y\"},"
    " ylo: {type: neumann, value: \"x\"}}\n"
    "pinn: {points: {boundary: 7}, network: {width: 6, depth: 2}}\n",
    "model: heat\nmethod: pinn\ngrid: {cells: [4, 5], lo: [0, -1], hi: [2, 1]}\n"
    "params: {kappa: 0.7}\ninitial: {u: \"sin(pi*x)*y\"}\ntime: {end: 0.3}\n"
    "boundary: {xlo: {type: neumann, value: \"t\"}}\n"
    "pinn: {points: {times: 3, boundary: 5, initial: 9}, network: {width: 5, depth: 3}}\n",
    "model: burgers\nmethod: pinn\ngrid: {cells: [9], lo: [-1], hi: [1]}\n"
    "params: {nu: 0.05}\ninitial: {u: \"-sin(pi*x)\"}\ntime: {end: 1}\n"
    "pinn: {points: {interior: 40, boundary: 6, initial: 8}, network: {width: 7, depth: 3,"
    " activation: sin}}\n",
    "model: allen_cahn\nmethod: pinn\ngrid: {cells: [8], lo: [-1], hi: [1], periodic: true}\n"
    "params: {eps: 0.1, gamma: 5}\ninitial: {u: \"x*x*cos(pi*x)\"}\ntime: {end: 0.5}\n"
    "pinn: {points: {interior: 30, boundary: 6, initial: 7}, network: {width: 6, depth: 2}}\n",
    "model: advection_diffusion\nmethod: pinn\ngrid: {cells: [4, 4], periodic: [true, false]}\n"
    "params: {kappa: 0.1, vx: 1.5, vy: -0.5}\ninitial: {u: \"sin(2*pi*x)*y\"}\n"
    "source: {u: \"x*t\"}\ntime: {end: 0.2}\n"
    "pinn: {points: {times: 2, boundary: 5, initial: 6}, network: {width: 5, depth: 2}}\n",
};
#define TSR_TEST_PINN_NCASES ((int)(sizeof tsr_test_pinn_cases / sizeof *tsr_test_pinn_cases))

typedef struct {
  tsr_case *c;
  tsr_layout L;       /* several subdomains: their boxes */
  tsr_pinn_sub sub;
  tsr_pinn_batch b;
  tsr_pinn_engine_opts o;
  tsr_pinn_engine *e;
  size_t np;
  double *theta;
} tsr_test_pinn;

/* Case k on the host (device 0) or the GPU, double or single, on box `box` of nbox subdomains
 * (nbox 1: the whole grid) and time slab `slab` of nslab (nslab 1: none; all at once, so the
 * slab faces on both sides have points); theta from the case's seed. Returns 0 on success. */
static int tsr_test_pinn_make_slab(int k, int device, int single, int nbox, int box, int nslab,
                                   int slab, tsr_test_pinn *t) {
  memset(t, 0, sizeof *t);
  if (tsr_case_load_string("t.yaml", tsr_test_pinn_cases[k], 0, NULL, &t->c)) return 1;
  t->c->precision = single ? TSR_PRECISION_SINGLE : TSR_PRECISION_DOUBLE;
  const tsr_pinn_sub *ps = NULL;
  if (nbox > 1 || nslab > 1) {
    if (tsr_pinn_partition(t->c, nbox, &t->L)) return 7;
    t->sub = (tsr_pinn_sub){.layout = &t->L, .box = box};
    if (nslab > 1)
      t->sub.slab = slab, t->sub.nslab = nslab, t->sub.rank0 = slab * t->L.nbox;
    ps = &t->sub;
  }
  if (tsr_pinn_batch_build(t->c, ps, 0, &t->b)) return 2;
  tsr_pinn_engine_opts *o = &t->o;
  tsr_pinn_engine_opts_of(t->c, ps, &t->b, device, o);
  tsr_pinn_loss_desc *d = &o->loss;
  /* weights other than 1, so a term's weight that goes missing shows */
  for (int j = 0; j < d->nterm; ++j) d->term[j].weight = 1.0 + 0.25 * j;
  d->wi[0] = 1.5; /* and interface weights that differ */
  d->wi[1] = 0.7;
  d->wi[2] = 0.3;
  o->adam = (tsr_pinn_adam){.lr = 1e-2, .decay = 0.9, .decay_every = 10, .beta1 = 0.9,
                            .beta2 = 0.999, .eps = 1e-8};
  o->hist_cap = 8;
  o->eval_cap = 64;
  o->graphs = 1;
  if (tsr_pinn_engine_create(o, &t->e)) return 3;
  if (tsr_pinn_engine_set_batch(t->e, t->b.X, t->b.T)) return 4;
  if (tsr_pinn_engine_set_interface(t->e, t->b.F, NULL)) return 8;
  t->np = tsr_net_nparam(&o->shape);
  t->theta = malloc(t->np * sizeof *t->theta);
  if (!t->theta) return 5;
  /* larger than Glorot's, so that second derivatives are not small */
  tsr_net_init(&o->shape, 7 + (uint64_t)k, t->theta);
  for (size_t i = 0; i < t->np; ++i) t->theta[i] *= 1.5;
  return tsr_pinn_engine_set_state(t->e, t->theta, NULL, NULL, 0) ? 6 : 0;
}

static int tsr_test_pinn_make_sub(int k, int device, int single, int nbox, int box,
                                  tsr_test_pinn *t) {
  return tsr_test_pinn_make_slab(k, device, single, nbox, box, 1, 0, t);
}

static int tsr_test_pinn_make(int k, int device, int single, tsr_test_pinn *t) {
  return tsr_test_pinn_make_sub(k, device, single, 1, 0, t);
}

static void tsr_test_pinn_free(tsr_test_pinn *t) {
  tsr_pinn_engine_destroy(&t->e);
  tsr_pinn_batch_free(&t->b);
  tsr_layout_free(&t->L);
  tsr_case_destroy(&t->c);
  free(t->theta);
}

/* The total loss at theta (the sum of the weighted terms). */
static double tsr_test_pinn_loss(tsr_test_pinn *t, const double *theta, double *grad) {
  double loss[TSR_PINN_MAX_TERMS], s = 0.0;
  tsr_pinn_engine_set_state(t->e, theta, NULL, NULL, 0);
  if (tsr_pinn_engine_loss_grad(t->e, loss, grad)) return NAN;
  for (int j = 0; j < t->o.loss.nterm; ++j) s += loss[j];
  return s;
}

#endif
