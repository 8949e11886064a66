/* Private to solver/pinn/iface*.c: the exchange handle of both backends. */
#ifndef TSR_PINN_IFACE_IMPL_H
#define TSR_PINN_IFACE_IMPL_H

#include "solver/pinn/iface.h"

typedef struct {
  tsr_err (*begin)(tsr_pinn_iface *x, const double *send, double *recv, void *stream);
  tsr_err (*end)(tsr_pinn_iface *x, void *stream);
  void (*destroy)(tsr_pinn_iface *x);
  int device;
} tsr_pinn_iface_ops;

struct tsr_pinn_iface {
  const tsr_pinn_iface_ops *ops;
  int npeer, nv;
  int *peer, *start, *count; /* copies of the peers' */
  int in_flight;
  void *impl;                /* the backend's */
};

/* The common part: peers copied. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_pinn_iface_init(tsr_pinn_iface *x, const tsr_pinn_peers *peers, int nv);

#endif
