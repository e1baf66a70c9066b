// A commit's tree read from git's object database, without starting git:
// the green path of the thin binary phoenix-hook keys the measurement store
// (checks/measured.h) by the pushed commit's tree, and asking `git
// rev-parse` for it was a second git process on every push of a new
// commit. Part of phoenix_lite: zlib, no libgit2.
//
// Read as git writes them (gitformat-pack(5), "Loose objects" in
// gitrepository-layout(5)): a loose object `<objects>/xx/yyyy…`, the zlib
// stream of "commit <size>\0tree <id>\n…", or an object in a pack found
// through the pack's index (version 2) and stored whole, not as a delta;
// in the objects folder or in one of those objects/info/alternates names.
// A commit id names its content for good, so what is read here is what
// `git rev-parse <commit>^{tree}` says.
#pragma once

#include <optional>
#include <string>

namespace phoenix::hook {

// The tree id of `commit` (40 or 64 lowercase hex digits) in the object
// database at `objects_dir` (a repository's `objects` folder); nullopt when
// it cannot be read this way — no such object here, a commit stored as a
// delta in a pack, a pack index of another version, anything not as
// expected — and git must be asked.
std::optional<std::string> commit_tree(const std::string& objects_dir, const std::string& commit);

}  // namespace phoenix::hook
