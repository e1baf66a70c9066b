// Path helpers shared by everything that compares a path of ours with one
// from libgit2 (which are canonical).
#pragma once

#include <string>

namespace phoenix::util {

// Absolute and normalized, without a trailing slash, resolving symlinks of
// the part that exists (/tmp vs /private/tmp, "a/../b").
std::string normalize_path(const std::string& p);

// `path` is `dir` or lies below it (both normalized).
bool same_or_inside(const std::string& path, const std::string& dir);

}  // namespace phoenix::util
