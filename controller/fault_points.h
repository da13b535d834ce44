// Crash points for the kill -9 tests: when FLEXCSI_CONTROLLER_CRASH_AFTER names a step, the
// process SIGKILLs itself right after that step (no destructors, no flush: a real crash).
// Steps: journal-begin, create-volume, pv-create, delete-volume, pv-delete, expand-volume,
// create-snapshot. An optional ":N" suffix crashes on the N-th time the step is reached.
#pragma once

namespace flexcsi::controller {

void CrashPoint(const char* step);

}  // namespace flexcsi::controller
