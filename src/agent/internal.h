// What the files of agent/ share and nobody else needs: small text and
// JSON helpers for reading what a CLI printed. Not part of agent.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/json.h"
#include "util/text.h"

namespace phoenix::agent::detail {

using util::Json;

// An error text kept from a CLI's output, and the most a regex ever reads.
inline constexpr size_t kErrorTextBytes = 2 * 1024;

inline bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

inline std::string head_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "\n[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n";
}

inline std::string one_line(std::string_view s, size_t n = 200) {
  std::string t = util::trim(s);
  for (char& c : t)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (t.size() > n) t = t.substr(0, n) + "…";
  return t;
}

inline std::optional<Json> parse_object(std::string_view text) {
  std::string t = util::trim(text);
  if (t.empty() || (t[0] != '{' && t[0] != '[')) return std::nullopt;
  Json j = Json::parse(t.begin(), t.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

inline std::string json_text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

inline std::string str_field(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace phoenix::agent::detail
