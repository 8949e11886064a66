/* The parts of method implicit that need no PETSc, and the refusals of a build without it. */
#include "solver/implicit/implicit.h"

#include <stdio.h>

const char *tsr_implicit_scheme_name(tsr_implicit_scheme s) {
  static const char *const names[] = {"beuler", "cn", "bdf2", "ark_imex"};
  return (unsigned)s < 4 ? names[s] : "?";
}

int tsr_implicit_is_option(const char *a) {
  return a[0] == '-' && ((a[1] >= 'a' && a[1] <= 'z') || (a[1] >= 'A' && a[1] <= 'Z'));
}

#ifndef TSR_HAVE_PETSC

#include "solver/method.h"
#include "solver/run_internal.h"

static const char no_petsc[] =
    "method implicit: this tessera was built without PETSc; install it (Debian, Ubuntu: "
    "apt-get install petsc-dev, which bash scripts/setup.sh does) and rebuild (cmake finds it "
    "with pkg-config), or use method: explicit";

int tsr_implicit_available(void) { return 0; }

tsr_err tsr_implicit_check(const tsr_case *c) {
  (void)c;
  return TSR_OK;
}

const char *tsr_implicit_describe(char *buf, size_t size) {
  snprintf(buf, size, "none (built without PETSc: method implicit is refused)");
  return buf;
}

tsr_err tsr_implicit_init(MPI_Comm comm, int argc, char *const *argv) {
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s", no_petsc);
}

void tsr_implicit_finalize(void) {}

static tsr_err refuse(tsr_run_ctx *x) {
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s: %s", x->c->path,
                     no_petsc);
}

const tsr_method_ops tsr_method_implicit = {.setup = refuse};

#endif
