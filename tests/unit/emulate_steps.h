/* A case of the time-tile emulators (emulate_steps2.cpp, emulate_steps3.cpp): fields with
 * random values on box (dim 2 or 3), the region grown by `grow` on the faces not in the bit set
 * `faces` (x lo, x hi, y lo, y hi, z lo, z hi), random ghost values on the others, the ghosts
 * only as deep as tsr_steps_fits asks (grow + m, or 1 where every side is a face: the
 * emulators run under AddressSanitizer, so a read past the allocation fails the test),
 * m steps of the scheme of `stages` stages (1 forward Euler, 2 SSP-RK2, 3 SSP-RK3, 4 RK4;
 * kernels/steps.h) by tsr_steps_host, and the same by launch(d, rg, bc, in, src, out, grid),
 * which launches the emulated kernel and writes its grid; then every byte compared.
 * Prints a line; returns 1 where any value differs. Include after emulate_kernel.h. */
#ifndef TSR_TESTS_EMULATE_STEPS_H
#define TSR_TESTS_EMULATE_STEPS_H
#include "tests/support/steps_faces.h"

template <class Launch>
static int emu_steps_case(int dim, tsr_box box, int model, int ncomp, bool single, int m,
                          int stages, bool has_src, int faces, int grow, Launch launch) {
  const int ghost = faces == (1 << 2 * dim) - 1 ? 1 : grow + m * stages;
  const tsr_prec prec = single ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
  tsr_field *in, *sr, *ho, *go;
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &in);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &sr);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &ho);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &go);
  const size_t n = (size_t)ncomp * in->scomp;
  for (size_t i = 0; i < n; ++i) {
    tsr_field_set(in, i, 0.5 + uni());
    tsr_field_set(sr, i, 0.1 * (uni() - 0.5));
    tsr_field_set(ho, i, -7);
    tsr_field_set(go, i, -7);
  }
  tsr_box rg = box;
  for (int f = 0; f < 2 * dim; ++f)
    if (!(faces >> f & 1)) {
      if (f % 2 == 0) rg.lo[f / 2] -= grow;
      else rg.hi[f / 2] += grow;
    }
  tsr_steps_bc bc = {0};
  if (steps_test_faces(dim, &box, ghost, ncomp, faces, uni, &bc)) {
    printf("out of memory for the faces' values\n");
    exit(1);
  }
  double p[TSR_MAX_MODEL_PARAMS];
  const tsr_model_info *mi = &tsr_models[model];
  for (int i = 0; i < mi->nparam; ++i) p[i] = mi->param[i].def;
  const double h[3] = {0.11, 0.13, 0.17};
  tsr_stage_desc d = {model, ncomp, tsr_steps_kind(stages, stages - 1), 0.0017, {0}};
  tsr_stage_coef_init(&d.coef, model, p, h, in);
  if (tsr_steps_host(&d, m, 1, &rg, &bc, in, has_src ? sr : NULL, ho) != TSR_OK) {
    printf("tsr_steps_host: %s\n", tsr_err_message());
    exit(1);
  }
  int g[3] = {1, 1, 1};
  launch(&d, &rg, &bc, in, has_src ? sr : NULL, go, g);
  const size_t bytes = tsr_field_bytes(in), es = single ? 4 : 8;
  size_t bad = 0;
  long first = -1;
  for (size_t i = 0; i < bytes / es; ++i)
    if (memcmp((char *)ho->data + i * es, (char *)go->data + i * es, es)) {
      if (first < 0) first = (long)i;
      bad++;
    }
  printf("%s %s m %d stages %d src %d box %dx%dx%d faces 0x%x grow %d grid %dx%dx%d: %zu differ (first "
         "%ld: emu %.17g host %.17g)\n",
         mi->name, single ? "fp32" : "fp64", m, stages, (int)has_src, tsr_box_len(&box, 0),
         tsr_box_len(&box, 1), tsr_box_len(&box, 2), faces, grow, g[0], g[1], g[2], bad, first,
         first >= 0 ? tsr_field_get(go, first) : 0.0, first >= 0 ? tsr_field_get(ho, first) : 0.0);
  for (int i = 0; i < bc.nface; ++i) free((void *)bc.val[i]);
  tsr_field **all[4] = {&in, &sr, &ho, &go};
  for (tsr_field **f : all) tsr_field_destroy(f);
  return bad != 0;
}
#endif
