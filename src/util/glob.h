// Path globs as people write them in .gitignore-like lists:
//   *   any run of characters except '/'
//   ?   one character except '/'
//   **  any run of characters including '/' ("src/**" matches everything below src/;
//       "**/test_*.cc" matches at any depth)
//   [abc] a character class
// A pattern without '/' (other than a trailing one) matches the basename at any depth,
// as in .gitignore ("*.pem" matches "a/b/key.pem").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phoenix::util {

bool glob_match(std::string_view pattern, std::string_view path);
bool glob_match_any(const std::vector<std::string>& patterns, std::string_view path);

}  // namespace phoenix::util
