#include "util/json_pretty.h"

#include <optional>
#include <regex>

namespace phoenix::util {

namespace {

using OJ = nlohmann::ordered_json;

// Columns a terminal (and prettier's getStringWidth) gives `s`: one per code
// point, two for East Asian wide and fullwidth characters.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
    if (i + len > s.size()) len = 1;
    char32_t cp = c;
    if (len > 1) {
      cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    }
    bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
                (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
                (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
    n += wide ? 2 : 1;
    i += len;
  }
  return n;
}

// prettier's printNumber, applied to the text nlohmann writes.
std::string number_text(const OJ& v) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    // The range first: casting a double outside long long's is undefined.
    if (d > -1e15 && d < 1e15 && d == static_cast<double>(static_cast<long long>(d)))
      return std::to_string(static_cast<long long>(d));
  }
  std::string s = v.dump();
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s = std::regex_replace(s, std::regex(R"(^([+-]?[\d.]+e)(?:\+|(-))?0*(\d))"), "$1$2$3");
  s = std::regex_replace(s, std::regex(R"(^([+-]?[\d.]+)e[+-]?0+$)"), "$1");
  s = std::regex_replace(s, std::regex(R"((\.\d+?)0+(?=e|$))"), "$1");
  s = std::regex_replace(s, std::regex(R"(\.(?=e|$))"), "");
  return s;
}

std::string scalar_text(const OJ& v) {
  if (v.is_number()) return number_text(v);
  return v.dump(-1, ' ', false, OJ::error_handler_t::replace);
}

class Printer {
 public:
  Printer(const JsonComments& comments, size_t width) : comments_(comments), width_(width) {}

  // `v` whose first line starts with `prefix` (indentation and key), at
  // nesting `indent`, followed by `suffix` ("," or "").
  void value(const OJ& v, const std::string& path, size_t indent, const std::string& prefix,
             const std::string& suffix) {
    if (auto f = flat(v, path)) {
      std::string line = prefix + *f + suffix;
      if (!v.is_array() || v.empty() || columns(line) <= width_) {
        out_ += line + "\n";
        return;
      }
    }
    std::string pad(indent, ' '), inner(indent + 2, ' ');
    if (v.is_object()) {
      out_ += prefix + "{\n";
      size_t i = 0;
      for (auto it = v.begin(); it != v.end(); ++it, ++i) {
        std::string p = path.empty() ? it.key() : path + "." + it.key();
        comment(p, inner);
        value(it.value(), p, indent + 2, inner + OJ(it.key()).dump() + ": ", i + 1 < v.size() ? "," : "");
      }
      comment(path + "/end", inner);
      out_ += pad + "}" + suffix + "\n";
      return;
    }
    out_ += prefix + "[\n";
    if (all_numbers(v, path)) {
      // prettier fills an array of numbers: as many per line as fit.
      std::string line;
      for (size_t i = 0; i < v.size(); ++i) {
        std::string item = number_text(v[i]) + (i + 1 < v.size() ? "," : "");
        if (!line.empty() && columns(line) + 1 + columns(item) > width_) {
          out_ += line + "\n";
          line.clear();
        }
        line += line.empty() ? inner + item : " " + item;
      }
      out_ += line + "\n";
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        std::string p = path + "[" + std::to_string(i) + "]";
        comment(p, inner);
        value(v[i], p, indent + 2, inner, i + 1 < v.size() ? "," : "");
      }
    }
    comment(path + "/end", inner);
    out_ += pad + "]" + suffix + "\n";
  }

  void comment(const std::string& path, const std::string& pad) {
    auto it = comments_.find(path);
    if (it == comments_.end()) return;
    for (const auto& line : it->second) {
      std::string l = line.empty() ? "//" : "// " + line;
      while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.pop_back();
      out_ += pad + l + "\n";
    }
  }

  std::string take() { return std::move(out_); }

 private:
  bool has_comments_inside(const std::string& path) const {
    // A comment on an element or at the end forces one element per line.
    auto it = comments_.lower_bound(path);
    for (; it != comments_.end() && it->first.compare(0, path.size(), path) == 0; ++it) {
      char next = it->first.size() > path.size() ? it->first[path.size()] : '\0';
      if (next == '[' || next == '/' || next == '.') return true;
    }
    return false;
  }

  bool all_numbers(const OJ& v, const std::string& path) const {
    if (v.size() < 2 || has_comments_inside(path)) return false;
    for (const auto& e : v)
      if (!e.is_number()) return false;
    return true;
  }

  // The value on one line, or nullopt when it never is: a non-empty
  // object, an array prettier always breaks, or one holding such a value.
  std::optional<std::string> flat(const OJ& v, const std::string& path) const {
    if (v.is_object()) {
      if (v.empty() && !has_comments_inside(path)) return std::string("{}");
      return std::nullopt;
    }
    if (!v.is_array()) return scalar_text(v);
    if (v.empty()) {
      if (has_comments_inside(path)) return std::nullopt;
      return std::string("[]");
    }
    if (has_comments_inside(path)) return std::nullopt;
    bool arrays_of_two = v.size() > 1;
    for (const auto& e : v)
      if (!(e.is_array() && e.size() > 1)) arrays_of_two = false;
    if (arrays_of_two) return std::nullopt;
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      auto f = flat(v[i], path + "[" + std::to_string(i) + "]");
      if (!f) return std::nullopt;
      s += (i ? ", " : "") + *f;
    }
    return s + "]";
  }

  const JsonComments& comments_;
  size_t width_;
  std::string out_;
};

}  // namespace

std::string prettier_style(const nlohmann::ordered_json& j, const JsonComments& comments, size_t width) {
  Printer p(comments, width);
  p.comment("", "");
  p.value(j, "", 0, "", "");
  return p.take();
}

}  // namespace phoenix::util
