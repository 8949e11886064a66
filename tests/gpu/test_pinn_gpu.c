/* The PINN's engine on the GPU (solver/pinn/engine_cuda.c, kernels/pinn.cu) against the host
 * engine, for every PDE of tests/support/pinn_cases.h: in fp64 the loss terms and the
 * parameter gradient agree to 1e-12 (relative, norm-wise); the device's gradient agrees with
 * central differences of the device's loss to 1e-6; eight Adam iterations replayed as one CUDA
 * graph give the same bits as plain launches and agree with the host's to 1e-9; fp32 on the
 * device agrees with fp64 on the host to 1e-4 in the loss; a batch too large for the GPU's
 * memory is refused before anything is allocated. Exits non-zero on the first failure. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/device.h"
#include "tests/support/pinn_cases.h"

static int g_rank;
#include "tests/check.h"

static double rel_diff(const double *a, const double *b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static void one_case(int k) {
  tsr_test_pinn h, d, d2, f;
  CHECK(tsr_test_pinn_make(k, 0, 0, &h) == 0, "case %d host: %s", k, tsr_err_message());
  CHECK(tsr_test_pinn_make(k, 1, 0, &d) == 0, "case %d device: %s", k, tsr_err_message());
  const char *name = tsr_models[h.c->model].name;
  size_t np = h.np;
  int nt = h.b.nterm;
  double *gh = malloc(np * 8), *gd = malloc(np * 8), *s = malloc(np * 8), *th = malloc(np * 8);
  double lh[TSR_PINN_MAX_TERMS], ld[TSR_PINN_MAX_TERMS];
  CHECK(tsr_pinn_engine_loss_grad(h.e, lh, gh) == TSR_OK, "%s", tsr_err_message());
  CHECK(tsr_pinn_engine_loss_grad(d.e, ld, gd) == TSR_OK, "%s", tsr_err_message());
  double el = rel_diff(ld, lh, (size_t)nt), eg = rel_diff(gd, gh, np);
  CHECK(el <= 1e-12 && eg <= 1e-12, "%s: device vs host loss %.2e, gradient %.2e", name, el, eg);
  /* central differences of the device's own loss */
  memcpy(th, d.theta, np * 8);
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < np; ++i) {
    double x = th[i], hh = 1e-4, f4[4];
    const double st[4] = {hh, -hh, 2 * hh, -2 * hh};
    for (int q = 0; q < 4; ++q) {
      th[i] = x + st[q];
      f4[q] = tsr_test_pinn_loss(&d, th, s);
    }
    th[i] = x;
    double fd = (4 * (f4[0] - f4[1]) / (2 * hh) - (f4[2] - f4[3]) / (4 * hh)) / 3;
    num += (fd - gd[i]) * (fd - gd[i]);
    den += gd[i] * gd[i];
  }
  double efd = sqrt(num / den);
  CHECK(efd <= 1e-6, "%s: device gradient vs central differences %.2e", name, efd);
  /* eight iterations: graph vs plain launches bitwise, vs host to 1e-9 */
  tsr_pinn_engine_set_state(d.e, d.theta, NULL, NULL, 0);
  CHECK(tsr_test_pinn_make(k, 1, 0, &d2) == 0, "%s", tsr_err_message());
  d2.o.graphs = 0;
  tsr_pinn_engine_destroy(&d2.e);
  CHECK(tsr_pinn_engine_create(&d2.o, &d2.e) == TSR_OK, "%s", tsr_err_message());
  tsr_pinn_engine_set_batch(d2.e, d2.b.X, d2.b.T);
  tsr_pinn_engine_set_state(d2.e, d2.theta, NULL, NULL, 0);
  tsr_pinn_engine_set_state(h.e, h.theta, NULL, NULL, 0);
  double hd[8 * TSR_PINN_MAX_TERMS], hp[8 * TSR_PINN_MAX_TERMS], hx[8 * TSR_PINN_MAX_TERMS];
  CHECK(tsr_pinn_engine_run(d.e, 8, hd) == TSR_OK, "%s", tsr_err_message());
  CHECK(tsr_pinn_engine_run(d2.e, 8, hp) == TSR_OK, "%s", tsr_err_message());
  CHECK(tsr_pinn_engine_run(h.e, 8, hx) == TSR_OK, "%s", tsr_err_message());
  double *t1 = malloc(np * 8), *t2 = malloc(np * 8), *t3 = malloc(np * 8);
  tsr_pinn_engine_get_state(d.e, t1, NULL, NULL);
  tsr_pinn_engine_get_state(d2.e, t2, NULL, NULL);
  tsr_pinn_engine_get_state(h.e, t3, NULL, NULL);
  CHECK(memcmp(t1, t2, np * 8) == 0 && memcmp(hd, hp, sizeof(double) * 8 * nt) == 0,
        "%s: the graph's iterations differ from plain launches", name);
  double ea = rel_diff(t1, t3, np);
  CHECK(ea <= 1e-9, "%s: after 8 Adam iterations device vs host parameters %.2e", name, ea);
  /* fp32 on the device against fp64 on the host */
  CHECK(tsr_test_pinn_make(k, 1, 1, &f) == 0, "%s", tsr_err_message());
  double lf[TSR_PINN_MAX_TERMS], sf = 0.0, sh = 0.0;
  CHECK(tsr_pinn_engine_loss_grad(f.e, lf, s) == TSR_OK, "%s", tsr_err_message());
  for (int j = 0; j < nt; ++j) {
    sf += lf[j];
    sh += lh[j];
  }
  CHECK(fabs(sf - sh) <= 1e-4 * fabs(sh), "%s: fp32 loss %.8e vs fp64 %.8e", name, sf, sh);
  if (g_rank == 0)
    printf("%-20s loss/gradient device vs host %.1e/%.1e, vs central differences %.1e, 8 Adam "
           "iterations %.1e, graph = plain bitwise, fp32 loss %.1e\n", name, el, eg, efd, ea,
           fabs(sf - sh) / fabs(sh));
  free(gh); free(gd); free(s); free(th); free(t1); free(t2); free(t3);
  tsr_test_pinn_free(&h);
  tsr_test_pinn_free(&d);
  tsr_test_pinn_free(&d2);
  tsr_test_pinn_free(&f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int dev;
  CHECK(tsr_device_select(MPI_COMM_WORLD, &dev) == TSR_OK, "%s", tsr_err_message());
  for (int k = 0; k < TSR_TEST_PINN_NCASES; ++k) one_case(k);
  /* a batch far beyond the GPU's memory: refused, nothing allocated */
  tsr_test_pinn t;
  CHECK(tsr_test_pinn_make(0, 0, 0, &t) == 0, "%s", tsr_err_message());
  tsr_pinn_engine_opts o = t.o;
  o.device = 1;
  o.loss.npts = 1 << 30;
  o.shape.width = 512;
  tsr_pinn_engine *e = NULL;
  tsr_err err = tsr_pinn_engine_create(&o, &e);
  CHECK(err == TSR_ERR_INPUT && strstr(tsr_err_message(), "GiB of GPU memory") && !e,
        "a too large network: error %d, '%s'", (int)err, tsr_err_message());
  if (g_rank == 0) printf("too large for the GPU: %s\n", tsr_err_message());
  tsr_test_pinn_free(&t);
  MPI_Finalize();
  return 0;
}
