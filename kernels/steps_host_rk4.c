/* RK4's time tiles (kernels/steps_host_tiles.h), in a file of their own so that their four
 * stage kinds compile alongside the other schemes' (steps_host.c). */
#define TSR_STEPS_HOST_RK4 1
#include "kernels/steps_host_tiles.h"

void tsr_steps_host_rk4(const tsr_stage_desc *s, const plan *p, const tsr_steps_bc *bc,
                        const tsr_field *in, const tsr_field *src, tsr_field *out, char *bufs,
                        size_t per_thread, int nthreads) {
  pass(s, p, bc, in, src, out, bufs, per_thread, nthreads);
}
