// Snapshots: blessed copies of a path, taken only while its check passes,
// kept under .phoenix/snapshots/<id>/ with a manifest of content hashes.
#pragma once

#include <string>
#include <vector>

#include "util/json.h"

namespace phoenix::snapshot {

struct Snapshot {
  std::string id;
  std::string path;  // relative to the repository root
  bool directory = false;
  std::string check;  // the check that was green when it was taken
  std::string created;
  size_t files = 0;
  size_t bytes = 0;
};

// Resolves `path` (absolute, or relative to `cwd`) to a path relative to
// `root`. Throws UsageError when it lies outside the repository or inside
// .git / .phoenix, or does not exist.
std::string relative_to_root(const std::string& root, const std::string& cwd, const std::string& path);

// Copies root/rel into snapshots_dir/<id>/ and writes its manifest.
// The caller has already measured the check green.
Snapshot take(const std::string& root, const std::string& rel, const std::string& snapshots_dir,
              const std::string& check_id);

// Reads a snapshot's manifest; throws UsageError for an unknown id
// (listing the known ones) and Error when its content was altered.
Snapshot load(const std::string& snapshots_dir, const std::string& id);

// Every snapshot, oldest first.
std::vector<Snapshot> list(const std::string& snapshots_dir);

// Puts the snapshot's content back at its path, atomically: a file by
// rename, a directory by building the new tree beside it and swapping.
void restore(const std::string& root, const std::string& snapshots_dir, const std::string& id);

}  // namespace phoenix::snapshot
