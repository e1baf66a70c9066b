// The file that carries journal entries between machines (journal/share.h
// moves it through git): serialized and parsed here, with no I/O.
//
// One file, journal.jsonl:
//   line 1   {"format":"phoenix-journal","version":1,"entries":N}
//   then N   one entry per line, sorted by (signature, patch_hash):
//            {"signature","patch_hash","check","failure_type","fixer","files",
//             "patch","duration_ms","verify_ms","model_calls","cost_usd",
//             "tallies":{"<origin id>":{"attempts","successes","failures",
//             "replays","first_seen","last_seen","last_verified",
//             "last_failed","last_failure"}}}
#pragma once

#include <string>
#include <vector>

#include "journal/entry.h"

namespace phoenix::journal {

inline constexpr int kShareVersion = 1;
inline constexpr const char* kShareFile = "journal.jsonl";

// The file's bytes for `entries` (sorted as above; the order given does
// not matter).
std::string serialize(std::vector<Entry> entries);

// Parses and validates the whole file before anything is merged: every
// line JSON, the header's format and version, every required field with
// its type, signatures and hashes 64 hex, the patch hash matching the
// patch, the patch a patch (libgit2 parses it), no entry twice, the entry
// count matching. The first problem throws
// Error("WHERE: line N: WHAT"); a newer version says so.
std::vector<Entry> parse(const std::string& text, const std::string& where);

}  // namespace phoenix::journal
