/* PETSc's options in method implicit (solver/implicit/implicit_impl.h): the case's petsc:
 * section into PETSc's database, and the user's options named, with where they were given,
 * when PETSc refuses them, reads none of them, or fails with them; the time plan's options
 * refused (time: sets them). */
#include <ctype.h>
#include <petscts.h>
#include <stdio.h>
#include <string.h>

#include "solver/implicit/implicit_impl.h"

/* Options read only after the first step's solves, or at the end of the run, or at
 * PetscFinalize: the check after the first step does not count them as unused. */
static int read_later(const char *name) {
  static const char *const later[] = {"log_view", "log_view_memory", "log_view_gpu_time",
                                      "log_all", "log_trace", "options_left", "options_view",
                                      "malloc_dump", "malloc_view", "memory_view",
                                      "objects_dump", "ts_view", "ts_view_solution",
                                      "ts_view_pre", "help", "info"};
  for (size_t i = 0; i < sizeof later / sizeof *later; ++i)
    if (strcmp(name, later[i]) == 0) return 1;
  return 0;
}

/* PETSc's "options left": an option that no solver object has read after the first step is
 * misspelled or for an object this run does not have. The case's are named by position. */
tsr_err tsr_implicit_options_left(impl *m) {
  const tsr_case *c = m->x->c;
  PetscInt n = 0;
  char **names = NULL, **values = NULL;
  TSR_PETSC(PetscOptionsLeftGet(NULL, &n, &names, &values));
  tsr_err err = TSR_OK;
  for (PetscInt i = 0; i < n && !err; ++i) {
    if (read_later(names[i])) continue;
    int k = -1;
    for (int j = 0; j < c->implicit.nopt; ++j)
      if (strcmp(c->implicit.opt_name[j], names[i]) == 0) k = j;
    if (k >= 0) {
      char at[512];
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "%s: petsc.%s: no PETSc object of this run read the option -%s "
                        "(misspelled, or for a solver this run does not use: ts %s, snes %s, "
                        "ksp %s, pc %s); run with -help to see the options PETSc reads",
                        tsr_case_loc_str(&c->implicit.opt_loc[k], at, sizeof at), names[i],
                        names[i], m->ts_type, m->snes_type, m->ksp_type, m->pc_type);
    } else {
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "command line: -%s: no PETSc object of this run read the option "
                        "(misspelled, or for a solver this run does not use: ts %s, snes %s, "
                        "ksp %s, pc %s); run with -help to see the options PETSc reads",
                        names[i], m->ts_type, m->snes_type, m->ksp_type, m->pc_type);
    }
  }
  PetscOptionsLeftRestore(NULL, &n, &names, &values);
  return err;
}

/* The case's petsc: options into PETSc's database, unless the command line (or PETSc's
 * environment) gave them: those win. */
tsr_err tsr_implicit_options_insert(impl *m) {
  const tsr_case *c = m->x->c;
  for (int i = 0; i < c->implicit.nopt; ++i) {
    char name[300];
    snprintf(name, sizeof name, "-%s", c->implicit.opt_name[i]);
    PetscBool has;
    TSR_PETSC(PetscOptionsHasName(NULL, NULL, name, &has));
    if (has) continue;
    TSR_PETSC(PetscOptionsSetValue(NULL, name, c->implicit.opt_value[i]));
    m->ninserted = i + 1;
    /* -log_view is read when PETSc starts: from a case, logging starts here (and
     * PetscFinalize prints the summary) */
    if (strncmp(c->implicit.opt_name[i], "log_view", 8) == 0) TSR_PETSC(PetscLogDefaultBegin());
  }
  return TSR_OK;
}

void tsr_implicit_options_clear(impl *m) {
  const tsr_case *c = m->x->c;
  for (int i = 0; i < m->ninserted; ++i) {
    if (strncmp(c->implicit.opt_name[i], "log_view", 8) == 0) continue;
    char name[300];
    snprintf(name, sizeof name, "-%s", c->implicit.opt_name[i]);
    PetscOptionsClearValue(NULL, name);
  }
}

/* Whether word occurs in text as a whole token (not inside a longer name or number). */
static int quotes(const char *text, const char *word) {
  const size_t n = strlen(word);
  for (const char *p = text; n && (p = strstr(p, word)); ++p) {
    const char before = p > text ? p[-1] : ' ', after = p[n];
    if (!isalnum((unsigned char)before) && before != '_' && before != '-' && before != '.' &&
        !isalnum((unsigned char)after) && after != '_' && after != '.')
      return 1;
  }
  return 0;
}

/* An error of PETSc reading the options (TSSetFromOptions): an unknown type, a number that does
 * not parse, a value out of range. The run's options are the case's petsc: section and the
 * command line's, so it is the user's input (exit 2; it was an "internal error"): named by the
 * option whose value PETSc's message quotes, its place in the case when it is the case's, with
 * PETSc's own reason. An allocation failure, or an error with no option given, stays PETSc's. */
tsr_err tsr_implicit_options_refused(impl *m, PetscErrorCode pe, const char *call) {
  const tsr_case *c = m->x->c;
  tsr_err err = tsr_petsc_err(pe, call, __FILE__, __LINE__);
  char *all = NULL;
  if (pe == PETSC_ERR_MEM || PetscOptionsGetAll(NULL, &all) || !all) return err;
  const char *text = NULL;
  char *specific = NULL, reason[1024];
  PetscErrorMessage(pe, &text, &specific);
  snprintf(reason, sizeof reason, "%s%s%s", text ? text : "error",
           specific && *specific ? ": " : "", specific ? specific : "");
  /* "-name value -flag ...": the option whose value the message quotes (the database holds
   * what won: the command line's over the case's) */
  char name[256] = "", value[256] = "";
  int any = 0;
  for (char *tok = strtok(all, " "); tok; tok = strtok(NULL, " ")) {
    if (tok[0] == '-' && isalpha((unsigned char)tok[1])) {
      any |= strcmp(tok, "-no_signal_handler") != 0;
      snprintf(name, sizeof name, "%s", tok + 1);
    } else if (name[0] && specific && quotes(specific, tok)) {
      snprintf(value, sizeof value, "%s", tok);
      break;
    }
  }
  PetscFree(all);
  if (!any) return err;
  if (!value[0])
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s: PETSc refused the options of this run (the case's petsc: section "
                       "and the command line's): %s; check them (-help lists what PETSc reads)",
                       c->path, reason);
  for (int i = 0; i < c->implicit.nopt; ++i) {
    const char *v = c->implicit.opt_value[i];
    if (strcmp(c->implicit.opt_name[i], name) || !v || strcmp(v, value)) continue;
    char at[512];
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s: petsc.%s: PETSc refused the value '%s': %s; give a value the option "
                       "takes (-help lists them)",
                       tsr_case_loc_str(&c->implicit.opt_loc[i], at, sizeof at), name, value,
                       reason);
  }
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "command line: -%s %s: PETSc refused the value: %s; give a value the option "
                     "takes (-help lists them)", name, value, reason);
}

/* The run's options (the case's petsc: section and the command line's, as the database holds
 * them) one by one: name (without its dash) and value ("" for a flag). Returns 0 once none is
 * left. *at walks PetscOptionsGetAll's "-name value -flag ..." in place. */
static int next_option(char **at, const char **name, const char **value) {
  char *p = *at;
  while (*p == ' ') ++p;
  if (*p != '-') return 0;
  *name = ++p;
  while (*p && *p != ' ') ++p;
  if (*p) *p++ = '\0';
  while (*p == ' ') ++p;
  *value = "";
  if (*p && !(p[0] == '-' && isalpha((unsigned char)p[1]))) { /* a value (-1 is one) */
    *value = p;
    while (*p && *p != ' ') ++p;
    if (*p) *p++ = '\0';
  }
  *at = p;
  return 1;
}

/* The case's option of this name, if the database's value is the case's (the command line's
 * wins over it); -1 otherwise. */
static int case_option(const tsr_case *c, const char *name, const char *value) {
  for (int i = 0; i < c->implicit.nopt; ++i)
    if (strcmp(c->implicit.opt_name[i], name) == 0) {
      const char *v = c->implicit.opt_value[i] ? c->implicit.opt_value[i] : "";
      return strcmp(v, value) == 0 ? i : -1;
    }
  return -1;
}

tsr_err tsr_implicit_options_owned(impl *m) {
  const tsr_case *c = m->x->c;
  char *all = NULL;
  TSR_PETSC(PetscOptionsGetAll(NULL, &all));
  tsr_err err = TSR_OK;
  const char *name, *value;
  for (char *at = all; !err && next_option(&at, &name, &value);) {
    const char *use = tsr_case_petsc_owned(name, *value ? value : NULL, m->adaptive);
    /* the case's own were refused when it was read */
    if (use && case_option(c, name, value) < 0)
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                        "command line: -%s: tessera sets this from the case: %s; remove the "
                        "option and use the key (--set time.KEY=VALUE on the command line)",
                        name, use);
  }
  PetscFree(all);
  return err;
}

/* PETSc's errors that a choice of solver, or a value for it, can cause (a method that does not
 * apply, a factorization this matrix type lacks, a zero pivot, an unhandled configuration);
 * not those of memory, the system, MPI, files or corrupted objects. */
static int choice_error(PetscErrorCode pe) {
  switch (pe) {
  case PETSC_ERR_SUP: case PETSC_ERR_ORDER: case PETSC_ERR_LIB: case PETSC_ERR_PLIB:
  case PETSC_ERR_ARG_SIZ: case PETSC_ERR_ARG_IDN: case PETSC_ERR_ARG_WRONG:
  case PETSC_ERR_ARG_OUTOFRANGE: case PETSC_ERR_ARG_NOTSAMETYPE: case PETSC_ERR_ARG_WRONGSTATE:
  case PETSC_ERR_ARG_TYPENOTSET: case PETSC_ERR_ARG_INCOMP: case PETSC_ERR_ARG_UNKNOWN_TYPE:
  case PETSC_ERR_MAT_LU_ZRPVT: case PETSC_ERR_MAT_CH_ZRPVT: case PETSC_ERR_CONV_FAILED:
  case PETSC_ERR_NOT_CONVERGED: case PETSC_ERR_MISSING_FACTOR: case PETSC_ERR_WRONG_MPI_SIZE:
  case PETSC_ERR_USER_INPUT:
    return 1;
  default:
    return 0;
  }
}

tsr_err tsr_implicit_options_failed(impl *m, PetscErrorCode pe, const char *call) {
  const tsr_case *c = m->x->c;
  tsr_err err = tsr_petsc_err(pe, call, __FILE__, __LINE__);
  char *all = NULL;
  if (!choice_error(pe) || PetscOptionsGetAll(NULL, &all) || !all) return err;
  /* the options that choose or tune a solver: not the monitors and views, nor tessera's own */
  char list[1536] = "";
  size_t len = 0;
  int n = 0;
  const char *name, *value;
  for (char *at = all; next_option(&at, &name, &value);) {
    if (read_later(name) || strstr(name, "monitor") || strstr(name, "view") ||
        strcmp(name, "no_signal_handler") == 0)
      continue;
    const int k = case_option(c, name, value);
    const tsr_loc *loc = k >= 0 ? &c->implicit.opt_loc[k] : NULL;
    char where[512] = "command line";
    if (loc && loc->file && loc->line > 0) snprintf(where, sizeof where, "line %d", loc->line);
    else if (loc) tsr_case_loc_str(loc, where, sizeof where);
    if (len < sizeof list)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s%s%s%s (%s)", n ? ", " : "",
                              k >= 0 ? "petsc." : "-", name,
                              *value ? (k >= 0 ? ": " : " ") : "", value, where);
    ++n;
  }
  PetscFree(all);
  if (!n) return err;
  const char *text = NULL;
  char *specific = NULL, why[1024];
  PetscErrorMessage(pe, &text, &specific);
  snprintf(why, sizeof why, "%s%s%s", text ? text : "error", specific && *specific ? ": " : "",
           specific ? specific : "");
  for (size_t w = strlen(why); w && strchr(". \n", why[w - 1]); --w) why[w - 1] = '\0';
  /* PETSc's own ILU, ICC, LU and Cholesky factor a one-rank (seqaij) matrix only */
  const char *hint = "";
  if (m->x->size > 1 && strstr(why, "Could not locate a solver type"))
    hint = "; on more than one rank PETSc factors with a parallel package only: use -pc_type "
           "bjacobi (or asm) with -sub_pc_type ilu, icc, lu or cholesky"
#if defined(PETSC_HAVE_MUMPS)
           ", or -pc_type lu (or cholesky) with -pc_factor_mat_solver_type mumps"
#elif defined(PETSC_HAVE_SUPERLU_DIST)
           ", or -pc_type lu with -pc_factor_mat_solver_type superlu_dist"
#endif
        ;
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: PETSc failed in %s with the solver options of this run (%s): %s%s; "
                     "change or remove them", c->path, call, list, why, hint);
}
