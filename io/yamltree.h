/* A small YAML tree for case files: maps, sequences and scalars, each with the position it was
 * written at, so that validation can name FILE:LINE:COL long after libyaml is gone.
 *
 * Private to io/case*.c. Nodes that come from a --set override carry the override text as
 * their file and line 0 (col: 1-based column inside the override text). */
#ifndef TSR_YAMLTREE_H
#define TSR_YAMLTREE_H

#include "io/error.h"

typedef enum { TSR_YAML_SCALAR, TSR_YAML_MAP, TSR_YAML_SEQ } tsr_yaml_kind;

typedef struct tsr_yaml_node tsr_yaml_node;

typedef struct {
  char *key;
  const char *file;    /* borrowed, like the node's */
  int line, col;       /* of the key */
  tsr_yaml_node *value;
} tsr_yaml_entry;

struct tsr_yaml_node {
  tsr_yaml_kind kind;
  const char *file;    /* borrowed: the case path or the override text; outlives the tree */
  int line, col;       /* 1-based start of the node; line 0 for override nodes */
  int quoted;          /* scalar written in quotes (or tagged !!str): a string, never a number */
  int block;           /* scalar written as a | or > block */
  char *text;          /* scalar text, NUL-terminated */
  int n, cap;          /* map entries or sequence items */
  tsr_yaml_entry *entries;
  tsr_yaml_node **items;
};

/* Parses text (one YAML document) into *root, owned by the caller (tsr_yaml_free). An empty
 * document gives *root = NULL. file is borrowed by every node. Errors: TSR_ERR_INPUT with
 * "FILE:LINE:COL: YAML syntax error: ..." or a duplicate key / alias / second document
 * message; TSR_ERR_MEMORY. */
tsr_err tsr_yaml_parse(const char *file, const char *text, tsr_yaml_node **root);

/* A scalar node holding a copy of text, or NULL when out of memory. */
tsr_yaml_node *tsr_yaml_scalar(const char *file, int line, int col, const char *text);

/* An empty map node, or NULL when out of memory. */
tsr_yaml_node *tsr_yaml_map(const char *file, int line, int col);

/* The entry for key in a map node, or NULL (also when map is NULL or not a map). */
tsr_yaml_entry *tsr_yaml_find(const tsr_yaml_node *map, const char *key);

/* Adds key -> value to map (taking value) with the key's position. Errors: TSR_ERR_MEMORY
 * (value is then freed). */
tsr_err tsr_yaml_add(tsr_yaml_node *map, const char *key, const char *file, int line, int col,
                     tsr_yaml_node *value);

/* 1 for a YAML null: a plain scalar "", "~" or "null" (any case). */
int tsr_yaml_is_null(const tsr_yaml_node *n);

/* Moves every node of the tree to an override: file, line 0, columns shifted by col0. */
void tsr_yaml_relocate(tsr_yaml_node *n, const char *file, int col0);

/* Frees the tree; accepts NULL. */
void tsr_yaml_free(tsr_yaml_node *n);

#endif
