/* Private to decomp/halo*.c: the state every halo backend shares and the table of a backend's
 * operations. tsr_halo (halo.c) checks the misuse cases once for all backends and then calls
 * the backend; a backend's struct starts with a struct tsr_halo so that it can be cast. */
#ifndef TSR_HALO_IMPL_H
#define TSR_HALO_IMPL_H

#include "decomp/halo.h"

typedef struct tsr_halo_ops {
  const char *name; /* "MPI", "NCCL": for messages */
  tsr_mem mem;      /* the memory space of the fields this backend exchanges */
  /* Plain split-phase calls; the field has been checked against the plan and the state. */
  tsr_err (*begin)(tsr_halo *h, tsr_field *f);
  tsr_err (*end)(tsr_halo *h, tsr_field *f);
  /* Waits for anything in flight and frees the backend's state, h included. */
  void (*destroy)(tsr_halo *h);
} tsr_halo_ops;

struct tsr_halo {
  const tsr_halo_ops *ops;
  const tsr_halo_plan *plan; /* borrowed */
  int ncomp;
  int npeer;         /* the plan's peers when the per-peer arrays were sized: a rebalance
                        rebuilds the plan in place before the exchange goes or is refitted */
  tsr_field *active; /* the field of the exchange in flight, NULL when idle */
};

/* The misuse checks of a begin (call names the public function for the message): h not
 * NULL, nothing in flight, the field matches the plan, ncomp and the backend's memory space.
 * Errors: TSR_ERR_STATE. */
tsr_err tsr_halo_check_begin(const tsr_halo *h, const tsr_field *f, const char *call);

/* The misuse checks of an end: an exchange in flight, on this field. Errors: TSR_ERR_STATE. */
tsr_err tsr_halo_check_end(const tsr_halo *h, const tsr_field *f, const char *call);

#endif
