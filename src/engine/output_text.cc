#include "engine/output_text.h"

#include "util/text.h"

namespace phoenix::engine::output {
namespace {

// Length of a duration unit at s[i] that ends at a word boundary, or 0.
// `compound` also accepts Go's h and m when another number follows.
size_t duration_unit(std::string_view s, size_t i, bool compound) {
  static const std::string_view units[] = {"minutes", "minute", "seconds", "second",    "mins",      "min", "secs",
                                           "sec",     "ms",     "us",      "\xc2\xb5s", "\xce\xbcs", "ns",  "s"};
  for (std::string_view u : units) {
    if (s.substr(i, u.size()) != u) continue;
    size_t end = i + u.size();
    if (end < s.size() && is_word(s[end])) continue;
    return u.size();
  }
  if (compound && i < s.size() && (s[i] == 'h' || s[i] == 'm') && i + 1 < s.size() && is_digit(s[i + 1])) return 1;
  return 0;
}

}  // namespace

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_blank_char(s.front())) s.remove_prefix(1);
  return s;
}
std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (is_blank_char(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
size_t indent_of(std::string_view s) { return s.size() - ltrim(s).size(); }
bool is_blank(std::string_view s) { return ltrim(rtrim(s)).empty(); }

size_t count_digits(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  return j - i;
}

std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '\x1b') {
      out += s[i++];
      continue;
    }
    if (i + 1 >= s.size()) break;
    char kind = s[i + 1];
    size_t j = i + 2;
    if (kind == '[') {  // CSI: parameter and intermediate bytes, then one final byte
      while (j < s.size() && byte(j) >= 0x20 && byte(j) <= 0x3f) ++j;
      if (j < s.size() && byte(j) >= 0x40 && byte(j) <= 0x7e) ++j;
    } else if (kind == ']' || kind == 'P' || kind == '_' || kind == '^') {
      // OSC/DCS/APC/PM strings end at BEL or ESC '\'; an unterminated one
      // ends at the line so it cannot swallow the rest of the output.
      while (j < s.size() && s[j] != '\x07' && s[j] != '\n' &&
             !(s[j] == '\x1b' && j + 1 < s.size() && s[j + 1] == '\\'))
        ++j;
      if (j < s.size() && s[j] == '\x07') ++j;
      else if (j < s.size() && s[j] == '\x1b') j += 2;
    } else if (byte(i + 1) >= 0x20 && byte(i + 1) <= 0x2f) {  // e.g. ESC ( B
      j = i + 1;
      while (j < s.size() && byte(j) >= 0x20 && byte(j) <= 0x2f) ++j;
      if (j < s.size()) ++j;
    }
    i = j;
  }
  return out;
}

std::vector<std::string> terminal_lines(std::string_view text) {
  std::vector<std::string> lines = util::split_lines(strip_ansi(text));
  for (auto& l : lines) {
    while (!l.empty() && l.back() == '\r') l.pop_back();
    size_t cr = l.rfind('\r');
    if (cr != std::string::npos) l.erase(0, cr + 1);
  }
  return lines;
}

size_t match_duration(std::string_view s, size_t i) {
  size_t j = i;
  bool first = true;
  while (true) {
    size_t d = count_digits(s, j);
    if (d == 0) return 0;
    j += d;
    if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) j += 1 + count_digits(s, j + 1);
    size_t u = duration_unit(s, j, true);
    if (u == 0 && first && j < s.size() && s[j] == ' ') {  // "12 ms", not "1 m2s"
      size_t su = duration_unit(s, j + 1, false);
      if (su) return j + 1 + su - i;
    }
    if (u == 0) return 0;
    bool more = (s[j] == 'h' || s[j] == 'm') && u == 1;  // Go: 1h2m3s
    j += u;
    if (!more) return j - i;
    first = false;
  }
}

std::string strip_trailing_duration(std::string_view name) {
  name = rtrim(name);
  if (util::ends_with(name, ")")) {
    size_t open = name.rfind(" (");
    if (open != std::string_view::npos) {
      std::string_view inner = name.substr(open + 2, name.size() - open - 3);
      if (!inner.empty() && match_duration(inner, 0) == inner.size()) return std::string(rtrim(name.substr(0, open)));
    }
  }
  size_t sp = name.rfind(' ');
  if (sp != std::string_view::npos) {
    std::string_view last = name.substr(sp + 1);
    if (!last.empty() && match_duration(last, 0) == last.size()) return std::string(rtrim(name.substr(0, sp)));
  }
  return std::string(name);
}

}  // namespace phoenix::engine::output
