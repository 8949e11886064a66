/* Expressions: our own validator of the C subset (the contract shared with the NVRTC path),
 * a syntax tree, and two renderings of it: C text, and muparser text in which every name is
 * ours, every function is libm behind a tessera wrapper, unary minus is a function, and
 * every variable is read through an opaque identity function. The last point matters:
 * muparser's bytecode optimiser rewrites variable/constant patterns (2*(3*x+1) -> 6*x+2,
 * x*c -> x*c+0, x+x -> 2*x), which breaks bitwise agreement with C; it only matches bare
 * variable tokens, so hiding them behind a non-optimisable call keeps muparser's arithmetic
 * exactly C's, while it still folds constant subexpressions (to the doubles C would get). */
#include "io/expr.h"
#include "io/expr_impl.h"
#include "io/text.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <muParserDLL.h>

/* Case-file expressions are short; the limit bounds recursion when rendering the tree and
 * keeps the muparser text (at most ~3.7 times longer) under muparser's own cap. */
#define TSR_EXPR_MAX_LEN 4096
#define TSR_MUPARSER_MAX_LEN 19999
#define TSR_EXPR_MAX_DEPTH 256

/* pi as C's M_PI, spelled out because strict C11 headers need not define M_PI. */
static const double tsr_pi = 3.14159265358979323846;

#define WRAP1(f) static double tsr_f_##f(double a) { return f(a); }
#define WRAP2(f) static double tsr_f_##f(double a, double b) { return f(a, b); }
WRAP1(sin) WRAP1(cos) WRAP1(tan) WRAP1(asin) WRAP1(acos) WRAP1(atan) WRAP2(atan2)
WRAP1(sinh) WRAP1(cosh) WRAP1(tanh) WRAP1(exp) WRAP1(log) WRAP1(log10) WRAP1(sqrt)
WRAP1(cbrt) WRAP1(fabs) WRAP1(floor) WRAP1(ceil) WRAP2(pow) WRAP2(fmin) WRAP2(fmax)
WRAP2(fmod) WRAP1(erf)

static double tsr_neg(double a) { return -a; }
static double tsr_ident(double a) { return a; }

typedef tsr_expr_fun fun_def;

#define F1(f) {#f, 1, tsr_f_##f, NULL}
#define F2(f) {#f, 2, NULL, tsr_f_##f}
static const fun_def funs[] = {
    F1(sin),  F1(cos),   F1(tan),   F1(asin),  F1(acos),  F1(atan),  F2(atan2), F1(sinh),
    F1(cosh), F1(tanh),  F1(exp),   F1(log),   F1(log10), F1(sqrt),  F1(cbrt),  F1(fabs),
    F1(floor), F1(ceil), F2(pow),   F2(fmin),  F2(fmax),  F2(fmod),  F1(erf)};
#define NFUNS ((int)(sizeof funs / sizeof funs[0]))
const tsr_expr_fun *const tsr_expr_funs = funs;

static const char *const var_names[4] = {"x", "y", "z", "t"};

typedef tsr_expr_node node;

/* ---- tokens and parser ---------------------------------------------------------------- */

enum { T_END, T_NUM, T_NAME, T_OP };

typedef struct {
  int kind;
  int col, len;
  double val;
} token;

typedef struct {
  const char *s;
  int pos;
  const tsr_expr_env *env;
  token tok, prev;
  int has_prev;
  node *nodes;
  int nn, depth;
  int errcol;
  char msg[512];
} parser;

static int fail(parser *p, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parser *p, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof p->msg, fmt, ap);
  va_end(ap);
  p->errcol = col;
  return -1;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }

/* The decimal point of the current LC_NUMERIC: strtod and printf follow it, and the host
 * program may have called setlocale; a case file must mean the same thing everywhere. */
static char locale_point(void) {
  const char *dp = localeconv()->decimal_point;
  return dp && dp[0] && !dp[1] ? dp[0] : '.';
}

/* Converts s[col, col+len) with strtod whatever the locale. */
static int to_double(parser *p, int col, int len, double *out) {
  char buf[512];
  if (len >= (int)sizeof buf) return fail(p, col, "number is too long (%d characters)", len);
  memcpy(buf, p->s + col, (size_t)len);
  buf[len] = '\0';
  char *dot = strchr(buf, '.');
  if (dot) *dot = locale_point();
  errno = 0;
  char *end;
  *out = strtod(buf, &end);
  if (end != buf + len) return fail(p, col, "internal: cannot convert number '%s'", buf);
  if (errno == ERANGE && isinf(*out))
    return fail(p, col, "number '%.*s' is too large for a double", len, p->s + col);
  return 0;
}

static int lex_number(parser *p, int c0) {
  const char *s = p->s;
  int i = c0;
  while (is_digit(s[i])) i++;
  if (s[i] == '.') {
    i++;
    while (is_digit(s[i])) i++;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    int j = i + 1;
    if (s[j] == '+' || s[j] == '-') j++;
    if (!is_digit(s[j]))
      return fail(p, i, "malformed number '%.*s': the exponent needs digits", j - c0, s + c0);
    while (is_digit(s[j])) j++;
    i = j;
  }
  if (is_alnum(s[i]) || s[i] == '.') {
    int end = i;
    while (is_alnum(s[end]) || s[end] == '.') end++;
    if (i - c0 == 1 && s[c0] == '0' && (s[i] == 'x' || s[i] == 'X'))
      return fail(p, c0, "hexadecimal numbers are not allowed ('%.*s'): write it in decimal",
                  end - c0, s + c0);
    if (s[i] == '.')
      return fail(p, i, "malformed number '%.*s'", end - c0, s + c0);
    return fail(p, i, "numbers may not have a suffix ('%.*s'): write %.*s", end - c0, s + c0,
                i - c0, s + c0);
  }
  p->tok.kind = T_NUM;
  p->tok.col = c0;
  p->tok.len = i - c0;
  p->pos = i;
  return to_double(p, c0, i - c0, &p->tok.val);
}

/* Reads the next token into p->tok; refuses C operators outside the subset here, so that
 * errors come out left to right. */
static int next(parser *p) {
  const char *s = p->s;
  p->prev = p->tok;
  p->has_prev = 1;
  while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r')
    p->pos++;
  int c0 = p->pos;
  unsigned char c = (unsigned char)s[c0];
  p->tok.col = c0;
  p->tok.len = 1;
  if (c == '\0') {
    p->tok.kind = T_END;
    p->tok.len = 0;
    return 0;
  }
  if (is_digit(c) || (c == '.' && is_digit(s[c0 + 1]))) return lex_number(p, c0);
  if (is_alpha(c)) {
    int i = c0;
    while (is_alnum(s[i])) i++;
    p->tok.kind = T_NAME;
    p->tok.len = i - c0;
    p->pos = i;
    return 0;
  }
  char d = s[c0 + 1];
  switch (c) {
  case '+': case '-':
    if (d == c)
      return fail(p, c0, "'%c%c' is not allowed (C reads it as %s): separate the signs, e.g. "
                  "-(-x)", c, c, c == '+' ? "increment" : "decrement");
    break;
  case '*':
    if (d == '*') return fail(p, c0, "'**' is not allowed: use pow(a, b)");
    break;
  case '/':
    if (d == '/' || d == '*') return fail(p, c0, "'/%c' is not allowed (a comment in C)", d);
    break;
  case '(': case ')': case ',':
    break;
  case '^':
    return fail(p, c0, "'^' is not allowed: use pow(a, b)");
  case '%':
    return fail(p, c0, "'%%' is not allowed: use fmod(a, b)");
  case '<': case '>': case '!':
    return fail(p, c0, "'%.*s' is not allowed: expressions have no comparisons",
                d == '=' ? 2 : 1, s + c0);
  case '=':
    if (d == '=') return fail(p, c0, "'==' is not allowed: expressions have no comparisons");
    return fail(p, c0, "'=' is not allowed: an expression is a value, not an assignment");
  case '?': case ':':
    return fail(p, c0, "'%c' is not allowed: expressions have no conditional (?:)", c);
  case '&': case '|': case '~':
    return fail(p, c0, "'%.*s' is not allowed: expressions have no logical or bitwise operators",
                d == c ? 2 : 1, s + c0);
  default:
    if (c < 32 || c > 126)
      return fail(p, c0, "unexpected byte 0x%02X: only ASCII text is accepted", c);
    return fail(p, c0, "unexpected character '%c'", c);
  }
  p->tok.kind = T_OP;
  p->pos = c0 + 1;
  return 0;
}

static int is_op(const parser *p, char c) {
  return p->tok.kind == T_OP && p->s[p->tok.col] == c;
}

static int new_node(parser *p, int kind, int a, int b, const token *t) {
  node *n = &p->nodes[p->nn];
  *n = (node){.kind = kind, .a = a, .b = b, .idx = -1, .col = t->col, .len = t->len};
  return p->nn++;
}

/* Writes " (did you mean 'sin'?)" or "" into out. Calls consider only functions. */
static void suggest(const parser *p, const char *name, int call, char *out, size_t n) {
  static const char *const aliases[][2] = {{"ln", "log"}, {"e", "exp(1)"}, {"M_PI", "pi"}};
  out[0] = '\0';
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcmp(name, aliases[i][0])) {
      snprintf(out, n, " (did you mean '%s'?)", aliases[i][1]);
      return;
    }
  int nparam = p->env ? p->env->nparam : 0, best = 3, nl = (int)strlen(name);
  const char *pick = NULL;
  for (int k = 0; k < NFUNS + 5 + nparam; k++) {
    const char *cand = k < NFUNS ? funs[k].name
                       : k < NFUNS + 4 ? var_names[k - NFUNS]
                       : k == NFUNS + 4 ? "pi"
                                        : p->env->names[k - NFUNS - 5];
    if (call && k >= NFUNS) break;
    int d = tsr_text_distance(name, cand, 1); /* 'PI', 'Sin' suggest their spelling */
    /* distance must be smaller than the name, or 'a' would suggest 'x' */
    if (d < best && d < nl) best = d, pick = cand;
  }
  if (pick) snprintf(out, n, " (did you mean '%s'?)", pick);
}

static int parse_expr(parser *p);

/* An operand ended and the token that follows can neither continue nor close it. */
static int after_operand(parser *p, int open_col) {
  const token *t = &p->tok, *q = &p->prev;
  if (t->kind == T_END) {
    if (open_col >= 0) return fail(p, open_col, "unbalanced '(': missing ')'");
    return fail(p, t->col, "internal: unexpected end");
  }
  if (is_op(p, ')')) return fail(p, t->col, "unbalanced ')'");
  if (is_op(p, ',')) return fail(p, t->col, "',' is only allowed between function arguments");
  return fail(p, t->col, "expected an operator between '%.*s' and '%.*s'", q->len,
              p->s + q->col, t->len, p->s + t->col);
}

static int missing_operand(parser *p) {
  const token *t = &p->tok, *q = &p->prev;
  if (!p->has_prev) {
    if (t->kind == T_END) return fail(p, 0, "empty expression");
    return fail(p, t->col, "expected an operand, found '%.*s'", t->len, p->s + t->col);
  }
  if (t->kind == T_END)
    return fail(p, q->col, "expected an operand after '%.*s'", q->len, p->s + q->col);
  return fail(p, t->col, "expected an operand after '%.*s', found '%.*s'", q->len,
              p->s + q->col, t->len, p->s + t->col);
}

static int parse_call(parser *p, int fn, const token *name) {
  int open = p->tok.col, args[2] = {-1, -1}, nargs = 0;
  if (next(p)) return -1;
  if (!is_op(p, ')')) {
    for (;;) {
      int a = parse_expr(p);
      if (a < 0) return -1;
      if (nargs < 2) args[nargs] = a;
      nargs++;
      if (is_op(p, ')')) break;
      if (!is_op(p, ',')) return after_operand(p, open);
      if (next(p)) return -1;
    }
  }
  if (nargs != funs[fn].arity)
    return fail(p, name->col, "function '%s' takes %d argument%s, got %d", funs[fn].name,
                funs[fn].arity, funs[fn].arity == 1 ? "" : "s", nargs);
  int n = new_node(p, N_FUN, args[0], args[1], name);
  p->nodes[n].idx = fn;
  return next(p) ? -1 : n;
}

static int parse_name(parser *p) {
  token name = p->tok;
  char id[128], hint[160];
  if (name.len >= (int)sizeof id) return fail(p, name.col, "name is too long");
  memcpy(id, p->s + name.col, (size_t)name.len);
  id[name.len] = '\0';
  /* peek rather than lex: a bad character after the name must not hide the name's error */
  int j = p->pos;
  while (p->s[j] == ' ' || p->s[j] == '\t' || p->s[j] == '\n' || p->s[j] == '\r') j++;
  int fn = -1, var = -1, param = -1, call = p->s[j] == '(';
  for (int k = 0; k < NFUNS; k++)
    if (!strcmp(id, funs[k].name)) fn = k;
  for (int k = 0; k < 4; k++)
    if (!strcmp(id, var_names[k])) var = k;
  for (int k = 0; p->env && k < p->env->nparam && param < 0; k++)
    if (!strcmp(id, p->env->names[k])) param = k;
  int known = fn >= 0 || var >= 0 || param >= 0 || !strcmp(id, "pi");
  if (call) {
    if (fn >= 0) return next(p) ? -1 : parse_call(p, fn, &name);
    if (known) return fail(p, name.col, "'%s' is not a function: it cannot be called", id);
    suggest(p, id, 1, hint, sizeof hint);
    return fail(p, name.col, "unknown function '%s'%s", id, hint);
  }
  if (fn >= 0)
    return fail(p, name.col, "function '%s' must be followed by '(': write %s(...)", id, id);
  if (!known) {
    suggest(p, id, 0, hint, sizeof hint);
    return fail(p, name.col, "unknown name '%s'%s", id, hint);
  }
  int n = new_node(p, var >= 0 ? N_VAR : param >= 0 ? N_PARAM : N_PI, -1, -1, &name);
  p->nodes[n].idx = var >= 0 ? var : param;
  return next(p) ? -1 : n;
}

static int parse_unary(parser *p) {
  if (++p->depth > TSR_EXPR_MAX_DEPTH)
    return fail(p, p->tok.col, "expression is nested too deeply (over %d levels)",
                TSR_EXPR_MAX_DEPTH);
  int n;
  token t = p->tok;
  if (is_op(p, '+') || is_op(p, '-')) {
    if (next(p) || (n = parse_unary(p)) < 0) return -1;
    if (p->s[t.col] == '-') n = new_node(p, N_NEG, n, -1, &t);
  } else if (t.kind == T_NUM) {
    n = new_node(p, N_NUM, -1, -1, &t);
    p->nodes[n].val = t.val;
    if (next(p)) return -1;
  } else if (t.kind == T_NAME) {
    if ((n = parse_name(p)) < 0) return -1;
  } else if (is_op(p, '(')) {
    if (next(p) || (n = parse_expr(p)) < 0) return -1;
    if (!is_op(p, ')')) return after_operand(p, t.col);
    if (next(p)) return -1;
  } else {
    return missing_operand(p);
  }
  p->depth--;
  return n;
}

/* One level of left-associative binary operators: ops[0] and ops[1] with kinds k0 and k1. */
static int parse_binary(parser *p, int (*sub)(parser *), const char *ops, int k0, int k1) {
  int l = sub(p);
  while (l >= 0 && (is_op(p, ops[0]) || is_op(p, ops[1]))) {
    token t = p->tok;
    int r;
    if (next(p) || (r = sub(p)) < 0) return -1;
    l = new_node(p, p->s[t.col] == ops[0] ? k0 : k1, l, r, &t);
  }
  return l;
}

static int parse_term(parser *p) { return parse_binary(p, parse_unary, "*/", N_MUL, N_DIV); }
static int parse_expr(parser *p) { return parse_binary(p, parse_term, "+-", N_ADD, N_SUB); }

/* ---- rendering ----------------------------------------------------------------------- */


static const char binop[] = {[N_ADD] = '+', [N_SUB] = '-', [N_MUL] = '*', [N_DIV] = '/'};

static int prec(int kind) {
  return kind == N_ADD || kind == N_SUB ? 1 : kind == N_MUL || kind == N_DIV ? 2 : 3;
}

/* One tree, two spellings. C: numbers as round-tripping double literals (%.17g, ".0" added
 * to integers), names as written. muparser (mu = 1): our own names only (_k<node> numbers,
 * _p<i> params, _sin ..., variables behind _v(), unary minus as the function _n()), short
 * because muparser caps expressions at 20000 characters. Both put parentheses wherever C's
 * grouping would differ from the tree's, including right operands of equal precedence
 * (a - (b - c); a + (b + c) rounds differently); + - * / group alike in C and muparser.
 * Unary minus is always parenthesised in C so that the text never holds "--". */
static void render(const tsr_expr *e, int i, int mu, tsr_strbuf *b) {
  const node *n = &e->nodes[i];
  char num[40];
  switch (n->kind) {
  case N_NUM: case N_PI: {
    if (mu) {
      tsr_strbuf_printf(b, "_k%d", i);
      break;
    }
    snprintf(num, sizeof num, "%.17g", n->kind == N_PI ? tsr_pi : n->val);
    char *dot = strchr(num, locale_point());
    if (dot) *dot = '.';
    tsr_strbuf_printf(b, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");
    break;
  }
  case N_VAR:
    tsr_strbuf_printf(b, mu ? "_v(_%s)" : "%s", var_names[n->idx]);
    break;
  case N_PARAM:
    if (mu) tsr_strbuf_printf(b, "_p%d", n->idx);
    else tsr_strbuf_printf(b, "%.*s", n->len, e->text + n->col);
    break;
  case N_NEG: {
    int par = !mu && prec(e->nodes[n->a].kind) < 3;
    tsr_strbuf_printf(b, mu ? "_n(" : par ? "(-(" : "(-");
    render(e, n->a, mu, b);
    tsr_strbuf_printf(b, par ? "))" : ")");
    break;
  }
  case N_FUN:
    tsr_strbuf_printf(b, "%s%s(", mu ? "_" : "", funs[n->idx].name);
    render(e, n->a, mu, b);
    if (n->b >= 0) {
      tsr_strbuf_printf(b, mu ? "," : ", ");
      render(e, n->b, mu, b);
    }
    tsr_strbuf_printf(b, ")");
    break;
  default: {
    int p = prec(n->kind), lp = prec(e->nodes[n->a].kind) < p;
    int rp = prec(e->nodes[n->b].kind) <= p;
    const char *sp = mu ? "" : " ";
    tsr_strbuf_printf(b, "%s", lp ? "(" : "");
    render(e, n->a, mu, b);
    tsr_strbuf_printf(b, "%s%s%c%s%s", lp ? ")" : "", sp, binop[n->kind], sp, rp ? "(" : "");
    render(e, n->b, mu, b);
    tsr_strbuf_printf(b, "%s", rp ? ")" : "");
  }
  }
}

/* ---- public -------------------------------------------------------------------------- */

static tsr_err check_env(const tsr_expr_env *env) {
  for (int k = 0; env && k < env->nparam; k++) {
    const char *nm = env->names[k];
    int ok = nm && is_alpha((unsigned char)nm[0]);
    for (const char *c = nm; ok && *c; c++) ok = is_alnum((unsigned char)*c);
    TSR_CHECK(ok, TSR_ERR_INPUT, "param name '%s' is not a valid name (letters, digits, _)",
              nm ? nm : "(null)");
    int clash = !strcmp(nm, "pi");
    for (int j = 0; j < 4; j++) clash |= !strcmp(nm, var_names[j]);
    for (int j = 0; j < NFUNS; j++) clash |= !strcmp(nm, funs[j].name);
    for (int j = 0; j < k; j++) clash |= !strcmp(nm, env->names[j]);
    TSR_CHECK(!clash, TSR_ERR_INPUT,
              "param '%s' clashes with a variable, pi, a function or another param: rename it",
              nm);
  }
  return TSR_OK;
}

static tsr_err setup_muparser(tsr_expr *e, const tsr_expr_env *env) {
  tsr_strbuf b = {0};
  render(e, e->root, 1, &b);
  if (b.oom) free(b.s);
  TSR_CHECK(!b.oom, TSR_ERR_MEMORY, "out of memory rendering an expression");
  if (b.n > TSR_MUPARSER_MAX_LEN) {
    free(b.s);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "expression is too long for the host evaluator: shorten it");
  }
  muParserHandle_t mp = e->mp = mupCreate(muBASETYPE_FLOAT);
  if (!mp) free(b.s);
  TSR_CHECK(mp, TSR_ERR_MEMORY, "out of memory creating a muparser instance");
  char name[40];
  for (int k = 0; k < NFUNS; k++) {
    snprintf(name, sizeof name, "_%s", funs[k].name);
    if (funs[k].arity == 1) mupDefineFun1(mp, name, funs[k].f1, 1);
    else mupDefineFun2(mp, name, funs[k].f2, 1);
  }
  mupDefineFun1(mp, "_n", tsr_neg, 1);
  mupDefineFun1(mp, "_v", tsr_ident, 0);
  for (int k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "_%s", var_names[k]);
    mupDefineVar(mp, name, &e->var[k]);
  }
  for (int k = 0; env && k < env->nparam; k++) {
    snprintf(name, sizeof name, "_p%d", k);
    mupDefineConst(mp, name, env->values[k]);
  }
  for (int i = 0; i <= e->root; i++) {
    if (e->nodes[i].kind != N_NUM && e->nodes[i].kind != N_PI) continue;
    snprintf(name, sizeof name, "_k%d", i);
    mupDefineConst(mp, name, e->nodes[i].kind == N_PI ? tsr_pi : e->nodes[i].val);
  }
  mupSetExpr(mp, b.s);
  (void)mupEval(mp); /* muparser parses lazily; make it parse now */
  int bad = mupError(mp);
  if (bad)
    tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                "muparser refused expression '%.200s' (rendered as '%.200s'): %s", e->text,
                b.s, mupGetErrorMsg(mp));
  free(b.s);
  return bad ? TSR_ERR_INTERNAL : TSR_OK;
}

tsr_err tsr_expr_compile(const char *text, const tsr_expr_env *env, tsr_expr **out,
                         int *errcol) {
  int col_dummy;
  if (!errcol) errcol = &col_dummy;
  *errcol = -1;
  TSR_CHECK(out, TSR_ERR_INTERNAL, "tsr_expr_compile: NULL result pointer");
  *out = NULL;
  TSR_CHECK(text, TSR_ERR_INTERNAL, "tsr_expr_compile: NULL text");
  TSR_CHECK(!env || env->nparam == 0 || (env->names && env->values), TSR_ERR_INTERNAL,
            "tsr_expr_compile: env without names or values");
  TSR_CALL(check_env(env));
  size_t len = strlen(text);
  if (len > TSR_EXPR_MAX_LEN) {
    *errcol = TSR_EXPR_MAX_LEN;
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "expression is too long (%zu characters, at most %d)", len,
                       TSR_EXPR_MAX_LEN);
  }
  tsr_expr *e;
  TSR_ALLOC(e, 1, "an expression");
  e->text = malloc(len + 1);
  e->nodes = calloc(len + 1, sizeof *e->nodes); /* each node consumes at least one char */
  int nparam = env ? env->nparam : 0;
  e->param = malloc((size_t)(nparam + 1) * sizeof *e->param);
  e->c_text = NULL;
  if (!e->text || !e->nodes || !e->param) {
    tsr_expr_destroy(&e);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory compiling '%s'", text);
  }
  memcpy(e->text, text, len + 1);
  for (int k = 0; k < nparam; k++) e->param[k] = env->values[k];

  parser p = {.s = e->text, .env = env, .nodes = e->nodes};
  int root = -1;
  if (!next(&p)) {
    p.has_prev = 0;
    root = parse_expr(&p);
    if (root >= 0 && p.tok.kind != T_END) root = after_operand(&p, -1);
  }
  if (root < 0) {
    *errcol = p.errcol;
    tsr_expr_destroy(&e);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s", p.msg);
  }
  /* nodes are created children first, so the root is the last one */
  e->root = root;
  for (int i = 0; i <= root; i++)
    if (e->nodes[i].kind == N_PI) e->nodes[i].val = tsr_pi;

  tsr_strbuf c = {0};
  render(e, root, 0, &c);
  e->c_text = c.s;
  tsr_err err = c.oom ? tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                    "out of memory rendering '%s'", text)
                      : setup_muparser(e, env);
  if (err) {
    if (err == TSR_ERR_INPUT) *errcol = 0;
    tsr_expr_destroy(&e);
    return err;
  }
  *out = e;
  return TSR_OK;
}

double tsr_expr_eval(tsr_expr *e, double x, double y, double z, double t) {
  e->var[0] = x;
  e->var[1] = y;
  e->var[2] = z;
  e->var[3] = t;
  double v = mupEval(e->mp);
  return mupError(e->mp) ? NAN : v;
}

void tsr_expr_eval_many(tsr_expr *e, size_t n, const double *x, const double *y,
                        const double *z, double t, double *out) {
  for (size_t i = 0; i < n; i++) out[i] = tsr_expr_eval(e, x[i], y[i], z ? z[i] : 0.0, t);
}

int tsr_expr_uses(const tsr_expr *e, const char *name) {
  size_t nl = strlen(name);
  for (int i = 0; i <= e->root; i++) {
    const node *n = &e->nodes[i];
    if ((n->kind == N_VAR || n->kind == N_PARAM || n->kind == N_PI || n->kind == N_FUN) &&
        (size_t)n->len == nl && !strncmp(e->text + n->col, name, nl))
      return 1;
  }
  return 0;
}

int tsr_expr_depends_on_time(const tsr_expr *e) { return tsr_expr_uses(e, "t"); }

tsr_err tsr_expr_to_c(const tsr_expr *e, char *buf, size_t n) {
  size_t need = strlen(e->c_text) + 1;
  TSR_CHECK(buf && n >= need, TSR_ERR_INTERNAL,
            "buffer of %zu bytes is too small for the C text of '%s' (%zu bytes needed)", n,
            e->text, need);
  memcpy(buf, e->c_text, need);
  return TSR_OK;
}

void tsr_expr_destroy(tsr_expr **e) {
  if (!e || !*e) return;
  if ((*e)->mp) mupRelease((*e)->mp);
  free((*e)->text);
  free((*e)->nodes);
  free((*e)->param);
  free((*e)->c_text);
  free(*e);
  *e = NULL;
}
