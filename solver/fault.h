/* Fault injection, for tests only (tessera run --inject-fault): makes a run fail the ways a
 * long run fails in production (a rank dies, hangs, leaves a damaged checkpoint, meets a full
 * disk) so that the recovery paths (the watchdog, tessera supervise, restart from the newest
 * good checkpoint) are exercised by CI. A fault fires in the first launch only: when
 * TESSERA_ATTEMPT (set by tessera supervise) is unset or 1; a relaunch runs clean. */
#ifndef TSR_FAULT_H
#define TSR_FAULT_H

#include <stdint.h>

#include "io/case.h"
#include "io/error.h"

typedef enum {
  TSR_FAULT_NONE = 0,
  TSR_FAULT_EXIT,    /* rank R _exit(1)s right after step S */
  TSR_FAULT_HANG,    /* rank R sleeps forever after step S, outside MPI */
  TSR_FAULT_CORRUPT, /* after the checkpoint of step S, rank R damages it and _exit(1)s */
  TSR_FAULT_ENOSPC,  /* the checkpoint of step S meets a full disk (ENOSPC from the kernel) */
  TSR_FAULT_GRAPH,   /* rank R's capture of the step to S into a CUDA graph fails (CUDA
                        backend with gpu.graphs: the run falls back to plain launches) */
  TSR_FAULT_SIGNAL,  /* rank R sends itself SIGTERM after step S (0: before the first step):
                        the run stops with a checkpoint (solver/stop.h) */
  TSR_FAULT_SIGNAL2, /* the same twice: the second ends the process at once */
  TSR_FAULT_NAN      /* method pinn: a parameter becomes NaN after iteration S, so the loss
                        of the next one is NaN (the run stops; its checkpoints stay good) */
} tsr_fault_kind;

typedef struct {
  tsr_fault_kind kind;
  int rank;     /* default 0 */
  int64_t step; /* >= 1 */
} tsr_fault;

/* Parses "rank=R,step=S,kind=exit|hang|corrupt|enospc|graph|signal|signal2|nan" (keys in any order; rank defaults to
 * 0; step and kind required) into *f. Errors: TSR_ERR_INPUT with a message that names the
 * part that is wrong and shows the expected form. */
tsr_err tsr_fault_parse(const char *spec, tsr_fault *f);

/* Name of a kind ("exit", ...). Static storage. */
const char *tsr_fault_kind_name(tsr_fault_kind k);

/* 1 when faults may fire in this process: TESSERA_ATTEMPT is unset, empty or 1. */
int tsr_fault_armed(void);

/* Damages the checkpoint file at path the way a failing disk or node would: flips bytes in
 * the middle of the first chunk of its first field (the Fletcher32 checksum then fails), or,
 * where its chunks cannot be located, the superblock signature. Not collective. Errors:
 * TSR_ERR_IO naming the file. */
tsr_err tsr_fault_damage_file(const char *path);

/* Refuses a fault that cannot fire in this run: rank R outside 0..size-1, step S past the
 * run's nsteps, corrupt or enospc at a step that writes no checkpoint (as `every` schedules
 * them with time step dt, none at the last step; every NULL: no checkpoints). A fault that
 * is not armed (a relaunch, tsr_fault_armed) is not checked: it never fires, and a relaunch
 * on fewer ranks may have lost its rank. Errors: TSR_ERR_INPUT. */
tsr_err tsr_fault_check(const tsr_fault *f, int size, int64_t nsteps, const tsr_case_every *every,
                        double dt);

/* Hooks of the step loop; each does nothing unless f (may be NULL) is due and armed.
 * before_checkpoint: for enospc at this step, arms the output layer (tsr_output_inject_enospc)
 * so the checkpoint's write meets a full disk. after_step: for exit, hang and corrupt on this
 * rank at this step (after its checkpoint, if any), does what the kind says; does not return
 * then. dir is the output directory (its `latest` names the checkpoint to damage). */
void tsr_fault_before_checkpoint(const tsr_fault *f, int64_t step);
void tsr_fault_after_step(const tsr_fault *f, int rank, int64_t step, const char *dir);

/* 1 when f is a due and armed graph fault of this rank for the step to `step`: its capture
 * into a CUDA graph must fail (solver/graph_cuda.c). f may be NULL. */
int tsr_fault_graph_due(const tsr_fault *f, int rank, int64_t step);

#endif
