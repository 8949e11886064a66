/* Tile shape of tsr_steps_host (kernels/steps.h), for the tests and benchmarks that tune it. */
#ifndef TSR_STEPS_HOST_H
#define TSR_STEPS_HOST_H

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the cells per tile along x, y, z for later calls of tsr_steps_host in this process
 * (NULL or a 0 entry: the default along that axis, kernels/steps_host.c says which). A tile
 * is what one thread advances the m steps at once, before each step's halo of m * radius
 * cells; an axis is split into equal tiles at most this long. 3D tiles are columns of the
 * whole z range (z is ignored). Not thread-safe: call it between steps. */
void tsr_steps_host_set_tile(const int tile[3]);

#ifdef __cplusplus
}
#endif

#endif
