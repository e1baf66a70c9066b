#include "util/redact.h"

#include <algorithm>
#include <cctype>

extern char** environ;

namespace phoenix::util {

bool secret_name(const std::string& name) {
  std::string up(name);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "KEY", "SECRET", "PASSWORD"})
    if (up.find(word) != std::string::npos) return true;
  return false;
}

namespace {

// (name, value) of every secret-looking variable of the environment whose
// value is long enough to redact, longest value first.
std::vector<std::pair<std::string, std::string>> secret_values() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (value.size() >= kMinSecretLength && secret_name(name)) out.emplace_back(name, value);
  }
  // Longest first, so a secret that contains another is replaced whole.
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return out;
}

}  // namespace

std::string redact_secrets(const std::string& text, const std::vector<std::pair<std::string, std::string>>& secrets) {
  std::string s = text;
  for (const auto& [name, value] : secrets) {
    if (s.size() < value.size()) continue;
    std::string mark = "[redacted:" + name + "]";
    std::string out;
    size_t from = 0, at;
    bool hit = false;
    while ((at = s.find(value, from)) != std::string::npos) {
      out.append(s, from, at - from);
      out += mark;
      from = at + value.size();
      hit = true;
    }
    if (!hit) continue;
    out.append(s, from, std::string::npos);
    s = std::move(out);
  }
  return s;
}

std::string redact_secrets(const std::string& text) {
  auto secrets = secret_values();
  return secrets.empty() ? text : redact_secrets(text, secrets);
}

namespace {

Json redact_json(const Json& j, const std::vector<std::pair<std::string, std::string>>& secrets) {
  if (j.is_string()) return redact_secrets(j.get_ref<const std::string&>(), secrets);
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& v : j) out.push_back(redact_json(v, secrets));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it)
      out[redact_secrets(it.key(), secrets)] = redact_json(it.value(), secrets);
    return out;
  }
  return j;
}

}  // namespace

Json redact_secrets(const Json& j) {
  auto secrets = secret_values();
  return secrets.empty() ? j : redact_json(j, secrets);
}

}  // namespace phoenix::util
