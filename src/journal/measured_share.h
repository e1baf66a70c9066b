// Sharing the measurement store (checks/measured.h) through git, as the
// journal is shared (journal/share.h): `phoenix journal push|pull [REMOTE]`
// also carries refs/phoenix/measured, a commit whose tree holds one file,
// measured.json: {"version":1,"trees":{"<tree id>":{"version":1,"records":
// [...]}}}. So a CI job that measured a tree green makes a developer's
// pre-push hook instant on the same tree, and the reverse.
//
// A pulled record is served only when its whole key matches a measurement
// made here (tree, check definition, setup fingerprint, cache.env values,
// Phoenix's version): pulling adds records, it never changes what a key
// means. Pulled records carry the remote's name as their origin, which
// `phoenix doctor` and the cached line show.
#pragma once

#include <string>

#include "journal/share.h"

namespace phoenix::journal {

inline constexpr const char* kMeasuredShareFile = "measured.json";

struct MeasuredShare {
  bool found = false;    // the remote has refs/phoenix/measured
  bool pushed = false;   // push: a new commit went to the remote
  long long records = 0;  // records in the file pushed or pulled
  long long added = 0;    // pull: records this store did not have
};

// Merges the store at `store` into the remote's records and pushes them
// (not forced); nothing is pushed when the remote already has them all.
MeasuredShare push_measured(const std::string& store, const std::string& repo_root, const std::string& remote,
                            const TransportOptions& options = {});
// Adds the remote's records this store lacks, each with the remote's name
// as its origin. A file that is not a store's throws before any is added.
MeasuredShare pull_measured(const std::string& store, const std::string& repo_root, const std::string& remote,
                            const TransportOptions& options = {});

}  // namespace phoenix::journal
