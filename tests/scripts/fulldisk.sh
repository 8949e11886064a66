#!/usr/bin/env bash
# A real full disk during a checkpoint or the final write, on 2 and 3 ranks, with parallel HDF5
# (output.io: auto), ranks writing in turn (output.io: serial) and checkpoints in parts, each
# rank its own file at the same time (output.io: parts): the output directory is a
# small tmpfs, and statvfs() reports plenty of room (tests/support/plenty_statvfs.c, preloaded)
# so that tessera's free-space check passes and the disk fills during the write, as when
# another job fills it at that moment. Each run must end within a time limit (no rank left
# waiting in a collective call) with exit 1 on every rank and one message naming the file
# (`cannot write '<file>': no space left on device`), leave no temporary file, keep `latest`
# on the previous checkpoint, and continue from it (on a disk with room) to final fields
# bitwise equal to an uninterrupted run's. Where the file system has fallocate, the space
# reserved for the file meets the full disk before any rank writes; legs without it (the shim
# makes fallocate fail) have the ranks-in-turn write fail part way. Needs root for mount:
# elsewhere it exits 77, which CTest reports as skipped.
set -u
. "$(dirname "$0")/lib.bash"
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root (uid $(id -u))"
: "${TSR_PLENTY_STATVFS:?set by CTest: the statvfs shim library}"
[ -f "$TSR_PLENTY_STATVFS" ] || skip "no statvfs shim at '$TSR_PLENTY_STATVFS'"
work=$(mktemp -d)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
probe=$work/probe
mkdir -p "$probe"
why=$(mount -t tmpfs -o size=64k tmpfs "$probe" 2>&1) || skip "mount -t tmpfs is not permitted here: $why"
umount "$probe"
# mount_small DIR KIB: a tmpfs of KIB KiB at DIR
mount_small() { mkdir -p "$1" && mount -t tmpfs -o size="$2"k tmpfs "$1" && mounts+=("$1"); }

heat_case "$work/heat.yaml" 160 120
case=$work/heat.yaml
B=$TESSERA_BIN
run_ok "reference np1" 1 "$case" --out "$work/ref" || { finish; exit 1; }
ref=$work/ref/final.h5
# AddressSanitizer builds refuse a preloaded library ahead of their runtime unless told
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# full NP OUT ARGS...: tessera run on NP ranks with the shim, each rank's exit code on a line
# "rank-exit R CODE" (mpiexec waits for every rank: Open MPI is told not to end the others at
# the first failure); mpiexec's own status in $rc (124: the time limit ended a hang)
full() {
  local np=$1 out=$2
  shift 2
  log=$(OMPI_MCA_orte_abort_on_non_zero_status=0 timeout -k 10 90 "$MPIEXEC" -n "$np" \
    env LD_PRELOAD="$TSR_PLENTY_STATVFS" ASAN_OPTIONS="$asan" \
    TSR_SHIM_NO_FALLOCATE="${TSR_SHIM_NO_FALLOCATE:-0}" bash -c \
    '"$@"; c=$?; echo "rank-exit ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-?}} $c" >&2; exit $c' \
    rank "$B" run "$case" --out "$out" "$@" 2>&1)
  rc=$?
}
has() { # has LABEL PATTERN: the last log holds the fixed string
  if printf '%s' "$log" | grep -qF -- "$2"; then pass "$1"
  else printf '%s\n' "$log" | tail -15; failure "$1 (no '$2')"; fi
}
# fails_cleanly LABEL NP FILE: exit 1 on every rank in time, the message (FILE: an extended
# regular expression), no noise
fails_cleanly() {
  local label=$1 np=$2 file=$3
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then failure "$label: hung (ended by the time limit)"; return; fi
  local ones
  ones=$(printf '%s\n' "$log" | grep -c '^rank-exit [0-9]* 1$')
  if [ "$ones" = "$np" ]; then pass "$label: exit 1 on all $np ranks"
  else printf '%s\n' "$log" | tail -15; failure "$label: $ones of $np ranks exited 1 (mpiexec rc $rc)"; fi
  if printf '%s' "$log" | grep -qE -- "cannot write '$file': no space left on device"; then
    pass "$label: the message names the file"
  else printf '%s\n' "$log" | tail -15; failure "$label: no message naming $file"; fi
  if printf '%s' "$log" | grep -qE "HDF5-DIAG|infinite loop closing library|mca_fbtl|Segmentation"; then
    printf '%s\n' "$log" | grep -E "HDF5-DIAG|infinite loop|mca_fbtl|Segmentation" | head -3
    failure "$label: noise from HDF5 or MPI-IO"
  else pass "$label: no HDF5 or MPI-IO noise"; fi
}
# continues LABEL DIR: latest restarts (2 ranks, a disk with room) to the uninterrupted result
continues() {
  local copy=$work/copy-$RANDOM
  cp -r "$2" "$copy" &&
    run_ok "$1: restart from latest" 2 "$case" --out "$copy" --restart latest || return
  if h5diff -q "$ref" "$copy/final.h5" /fields /fields >/dev/null 2>&1; then
    pass "$1: restart from latest = uninterrupted run (bitwise)"
  else failure "$1: restart from latest differs from the uninterrupted run"; fi
}

# Checkpoint 3 fits (its reservation too); checkpoint 6 does not, with 3 still on the disk.
# "nofalloc": a file system without fallocate (the shim's TSR_SHIM_NO_FALLOCATE), where nothing
# is reserved and the write fails part way; there `auto` has the ranks write in turn instead of
# through parallel HDF5, whose collective calls a failing write could leave (README, Recovery).
# Parts reserve each its own room, at the same time: 400 KiB let checkpoint 3's two
# reservations fit. Where a part fails the message names it (the lowest failing rank's).
for leg in auto:2:300 auto:3:300 serial:2:300 serial:3:300 serial:2:300:nofalloc \
  serial:3:300:nofalloc auto:2:300:nofalloc parts:2:400 parts:3:300:nofalloc; do
  IFS=: read -r io np kib nofalloc <<<"$leg"
  export TSR_SHIM_NO_FALLOCATE=$([ -n "$nofalloc" ] && echo 1 || echo 0)
  l="checkpoint, io $io, np$np${nofalloc:+, no fallocate}"
  d=$work/ck-$io-$np$nofalloc
  mount_small "$d" $kib || { failure "$l: mount"; continue; }
  full $np "$d/out" --set output.io=$io
  name=checkpoint_00000006 three="checkpoint_00000003.h5"
  if [ $io = parts ]; then
    fails_cleanly "$l" $np "$d/out/$name\.part000[0-9]\.h5"
    for ((r = 0; r < np; ++r)); do three="$three checkpoint_00000003.part000$r.h5"; done
  else fails_cleanly "$l" $np "$d/out/$name\.h5"; fi
  left=$(ls "$d/out" | paste -sd' ' -)
  if [ "$left" = "$three latest" ] && [ "$(cat "$d/out/latest")" = checkpoint_00000003.h5 ]; then
    pass "$l: no temporary left, latest still names checkpoint 3"
  else failure "$l: files left: $left"; fi
  continues "$l" "$d/out"
done

# final.h5: checkpoints (keep 1) and snapshots 0 and 10 fit, the final fields do not (without
# fallocate, 540 KiB: nothing reserved for them)
for leg in auto:3:640 serial:2:640 serial:2:540:nofalloc auto:3:540:nofalloc; do
  IFS=: read -r io np kib nofalloc <<<"$leg"
  export TSR_SHIM_NO_FALLOCATE=$([ -n "$nofalloc" ] && echo 1 || echo 0)
  l="final, io $io, np$np${nofalloc:+, no fallocate}"
  d=$work/fin-$io$nofalloc
  mount_small "$d" $kib || { failure "$l: mount"; continue; }
  full $np "$d/out" --set output.io=$io --set output.keep=1 --set output.snapshot_every=10
  fails_cleanly "$l" $np "$d/out/final\.h5"
  left=$(ls "$d/out" | paste -sd' ' -)
  if [ "$left" = "checkpoint_00000009.h5 latest snapshot_00000000.h5 snapshot_00000010.h5 snapshots.xmf" ] &&
    [ "$(cat "$d/out/latest")" = checkpoint_00000009.h5 ]; then
    pass "$l: no final.h5 nor temporary, latest names checkpoint 9"
  else failure "$l: files left: $left"; fi
  continues "$l" "$d/out"
done
finish
