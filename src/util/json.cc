#include "util/json.h"

#include "util/error.h"
#include "util/text.h"

namespace phoenix::util {

Json parse_json(const std::string& text, const std::string& where) {
  try {
    return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based; turn it into line:col.
    size_t byte = e.byte == 0 ? 0 : e.byte - 1;
    if (byte > text.size()) byte = text.size();
    size_t line = 1, col = 1;
    for (size_t i = 0; i < byte; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string what = e.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    size_t p = what.find("syntax error");
    if (p == std::string::npos) p = what.rfind(": ") == std::string::npos ? 0 : what.rfind(": ") + 2;
    throw ConfigError(where + ":" + std::to_string(line) + ":" + std::to_string(col) + ": malformed JSON: " +
                      what.substr(p));
  }
}

void reject_unknown_keys(const Json& obj, const std::vector<std::string>& known, const std::string& where) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == it.key();
    if (ok) continue;
    std::string near = nearest(it.key(), known);
    throw ConfigError(where + ": unknown key '" + it.key() + "'" +
                      (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
  }
}

std::string canonical(const Json& j) {
  // nlohmann::json objects are std::map-backed: keys come out sorted.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace phoenix::util
