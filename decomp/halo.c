/* The split-phase halo exchange as one handle over two backends (MPI on host fields in
 * halo_mpi.c, NCCL on device fields in halo_nccl_cuda.c). The misuse rules live here once, so
 * both backends report them alike; the backends only move data. */
#include "decomp/halo_impl.h"

#include <stddef.h>

static const char *mem_name(tsr_mem m) { return m == TSR_MEM_DEVICE ? "device" : "host"; }

tsr_err tsr_halo_check_begin(const tsr_halo *h, const tsr_field *f, const char *call) {
  TSR_CHECK(h != NULL, TSR_ERR_STATE, "%s on a NULL halo exchange", call);
  const tsr_halo_plan *p = h->plan;
  TSR_CHECK(h->active == NULL, TSR_ERR_STATE,
            "rank %d: %s while an exchange is in flight; call tsr_halo_end first", p->rank,
            call);
  TSR_CHECK(f != NULL, TSR_ERR_STATE, "rank %d: halo exchange on a NULL field", p->rank);
  TSR_CHECK(tsr_box_equal(&f->box, &p->owned) && f->ghost >= p->ghost && f->ncomp == h->ncomp,
            TSR_ERR_STATE,
            "rank %d: the field (box [%d,%d)x[%d,%d)x[%d,%d), ghost %d, %d components) does "
            "not match the halo exchange (box [%d,%d)x[%d,%d)x[%d,%d), ghost %d, %d components)",
            p->rank, f->box.lo[0], f->box.hi[0], f->box.lo[1], f->box.hi[1], f->box.lo[2],
            f->box.hi[2], f->ghost, f->ncomp, p->owned.lo[0], p->owned.hi[0], p->owned.lo[1],
            p->owned.hi[1], p->owned.lo[2], p->owned.hi[2], p->ghost, h->ncomp);
  TSR_CHECK(f->mem == h->ops->mem, TSR_ERR_STATE,
            "rank %d: the %s halo exchange needs a %s field, not a %s field", p->rank,
            h->ops->name, mem_name(h->ops->mem), mem_name(f->mem));
  return TSR_OK;
}

tsr_err tsr_halo_check_end(const tsr_halo *h, const tsr_field *f, const char *call) {
  TSR_CHECK(h != NULL, TSR_ERR_STATE, "%s on a NULL halo exchange", call);
  TSR_CHECK(h->active != NULL, TSR_ERR_STATE, "rank %d: %s without tsr_halo_begin",
            h->plan->rank, call);
  TSR_CHECK(h->active == f, TSR_ERR_STATE,
            "rank %d: %s on a different field than its tsr_halo_begin", h->plan->rank, call);
  return TSR_OK;
}

void tsr_halo_forget(tsr_halo *h) {
  if (h) h->active = NULL;
}

tsr_err tsr_halo_begin(tsr_halo *h, tsr_field *field) {
  TSR_CALL(tsr_halo_check_begin(h, field, "tsr_halo_begin"));
  TSR_CALL(h->ops->begin(h, field));
  h->active = field;
  return TSR_OK;
}

tsr_err tsr_halo_end(tsr_halo *h, tsr_field *field) {
  TSR_CALL(tsr_halo_check_end(h, field, "tsr_halo_end"));
  /* idle even when the end failed: the backend has abandoned what was in flight */
  tsr_err e = h->ops->end(h, field);
  h->active = NULL;
  return e;
}

void tsr_halo_destroy(tsr_halo **hp) {
  if (!hp || !*hp) return;
  (*hp)->ops->destroy(*hp);
  *hp = NULL;
}
