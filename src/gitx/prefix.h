// Repository-relative path prefixes, as Repo::is_clean() and its siblings
// take them, and a sha shortened for people.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phoenix::gitx {

// Whether `path` lies under `prefix`. A prefix ending in '/' covers
// everything below that folder (not the folder's own name); one without
// covers that path and, if it is a folder, everything below it: "incident"
// covers "incident" and "incident/x", not "incidents/x". "" covers nothing.
bool under_prefix(std::string_view path, std::string_view prefix);
bool under_any(std::string_view path, const std::vector<std::string>& prefixes);

// Like under_prefix(), but a prefix ending in '/' also covers the folder's
// own name ("dir/" covers "dir"): for walks that meet folders by name.
bool at_or_under_prefix(std::string_view path, std::string_view prefix);
bool at_or_under_any(std::string_view path, const std::vector<std::string>& prefixes);

}  // namespace phoenix::gitx
