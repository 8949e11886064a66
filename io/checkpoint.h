/* Checkpoints (DESIGN.md, State on disk): DIR/checkpoint_<step, 8 digits>.h5 holds the state
 * as global datasets /fields/<comp> (chunked, Fletcher32 checksums), independent of the
 * decomposition, and root attributes step, time, dt, case_text, case_hash (16 hex digits),
 * tessera_version, lo, hi, cells, boxes (int64, lo x y z then hi x y z of each rank's owned
 * box, in rank order: the decomposition that wrote it). DIR/latest names the newest; the newest `keep` are kept. */
#ifndef TSR_CHECKPOINT_H
#define TSR_CHECKPOINT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "decomp/box.h"
#include "decomp/rebalance.h"
#include "io/error.h"
#include "io/output.h"

/* What a checkpoint says about itself, besides its fields. */
typedef struct {
  int64_t step;
  double time, dt;
  char case_hash[17]; /* hex */
  char path[4096];    /* the file read */
  int dim, cells[3];  /* its grid */
  int refused;        /* 1: the accept hook refused it (its error is the one returned) */
} tsr_checkpoint_info;

/* Decides whether a checkpoint may be used, from its attributes (everything in info but the
 * fields), before its fields are read: TSR_OK to read them, else an error with its message
 * (a checkpoint of another case, say). Called on every rank with the same info; it must
 * return the same on every rank (it may call collective functions on the checkpoint's comm). */
typedef tsr_err (*tsr_checkpoint_accept)(const tsr_checkpoint_info *info, void *arg);

/* Writes the checkpoint of meta->step into dir (temporary name, then renamed), then rank 0
 * points dir/latest at it (also atomically) and removes all but the newest keep checkpoints
 * (keep 0: none; the caller prunes later with tsr_checkpoint_prune, off its critical path).
 * Collective; arguments as tsr_output_write_fields, layout as tsr_output_opts (NULL: data holds
 * the owned cells contiguous; else data is not used); io (output.io, TSR_OUTPUT_IO_*): auto
 * writes collectively where HDF5 is parallel and in parts where it is serial (several ranks),
 * serial makes ranks write in turn into one file, parts in parts (io/output.h); a checkpoint
 * in parts is DIR/checkpoint_<step>.h5 and one .part<rank>.h5 file per rank beside it, removed
 * with it; more, nmore: more root attributes, as tsr_checkpoint_write_file_more; threads: OpenMP threads that build the
 * checksummed chunks when ranks write in turn (tsr_output_opts). *committed (may be NULL): 1
 * once the checkpoint file is complete under its name, so that an error after it (dir/latest
 * not updated) can say the file is good. Errors: TSR_ERR_IO, TSR_ERR_HDF5, the same on every
 * rank. */
tsr_err tsr_checkpoint_write(MPI_Comm comm, const char *dir, const tsr_grid_meta *meta,
                             int io, int threads, double dt, const char *case_text,
                             uint64_t case_hash, int keep,
                             const tsr_box *owned, int nfield, const char *const *names,
                             const double *const *data, const tsr_output_layout *layout,
                             const tsr_rebalance_state *rebal, const tsr_output_attr *more,
                             int nmore, int *committed);

/* Writes one file at path with a checkpoint's datasets and attributes (as
 * tsr_checkpoint_write, without dir/latest and the removal of old ones): final.h5, which a run
 * continued to a later end restarts from. rebal (NULL: none) is recorded as the root
 * attributes rebalance_counts (int64: migrations, last_bytes) and rebalance_seconds, so that
 * a restart on the same ranks goes on with its rebalanced boxes. Collective; errors as
 * tsr_checkpoint_write. */
tsr_err tsr_checkpoint_write_file(MPI_Comm comm, const char *path, const tsr_grid_meta *meta,
                                  int io, int threads, double dt, const char *case_text,
                                  uint64_t case_hash, const tsr_box *owned, int nfield,
                                  const char *const *names, const double *const *data,
                                  const tsr_output_layout *layout,
                                  const tsr_rebalance_state *rebal);

/* At most this many attributes in tsr_checkpoint_write_file_more's more. */
#define TSR_CHECKPOINT_MAX_MORE 16

/* As tsr_checkpoint_write_file, with nmore more root attributes (more[i], names that are not
 * the checkpoint's own; at most TSR_CHECKPOINT_MAX_MORE): what a method needs beside the
 * fields to continue (method implicit: the step it takes next, BDF's history and its times).
 * Collective; errors as tsr_checkpoint_write, TSR_ERR_INTERNAL for too many. */
tsr_err tsr_checkpoint_write_file_more(MPI_Comm comm, const char *path,
                                       const tsr_grid_meta *meta, int io, int threads, double dt,
                                       const char *case_text, uint64_t case_hash,
                                       const tsr_box *owned, int nfield,
                                       const char *const *names, const double *const *data,
                                       const tsr_output_layout *layout,
                                       const tsr_rebalance_state *rebal,
                                       const tsr_output_attr *more, int nmore);

/* Removes all but the newest keep (at least 1) checkpoints of dir, never the one dir/latest
 * names. Not collective: one process calls it (rank 0, after its tsr_checkpoint_write), from
 * any thread: it touches only the files. A file that will not go is left; the next call tries
 * again. */
void tsr_checkpoint_prune(const char *dir, int keep);

/* dir/latest := name (a file name in dir), atomically; for checkpoints another writer made
 * (the PINN's). Errors: TSR_ERR_IO, TSR_ERR_MEMORY. Not collective. */
tsr_err tsr_checkpoint_set_latest(const char *dir, const char *name);

/* The file name dir/latest holds ("" when none) into name (n bytes). Not collective. */
void tsr_checkpoint_get_latest(const char *dir, char *name, size_t n);

/* dir/checkpoint_<step, 8 digits>.h5 into buf (n bytes). Returns buf. */
char *tsr_checkpoint_path(char *buf, size_t n, const char *dir, int64_t step);

/* --restart latest's search, which every method shares: the candidates in dir, newest first,
 * and the first of them that reads. */

/* The checkpoint_<step>.h5 names in dir (at most max, the newest kept), newest first, with the
 * one dir/latest names first; *named says whether latest named one. Returns the count. Not
 * collective: the caller's reading rank lists, and shares the names where others read. */
int tsr_checkpoint_candidates(const char *dir, char (*name)[64], int max, int *named);

/* Reads one candidate (tsr_checkpoint_first): TSR_OK when it was read, at ("step 40",
 * "iteration 12") saying where it was written; *refused when it reads but this run refuses it
 * (another case, another decomposition), which an older file would be refused for as well. */
typedef tsr_err (*tsr_checkpoint_reader)(const char *path, int *refused, char *at, size_t n,
                                         void *arg);

/* Reads the first of path[0 .. n) that reads: a damaged one is skipped, and when say (the
 * reading's rank 0) it is named on stderr; a refused one ends the search with its error. The
 * first lead paths are where the run left off (what dir/latest names, when named, and the
 * caller's own first choice): when a later one is used, say tells why on stdout, with the file
 * and its at. *used: the index read. Collective where read is. Errors: TSR_ERR_INPUT naming each
 * failure when none reads (and when n is 0); a refusal's error. */
tsr_err tsr_checkpoint_first(int say, const char *dir, int n, const char *const *path, int named,
                             int lead, tsr_checkpoint_reader read, void *arg, int *used);

/* Reads the owned hyperslab of each field of the checkpoint at path (any decomposition) into
 * data[f] (tsr_box_cells(owned) values, x fastest) and its attributes into *info; accept (when
 * not NULL) sees the attributes first and may refuse the file. Collective. Errors:
 * TSR_ERR_INPUT naming the file for a missing, truncated or damaged file ("not a valid
 * checkpoint") or a failed checksum ("checksum error"); accept's error; the same on every
 * rank. */
tsr_err tsr_checkpoint_read(MPI_Comm comm, const char *path, int nfield,
                            const char *const *names, const tsr_box *owned, double *const *data,
                            tsr_checkpoint_info *info, tsr_checkpoint_accept accept, void *arg);

/* Number of checkpoint files (checkpoint_<step>.h5, readable or not) in dir, as rank 0 sees it
 * (0 when dir cannot be listed). Collective. */
int tsr_checkpoint_count(MPI_Comm comm, const char *dir);

/* As tsr_checkpoint_read for spec "latest" (dir/latest, else the newest checkpoint in dir that
 * reads; rank 0 says on stdout which one it used when it is not the one latest names) or a
 * file name. A checkpoint that accept refuses ends the search with its error: an older one
 * is no better answer to a question about the case. Errors: TSR_ERR_INPUT when none reads
 * (every failure is listed); accept's error. */
tsr_err tsr_checkpoint_load(MPI_Comm comm, const char *spec, const char *dir, int nfield,
                            const char *const *names, const tsr_box *owned, double *const *data,
                            tsr_checkpoint_info *info, tsr_checkpoint_accept accept, void *arg);

/* The case text the checkpoint at path records (root attribute case_text; io/case.h
 * tsr_case_record), in a new string the caller frees, the same on every rank. Collective.
 * Errors: TSR_ERR_INPUT (no such file or attribute), TSR_ERR_HDF5, TSR_ERR_MEMORY. */
tsr_err tsr_checkpoint_case_text(MPI_Comm comm, const char *path, char **text);

/* The decomposition a checkpoint was written on (root attribute boxes) when it has nranks boxes:
 * boxes[r] the box of rank r and *found 1; else *found 0. *has_state: 1 when it records the
 * rebalancer's state, then in *state. Collective. Errors: TSR_ERR_INPUT (no such file, an
 * attribute of the wrong size), TSR_ERR_HDF5. */
tsr_err tsr_checkpoint_read_layout(MPI_Comm comm, const char *path, int nranks, tsr_box *boxes,
                                   int *found, tsr_rebalance_state *state, int *has_state);

#endif
