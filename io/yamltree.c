#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp, stat */
#include "io/yamltree.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* Case files are a few levels deep; the limit only stops a hostile file from blowing the
 * stack through the recursive descent below. */
#define MAX_DEPTH 64

typedef struct {
  yaml_parser_t parser;
  const char *file;
} pctx;

static tsr_yaml_node *node_new(tsr_yaml_kind kind, const char *file, int line, int col) {
  tsr_yaml_node *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->kind = kind;
  n->file = file;
  n->line = line;
  n->col = col;
  return n;
}

tsr_yaml_node *tsr_yaml_scalar(const char *file, int line, int col, const char *text) {
  tsr_yaml_node *n = node_new(TSR_YAML_SCALAR, file, line, col);
  if (!n) return NULL;
  n->text = strdup(text);
  if (!n->text) {
    free(n);
    return NULL;
  }
  return n;
}

tsr_yaml_node *tsr_yaml_map(const char *file, int line, int col) {
  return node_new(TSR_YAML_MAP, file, line, col);
}

void tsr_yaml_free(tsr_yaml_node *n) {
  if (!n) return;
  for (int i = 0; i < n->n; ++i) {
    if (n->kind == TSR_YAML_MAP) {
      free(n->entries[i].key);
      tsr_yaml_free(n->entries[i].value);
    } else if (n->kind == TSR_YAML_SEQ) {
      tsr_yaml_free(n->items[i]);
    }
  }
  free(n->entries);
  free(n->items);
  free(n->text);
  free(n);
}

static int grow(tsr_yaml_node *n) {
  if (n->n < n->cap) return 1;
  int cap = n->cap ? 2 * n->cap : 8;
  if (n->kind == TSR_YAML_MAP) {
    tsr_yaml_entry *e = realloc(n->entries, (size_t)cap * sizeof *e);
    if (!e) return 0;
    n->entries = e;
  } else {
    tsr_yaml_node **it = realloc(n->items, (size_t)cap * sizeof *it);
    if (!it) return 0;
    n->items = it;
  }
  n->cap = cap;
  return 1;
}

tsr_yaml_entry *tsr_yaml_find(const tsr_yaml_node *map, const char *key) {
  if (!map || map->kind != TSR_YAML_MAP) return NULL;
  for (int i = 0; i < map->n; ++i)
    if (strcmp(map->entries[i].key, key) == 0) return &map->entries[i];
  return NULL;
}

static tsr_err oom(const char *what) {
  return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading %s", what);
}

tsr_err tsr_yaml_add(tsr_yaml_node *map, const char *key, const char *file, int line, int col,
                     tsr_yaml_node *value) {
  char *k = strdup(key);
  if (!k || !grow(map)) {
    free(k);
    tsr_yaml_free(value);
    return oom("a case file");
  }
  map->entries[map->n++] = (tsr_yaml_entry){k, file, line, col, value};
  return TSR_OK;
}

int tsr_yaml_is_null(const tsr_yaml_node *n) {
  if (!n || n->kind != TSR_YAML_SCALAR || n->quoted || n->block) return 0;
  return n->text[0] == '\0' || strcmp(n->text, "~") == 0 || strcasecmp(n->text, "null") == 0;
}

void tsr_yaml_relocate(tsr_yaml_node *n, const char *file, int col0) {
  if (!n) return;
  n->file = file;
  n->line = 0;
  n->col += col0;
  for (int i = 0; i < n->n; ++i) {
    if (n->kind == TSR_YAML_MAP) {
      n->entries[i].file = file;
      n->entries[i].line = 0;
      n->entries[i].col += col0;
      tsr_yaml_relocate(n->entries[i].value, file, col0);
    } else {
      tsr_yaml_relocate(n->items[i], file, col0);
    }
  }
}

static tsr_err syntax_error(pctx *p) {
  const yaml_parser_t *y = &p->parser;
  if (y->error == YAML_MEMORY_ERROR) return oom(p->file);
  const char *problem = y->problem ? y->problem : "malformed YAML";
  if (y->context)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s:%d:%d: YAML syntax error: %s (%s)",
                       p->file, (int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1,
                       problem, y->context);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s:%d:%d: YAML syntax error: %s",
                     p->file, (int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1,
                     problem);
}

static tsr_err next(pctx *p, yaml_event_t *ev) {
  if (!yaml_parser_parse(&p->parser, ev)) return syntax_error(p);
  return TSR_OK;
}

static tsr_err parse_node(pctx *p, yaml_event_t *ev, int depth, tsr_yaml_node **out);

static tsr_err parse_seq(pctx *p, tsr_yaml_node *seq, int depth) {
  for (;;) {
    yaml_event_t ev;
    TSR_CALL(next(p, &ev));
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      return TSR_OK;
    }
    tsr_yaml_node *item = NULL;
    tsr_err err = parse_node(p, &ev, depth + 1, &item);
    yaml_event_delete(&ev);
    if (err) return err;
    if (!grow(seq)) {
      tsr_yaml_free(item);
      return oom(p->file);
    }
    seq->items[seq->n++] = item;
  }
}

static tsr_err parse_map(pctx *p, tsr_yaml_node *map, int depth) {
  for (;;) {
    yaml_event_t ev;
    TSR_CALL(next(p, &ev));
    if (ev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&ev);
      return TSR_OK;
    }
    int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
    if (ev.type != YAML_SCALAR_EVENT) {
      yaml_event_delete(&ev);
      return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                         "%s:%d:%d: a key must be a plain name, not a map or a list", p->file,
                         line, col);
    }
    char *key = strdup((const char *)ev.data.scalar.value);
    yaml_event_delete(&ev);
    if (!key) return oom(p->file);
    const tsr_yaml_entry *dup = tsr_yaml_find(map, key);
    if (dup) {
      tsr_err err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                                "%s:%d:%d: duplicate key '%s' (first given at line %d); keep "
                                "one of them",
                                p->file, line, col, key, dup->line);
      free(key);
      return err;
    }
    tsr_yaml_node *value = NULL;
    tsr_err err = next(p, &ev);
    if (!err) {
      err = parse_node(p, &ev, depth + 1, &value);
      yaml_event_delete(&ev);
    }
    if (err) {
      free(key);
      return err;
    }
    err = tsr_yaml_add(map, key, p->file, line, col, value);
    free(key);
    if (err) return err;
  }
}

/* Builds the node that starts with ev (which the caller deletes). */
static tsr_err parse_node(pctx *p, yaml_event_t *ev, int depth, tsr_yaml_node **out) {
  int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
  if (depth > MAX_DEPTH)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s:%d:%d: nested more than %d levels deep", p->file, line, col,
                       MAX_DEPTH);
  tsr_yaml_node *n = NULL;
  tsr_err err = TSR_OK;
  switch (ev->type) {
  case YAML_ALIAS_EVENT:
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s:%d:%d: YAML aliases (*%s) are not supported in case files; write "
                       "the value out",
                       p->file, line, col, (const char *)ev->data.alias.anchor);
  case YAML_SCALAR_EVENT: {
    if (ev->data.scalar.anchor) break;
    n = tsr_yaml_scalar(p->file, line, col, (const char *)ev->data.scalar.value);
    if (!n) return oom(p->file);
    yaml_scalar_style_t st = ev->data.scalar.style;
    const char *tag = (const char *)ev->data.scalar.tag;
    n->quoted = st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
                (tag && strcmp(tag, YAML_STR_TAG) == 0);
    n->block = st == YAML_LITERAL_SCALAR_STYLE || st == YAML_FOLDED_SCALAR_STYLE;
    *out = n;
    return TSR_OK;
  }
  case YAML_SEQUENCE_START_EVENT:
    if (ev->data.sequence_start.anchor) break;
    n = node_new(TSR_YAML_SEQ, p->file, line, col);
    if (!n) return oom(p->file);
    err = parse_seq(p, n, depth);
    break;
  case YAML_MAPPING_START_EVENT:
    if (ev->data.mapping_start.anchor) break;
    n = node_new(TSR_YAML_MAP, p->file, line, col);
    if (!n) return oom(p->file);
    err = parse_map(p, n, depth);
    break;
  default:
    return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                       "%s:%d:%d: unexpected YAML event %d", p->file, line, col, (int)ev->type);
  }
  if (!n)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s:%d:%d: YAML anchors (&name) are not supported in case files; write "
                       "the value out",
                       p->file, line, col);
  if (err) {
    tsr_yaml_free(n);
    return err;
  }
  *out = n;
  return TSR_OK;
}

/* stream-start, [document-start, node, document-end], stream-end */
static tsr_err parse_stream(pctx *p, tsr_yaml_node **root) {
  yaml_event_t ev;
  TSR_CALL(next(p, &ev)); /* stream start */
  yaml_event_delete(&ev);
  TSR_CALL(next(p, &ev));
  if (ev.type == YAML_STREAM_END_EVENT) {
    yaml_event_delete(&ev);
    return TSR_OK;
  }
  yaml_event_delete(&ev); /* document start */
  TSR_CALL(next(p, &ev));
  tsr_err err = parse_node(p, &ev, 0, root);
  yaml_event_delete(&ev);
  if (err) return err;
  TSR_CALL(next(p, &ev)); /* document end */
  yaml_event_delete(&ev);
  TSR_CALL(next(p, &ev));
  int line = (int)ev.start_mark.line + 1;
  int more = ev.type != YAML_STREAM_END_EVENT;
  yaml_event_delete(&ev);
  TSR_CHECK(!more, TSR_ERR_INPUT,
            "%s:%d:1: a second YAML document ('---'); a case file holds exactly one", p->file,
            line);
  return TSR_OK;
}

tsr_err tsr_yaml_parse(const char *file, const char *text, tsr_yaml_node **root) {
  *root = NULL;
  pctx p = {.file = file};
  if (!yaml_parser_initialize(&p.parser)) return oom(file);
  yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, strlen(text));
  tsr_err err = parse_stream(&p, root);
  yaml_parser_delete(&p.parser);
  if (err) {
    tsr_yaml_free(*root);
    *root = NULL;
  }
  return err;
}
