/* The environment variables tessera reads, in one table with what each accepts. They are
 * checked once as a command starts, so that a value that does not parse is refused (exit 2,
 * naming the variable, what it takes and what to do) instead of silently taking the default;
 * the modules that use them read them where they use them. TESSERA_PARAREAL_* are checked by
 * solver/parareal/ (what they accept depends on the backend), OMP_NUM_THREADS by OpenMP,
 * TESSERA_DEBUG takes any value (unset, empty or 0: off). */
#ifndef TSR_ENV_H
#define TSR_ENV_H

#include "io/error.h"

/* Checks every variable of the table that is set and not empty. supervise: 1 for tessera
 * supervise, which sets TESSERA_ATTEMPT itself and leaves it out. TSR_ERR_INPUT with the
 * message of the first that does not parse. */
tsr_err tsr_env_check(int supervise);

#endif
