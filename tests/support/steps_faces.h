/* The physical faces of a time-tile test case (tests/gpu/test_steps_gpu.c and the CPU
 * emulators' tests/unit/emulate_steps.h): face f (x lo, x hi, y lo, y hi, z lo, z hi) where
 * bit f of `faces` is set, Dirichlet on the low sides and Neumann on the high, over the
 * tangential cells a pass reads (the box's, and ghost - 1 more on an exchanged side), with
 * values from uniform() - 0.25, malloc'd (the caller frees bc->val[i]). C and C++. */
#ifndef TSR_TESTS_STEPS_FACES_H
#define TSR_TESTS_STEPS_FACES_H
#include <stdlib.h>

#include "kernels/steps.h"

static inline int steps_test_faces(int dim, const tsr_box *box, int ghost, int ncomp, int faces,
                                   double (*uniform)(void), tsr_steps_bc *bc) {
  bc->nface = 0;
  for (int f = 0; f < 2 * dim; ++f) {
    if (!(faces >> f & 1)) continue;
    tsr_bc_face *fc = &bc->face[bc->nface];
    fc->axis = f / 2;
    fc->side = f % 2;
    fc->type = f % 2 ? TSR_GHOST_NEUMANN : TSR_GHOST_DIRICHLET;
    fc->t1 = (fc->axis + 1) % 3;
    fc->t2 = (fc->axis + 2) % 3;
    int *o[2] = {&fc->o1, &fc->o2}, *nn[2] = {&fc->n1, &fc->n2};
    for (int k = 0; k < 2; ++k) {
      const int t = k ? fc->t2 : fc->t1;
      *o[k] = 0;
      *nn[k] = 1;
      if (t >= dim) continue;
      int lo = box->lo[t], hi = box->hi[t];
      if (!(faces >> (2 * t) & 1)) lo -= ghost - 1;
      if (!(faces >> (2 * t + 1) & 1)) hi += ghost - 1;
      *o[k] = lo - box->lo[t];
      *nn[k] = hi - lo;
    }
    fc->layers = 1;
    fc->h = 0.05 + 0.01 * f;
    const size_t nv = (size_t)ncomp * (size_t)fc->n1 * (size_t)fc->n2;
    double *v = (double *)malloc(nv * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < nv; ++i) v[i] = uniform() - 0.25;
    bc->val[bc->nface++] = v;
  }
  return 0;
}
#endif
