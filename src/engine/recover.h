// Recovery of a run that was interrupted (killed, power cut) part-way.
//
// A run leaves `run.start` (with its HEAD, whether the tree was dirty and
// its root) and, before its first write to the work tree, a `checkpoint`
// event in the trace; a finished run leaves `run.end`. A `run.start`
// without a later `run.end` is an interrupted run, and recover():
//   - waits for no one: a live run holding .phoenix/lock is an error naming
//     its pid;
//   - when the run had written to the work tree, keeps the tree as it is
//     under refs/phoenix/abandoned/<time>-recover (so nothing is lost) and
//     puts it back as it was before the run (the pre-run checkpoint); a
//     verified heal commit on top of the pre-run HEAD with a clean tree is a
//     consistent state and stays;
//   - finishes an escalation cut short: the incident note gets its state
//     line (an emptied note is rewritten to say what happened) and the
//     ESCALATED flag is written;
//   - removes stray temporary files of atomic writes in .phoenix/ and
//     incidents/;
//   - appends `recover` and `run.end` events, so a second recover does
//     nothing.
// The torn last trace line, if any, is repaired first by the caller
// (trace::repair_torn_tail).
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace phoenix::engine {

// What was done, one line each; empty when the repository was consistent.
std::vector<std::string> recover(const std::string& root, trace::Trace& trace);

}  // namespace phoenix::engine
