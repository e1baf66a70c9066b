#include "util/json.h"

#include <cctype>
#include <cstring>
#include <map>

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
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    size_t p = what.find("syntax error");
    if (p == std::string::npos) p = what.rfind(": ") == std::string::npos ? 0 : what.rfind(": ") + 2;
    throw ConfigError(where + ":" + std::to_string(line) + ":" + std::to_string(col) +
                      ": malformed JSON: " + what.substr(p));
  }
}

void reject_unknown_keys(const Json& obj, const std::vector<std::string>& known, const std::string& where) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == it.key();
    if (ok) continue;
    std::string near = nearest(it.key(), known);
    throw ConfigError((where.empty() ? std::string() : where + ".") + it.key() + ": unknown key '" + it.key() + "'" +
                      (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
  }
}

std::vector<std::string> string_array(const Json& j, const std::string& where) {
  if (!j.is_array()) throw ConfigError(where + ": must be an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) throw ConfigError(where + "[" + std::to_string(i) + "]: must be a string");
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

std::vector<std::string> strings_of(const Json& array) {
  std::vector<std::string> out;
  if (!array.is_array()) return out;
  for (const auto& v : array)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::vector<std::string> strings_in(const Json& j, const std::string& key) {
  return j.is_object() && j.contains(key) ? strings_of(j[key]) : std::vector<std::string>{};
}

std::string canonical(const Json& j) {
  // nlohmann::json objects are std::map-backed: keys come out sorted.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace phoenix::util

namespace phoenix::util {

namespace {

// A small scanner over JSON-with-comments that records where each value's
// key (or array element) starts, by path: "checks[1].target".
struct Locator {
  const std::string& t;
  size_t i = 0;
  std::map<std::string, size_t>& out;

  void ws() {
    for (;;) {
      while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
      if (t.compare(i, 2, "//") == 0) {
        while (i < t.size() && t[i] != '\n') ++i;
      } else if (t.compare(i, 2, "/*") == 0) {
        size_t e = t.find("*/", i + 2);
        i = e == std::string::npos ? t.size() : e + 2;
      } else {
        return;
      }
    }
  }
  std::string str() {
    std::string s;
    ++i;  // opening quote
    while (i < t.size() && t[i] != '"') {
      if (t[i] == '\\' && i + 1 < t.size()) {
        s.push_back(t[i + 1]);
        i += 2;
        continue;
      }
      s.push_back(t[i++]);
    }
    ++i;
    return s;
  }
  void value(const std::string& path, int depth) {
    ws();
    if (i >= t.size() || depth > 64) return;
    if (t[i] == '{') {
      ++i;
      for (;;) {
        ws();
        if (i >= t.size() || t[i] == '}') {
          ++i;
          return;
        }
        if (t[i] == ',') {
          ++i;
          continue;
        }
        if (t[i] != '"') return;
        size_t at = i;
        std::string k = str();
        std::string p = path.empty() ? k : path + "." + k;
        out.emplace(p, at);
        ws();
        if (i < t.size() && t[i] == ':') ++i;
        value(p, depth + 1);
      }
    } else if (t[i] == '[') {
      ++i;
      size_t n = 0;
      for (;;) {
        ws();
        if (i >= t.size() || t[i] == ']') {
          ++i;
          return;
        }
        if (t[i] == ',') {
          ++i;
          continue;
        }
        std::string p = path + "[" + std::to_string(n++) + "]";
        out.emplace(p, i);
        value(p, depth + 1);
      }
    } else if (t[i] == '"') {
      str();
    } else {
      while (i < t.size() && !std::strchr(",}] \t\r\n/", t[i])) ++i;
    }
  }
};

}  // namespace

std::map<std::string, size_t> json_paths(const std::string& text) {
  std::map<std::string, size_t> out;
  Locator l{text, 0, out};
  l.value("", 0);
  return out;
}

std::string line_col(const std::string& text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

}  // namespace phoenix::util
