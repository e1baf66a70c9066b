#include "gitx/prefix.h"

#include <algorithm>

#include "util/text.h"

namespace phoenix::gitx {

using util::starts_with;

bool under_prefix(std::string_view path, std::string_view prefix) {
  if (prefix.empty()) return false;
  if (prefix.back() == '/') return starts_with(path, prefix);
  return path == prefix || (path.size() > prefix.size() && starts_with(path, prefix) && path[prefix.size()] == '/');
}

bool under_any(std::string_view path, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return under_prefix(path, p); });
}

bool at_or_under_prefix(std::string_view path, std::string_view prefix) {
  if (!prefix.empty() && prefix.back() == '/' && path == prefix.substr(0, prefix.size() - 1)) return true;
  return under_prefix(path, prefix);
}

bool at_or_under_any(std::string_view path, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return at_or_under_prefix(path, p); });
}

}  // namespace phoenix::gitx
