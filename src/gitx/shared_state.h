// What gitx's two answers to "a program Phoenix ran changed the user's
// repository" share: guard.cc (a fingerprint taken before, compared after)
// and confine.cc (the program's own view of the repository, read back from
// its overlay). Reading a config file's entries and an index's, a file's
// bytes and mode, and the words of the lines both write. Not for use
// outside gitx; include only from .cc files.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace phoenix::gitx::internal {

// A file's bytes and mode, or a symbolic link's target; absent when
// nothing (or not a regular file or link) is there.
struct FileSnap {
  bool exists = false;
  bool link = false;
  std::string data;  // bytes, or the link's target
  unsigned mode = 0;
  bool operator==(const FileSnap& o) const {
    return exists == o.exists && link == o.link && data == o.data && mode == o.mode;
  }
  bool operator!=(const FileSnap& o) const { return !(*this == o); }
};
FileSnap snap(const std::string& path);
// Writes `s` back at `path` (removes it when `s` does not exist). Throws Error.
void put_file(const std::string& path, const FileSnap& s);

// A config file's entries by name (libgit2 gives section and key in
// lowercase), in file order for a key with several values; none when it
// cannot be read.
using ConfigEntries = std::map<std::string, std::vector<std::string>>;
ConfigEntries read_config_entries(const std::string& path);
// One phrase per key that differs between `before` and `after`, each
// starting with `who`: "setup changed core.hooksPath to .husky/_",
// "setup unset core.fsmonitor"; "setup rewrote PATH" when no entry differs.
std::vector<std::string> config_changes(const ConfigEntries& before, const ConfigEntries& after, const std::string& who,
                                        const std::string& path);

// An index file's entries by path and stage: mode and blob (stat data left
// out: a `git status` refreshes it). None when it cannot be read.
std::map<std::string, std::string> read_index_entries(const std::string& path);
// How many keys differ between two such maps (either side missing counts).
size_t entries_differing(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b);

// A ref's value as the guard keeps it: "sym:<target>" or a sha; and as a
// line says it: "-> <target>" or the short sha.
std::string ref_value_text(const std::string& v);
bool has_prefix(const std::string& name, const std::vector<std::string>& prefixes);

// "<who> created NAME at X", "<who> deleted NAME (was X)", "<who> moved
// NAME from X to Y" ("" for a side that is not there).
std::string ref_change(const std::string& who, const std::string& name, const std::string& was, const std::string& is);

}  // namespace phoenix::gitx::internal
