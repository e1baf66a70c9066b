// git's `.git` file: a linked worktree's or a submodule's `.git` is a file
// holding "gitdir: <path>" (relative to the folder it is in, or absolute).
#pragma once

#include <optional>
#include <string>

namespace phoenix::util {

// The git dir the `.git` file at `dotgit` names, made absolute against its
// folder (not normalized); nullopt when it cannot be read or does not start
// with "gitdir: ".
std::optional<std::string> gitdir_of_file(const std::string& dotgit);

}  // namespace phoenix::util
