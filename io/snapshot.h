/* Snapshots for viewing (DESIGN.md, State on disk): DIR/snapshot_<step, 8 digits>.h5 holds
 * the fields as global datasets /fields/<component> (float64, or float32 for single
 * precision; contiguous, no checksums) with io/output.h's root attributes (time, step, lo, hi,
 * cells, tessera_version), independent of the decomposition. DIR/snapshots.xmf lists every
 * snapshot of the series with its time, as one XDMF Temporal collection that ParaView and
 * VisIt open as a time series; it is rewritten atomically after each snapshot. Both files are
 * written under temporary names and renamed when complete. */
#ifndef TSR_SNAPSHOT_H
#define TSR_SNAPSHOT_H

#include <mpi.h>
#include <stdint.h>

#include "decomp/box.h"
#include "io/error.h"
#include "io/output.h"

typedef struct tsr_snapshot_series tsr_snapshot_series;

typedef struct {
  int single;    /* 1: float32 datasets (HDF5 converts the doubles); 0: float64 */
  int serial_io; /* 1: ranks write in turn even where HDF5 is parallel (output.io: serial) */
} tsr_snapshot_opts;

/* Starts the series of nfield fields called names (borrowed: they must outlive the series)
 * on grid (its time and step are not used) in dir, which exists. from < 0: a new series; its
 * first snapshot replaces any older snapshots.xmf. from >= 0, a run restarted at step from:
 * the series goes on from the entries of dir/snapshots.xmf at steps <= from whose files are
 * still there; the snapshot files past from (a longer earlier run's) are deleted, their
 * entries dropped, and snapshots.xmf is rewritten without them at once. Collective over comm
 * (rank 0 reads and writes the XDMF file and deletes); comm is borrowed too. *out is new (tsr_snapshot_close). Errors: TSR_ERR_IO,
 * TSR_ERR_MEMORY, the same on every rank. */
tsr_err tsr_snapshot_open(MPI_Comm comm, const char *dir, const tsr_grid_meta *grid, int nfield,
                          const char *const *names, int64_t from, const tsr_snapshot_opts *opts,
                          tsr_snapshot_series **out);

/* Writes DIR/snapshot_<step>.h5 at time t and adds it to snapshots.xmf (replacing an entry of
 * the same step). Collective; rank r passes its owned box and, per field, its owned cells
 * contiguous in x-fastest order, as tsr_output_write_fields. Errors: TSR_ERR_IO, TSR_ERR_HDF5,
 * TSR_ERR_MEMORY, the same on every rank; the previous series file then stays as it was. */
tsr_err tsr_snapshot_write(tsr_snapshot_series *s, int64_t step, double t, const tsr_box *owned,
                           const double *const *data);

/* The number of snapshots the series lists (meaningful on rank 0; 0 elsewhere). */
int tsr_snapshot_count(const tsr_snapshot_series *s);

/* The number of snapshot files past the restart step that tsr_snapshot_open deleted
 * (meaningful on rank 0; 0 elsewhere). */
int tsr_snapshot_removed(const tsr_snapshot_series *s);

/* Frees the series and sets *s to NULL; accepts NULL. Not collective. */
void tsr_snapshot_close(tsr_snapshot_series **s);

#endif
