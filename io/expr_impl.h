/* io/expr's private parts, shared by its two sources: expr.c (validator, syntax tree, C and
 * muparser renderings, per-point evaluation) and expr_grid.c (evaluation over a grid of
 * points from the same tree). Not for other modules: they use io/expr.h. */
#ifndef TSR_EXPR_IMPL_H
#define TSR_EXPR_IMPL_H

#include "io/expr.h"

/* A function of the subset: its C name and the one wrapper around libm that both muparser
 * (registered as _<name>) and the grid evaluator call, so both get libm's very bits. */
typedef struct {
  const char *name;
  int arity;
  double (*f1)(double);
  double (*f2)(double, double);
} tsr_expr_fun;

/* The table, indexed by tsr_expr_node.idx of N_FUN nodes. */
extern const tsr_expr_fun *const tsr_expr_funs;

enum { N_NUM, N_VAR, N_PI, N_PARAM, N_FUN, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV };

typedef struct {
  int kind;
  int a, b;     /* operands (node indices), -1 when absent */
  int idx;      /* variable 0..3, param index or function index */
  int col, len; /* where the token (name, number, operator) sits in the text */
  double val;   /* N_NUM; N_PI holds tsr_pi here too */
} tsr_expr_node;

struct tsr_expr {
  double var[4]; /* x, y, z, t: muparser reads them through pointers */
  void *mp;      /* muParserHandle_t */
  char *text;
  tsr_expr_node *nodes; /* children before parents: nodes[0..root] are the whole tree */
  int root;
  double *param; /* the params' values, copied at compile time (index = N_PARAM idx) */
  char *c_text;
};

#endif
