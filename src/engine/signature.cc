#include "engine/signature.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "util/hash.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

// ASCII classes only: program output is bytes, and a UTF-8 byte must never
// count as part of a word (it would glue a placeholder to a neighbour).
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_word(char c) { return is_alnum(c) || c == '_'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_blank_char(char c) { return c == ' ' || c == '\t'; }
char lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_blank_char(s.front())) s.remove_prefix(1);
  return s;
}
std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (is_blank_char(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
std::string_view trim(std::string_view s) { return rtrim(ltrim(s)); }
size_t indent_of(std::string_view s) { return s.size() - ltrim(s).size(); }
bool is_blank(std::string_view s) { return ltrim(rtrim(s)).empty(); }

size_t count_digits(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  return j - i;
}

// ---------------------------------------------------------------------------
// Terminal text: what a person would have seen, without colour codes.

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
      while (j < s.size() && s[j] != '\x07' && s[j] != '\n' && !(s[j] == '\x1b' && j + 1 < s.size() && s[j + 1] == '\\')) ++j;
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

// Lines as a terminal shows them: colour removed, and a carriage return
// (a progress bar redrawing itself) keeps only what was written after it.
std::vector<std::string> terminal_lines(std::string_view text) {
  std::vector<std::string> lines = util::split_lines(strip_ansi(text));
  for (auto& l : lines) {
    while (!l.empty() && l.back() == '\r') l.pop_back();
    size_t cr = l.rfind('\r');
    if (cr != std::string::npos) l.erase(0, cr + 1);
  }
  return lines;
}

// ---------------------------------------------------------------------------
// Durations, shared by normalization and by test-name clean-up.

// Length of a duration unit at s[i] that ends at a word boundary, or 0.
// `compound` also accepts Go's h and m when another number follows.
size_t duration_unit(std::string_view s, size_t i, bool compound) {
  static const std::string_view units[] = {"minutes", "minute", "seconds", "second", "mins", "min", "secs",
                                           "sec", "ms", "us", "\xc2\xb5s", "\xce\xbcs", "ns", "s"};
  for (std::string_view u : units) {
    if (s.substr(i, u.size()) != u) continue;
    size_t end = i + u.size();
    if (end < s.size() && is_word(s[end])) continue;
    return u.size();
  }
  if (compound && i < s.size() && (s[i] == 'h' || s[i] == 'm') && i + 1 < s.size() && is_digit(s[i + 1])) return 1;
  return 0;
}

// Length of a duration starting at s[i] ("12 ms", "0.53s", "1m2.5s"), or 0.
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

// "(0 ms)", " 25ms", " (1.2 s)" at the end of a runner's test line.
std::string strip_trailing_duration(std::string_view name) {
  name = rtrim(name);
  if (ends_with(name, ")")) {
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

// ---------------------------------------------------------------------------
// Normalization of one line: a left-to-right scan where each recognizer
// either consumes a token (appending its placeholder) or returns 0.

const char* const kWeekdays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
                                 "Mon",    "Tue",     "Wed",       "Thu",      "Fri",    "Sat",      "Sun"};
const char* const kMonths[] = {"January", "February", "March",    "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December",
                               "Jan",     "Feb",      "Mar",      "Apr",     "Jun",      "Jul",
                               "Aug",     "Sep",      "Sept",     "Oct",     "Nov",      "Dec"};

bool is_path_char(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '~' || c == '/'; }
bool is_segment_sep(char c) { return c == '.' || c == '_' || c == '-'; }

// Looks like a generated name: mkdtemp/mkstemp output, Python's tmpXXXXXXXX,
// Go's TestName123456789, Java's createTempFile digits.
bool looks_generated(std::string_view c, bool lone) {
  if (c.size() >= 3 && lower(c[0]) == 't' && lower(c[1]) == 'm' && lower(c[2]) == 'p') return true;
  for (size_t i = 0; i < c.size(); ++i)
    if (count_digits(c, i) >= 3) return true;
  size_t start = 0;
  while (start <= c.size()) {
    size_t end = start;
    while (end < c.size() && !is_segment_sep(c[end])) ++end;
    std::string_view seg = c.substr(start, end - start);
    if (seg.size() >= 6) {
      bool digit = false, low = false, up = false, other = false;
      for (char ch : seg) {
        digit |= is_digit(ch);
        low |= is_lower(ch);
        up |= is_upper(ch);
        other |= !is_alnum(ch);
      }
      // A lone entry directly in a temp root is what mkdtemp made, so six
      // letters of mixed case are enough there; deeper, they may be a name.
      if (!other && ((digit && (low || up)) || (lone && low && up))) return true;
    }
    start = end + 1;
  }
  return false;
}

class LineNormalizer {
 public:
  LineNormalizer(std::string_view s, const std::vector<std::string>& tmp_roots) : s_(s), roots_(tmp_roots) {}

  std::string run() {
    static constexpr std::string_view kOmittedHead = "[... ", kOmittedTail = " bytes omitted ...]";
    if (starts_with(s_, kOmittedHead) && ends_with(s_, kOmittedTail)) return "[... bytes omitted ...]";
    size_t i = 0;
    while (i < s_.size()) {
      size_t n = token_at(i);
      if (n == 0) out_ += s_[i++];
      else i += n;
    }
    return std::string(rtrim(out_));
  }

 private:
  size_t token_at(size_t i) {
    char c = s_[i];
    char prev = i ? s_[i - 1] : ' ';
    size_t n = 0;
    if (c == '/' && !(is_alnum(prev) || prev == '.' || prev == '_' || prev == '-' || prev == '~')) n = temp_path(i);
    if (!n && prev == '/') n = mkdtemp_component(i);
    if (!n && !is_word(prev) && prev != '.') {
      n = port(i);
      if (!n && is_hex(c)) n = uuid(i);
      if (!n && is_digit(c)) n = iso_date(i);
      if (!n && is_digit(c) && prev != ':') n = clock_time(i);
      if (!n && is_digit(c)) n = day_month_year(i);
      if (!n && is_alpha(c)) n = month_name_date(i);
      if (!n && is_digit(c)) n = epoch(i);
      if (!n && c == '0') n = address(i);
      if (!n && is_digit(c)) n = duration(i);
      if (!n && (c == 'd' || c == 't')) n = duration_field(i);
      if (!n && (c == 'p' || c == 'P')) n = pid_word(i);
      if (!n && is_hex(c)) n = hex_id(i);
    }
    if (!n && c == '@') n = identity_hash(i);
    if (!n && c == '[') n = bracket_pid(i);
    if (!n && c == '(') n = thread_id(i);
    if (!n && is_digit(c) && !is_digit(prev)) n = long_number(i);
    return n;
  }

  size_t emit(size_t consumed, std::string_view text) {
    out_ += text;
    return consumed;
  }

  size_t temp_path(size_t i) {
    std::string_view rest = s_.substr(i);
    const std::string* root = nullptr;
    for (const auto& r : roots_)
      if (starts_with(rest, r)) { root = &r; break; }
    if (!root) return 0;
    size_t j = i;
    while (j < s_.size() && is_path_char(s_[j])) ++j;
    while (j > i + root->size() && s_[j - 1] == '.') --j;  // a sentence's full stop
    std::string_view path = s_.substr(i, j - i);
    std::string_view tail = path.substr(root->size());
    std::vector<std::string_view> parts;
    for (size_t k = 0; k < tail.size();) {
      size_t slash = tail.find('/', k);
      if (slash == std::string_view::npos) slash = tail.size();
      if (slash > k) parts.push_back(tail.substr(k, slash - k));
      k = slash + 1;
    }
    std::string rep = "<tmp>";
    if (parts.empty()) {
      rep += "/";
    } else if (parts.size() == 1) {
      if (!looks_generated(parts[0], true)) rep += "/" + std::string(parts[0]);
    } else {
      rep += "/";
      rep += looks_generated(parts.back(), false) ? std::string("<rand>") : std::string(parts.back());
    }
    if (!parts.empty() && ends_with(path, "/")) rep += "/";
    return emit(j - i, rep);
  }

  // Outside temp roots: "build-Xk29aQ" -> "build-<rand>". Only segments after
  // a separator count, and they need two digits and two letters, so names
  // like "x86_64", "python3.11" or "options1" stay.
  size_t mkdtemp_component(size_t i) {
    size_t j = i;
    while (j < s_.size() && is_path_char(s_[j]) && s_[j] != '/') ++j;
    std::string_view comp = s_.substr(i, j - i);
    std::string rebuilt;
    bool changed = false;
    size_t start = 0, index = 0;
    while (start <= comp.size()) {
      size_t end = start;
      while (end < comp.size() && !is_segment_sep(comp[end])) ++end;
      std::string_view seg = comp.substr(start, end - start);
      size_t digits = 0, letters = 0;
      bool other = false;
      for (char ch : seg) {
        digits += is_digit(ch);
        letters += is_alpha(ch);
        other |= !is_alnum(ch);
      }
      if (index > 0 && !other && seg.size() >= 6 && seg.size() <= 16 && digits >= 2 && letters >= 2) {
        rebuilt += "<rand>";
        changed = true;
      } else {
        rebuilt += seg;
      }
      if (end < comp.size()) rebuilt += comp[end];
      start = end + 1;
      ++index;
    }
    return changed ? emit(j - i, rebuilt) : 0;
  }

  size_t port(size_t i) {
    static const std::string_view hosts[] = {"127.0.0.1:", "localhost:", "0.0.0.0:", "[::1]:", "[::]:"};
    for (std::string_view h : hosts) {
      if (s_.substr(i, h.size()) != h) continue;
      size_t d = count_digits(s_, i + h.size());
      if (d == 0 || d > 5) return 0;
      return emit(h.size() + d, std::string(h) + "<port>");
    }
    return 0;
  }

  bool hex_run(size_t i, size_t n) const {
    if (i + n > s_.size()) return false;
    for (size_t k = i; k < i + n; ++k)
      if (!is_hex(s_[k])) return false;
    return true;
  }

  size_t uuid(size_t i) {
    static const size_t groups[] = {8, 4, 4, 4, 12};
    size_t j = i;
    for (size_t g = 0; g < 5; ++g) {
      if (g && (j >= s_.size() || s_[j++] != '-')) return 0;
      if (!hex_run(j, groups[g])) return 0;
      j += groups[g];
    }
    if (j < s_.size() && is_alnum(s_[j])) return 0;
    return emit(j - i, "<uuid>");
  }

  bool two_digits(size_t i, int max) const {
    if (i + 2 > s_.size() || !is_digit(s_[i]) || !is_digit(s_[i + 1])) return false;
    return (s_[i] - '0') * 10 + (s_[i + 1] - '0') <= max;
  }

  // HH:MM[:SS] at s[i] (or HH-MM-SS when `dash`, as in file names); end or 0.
  size_t time_of_day(size_t i, bool dash) const {
    if (!two_digits(i, 23)) return 0;
    char sep = dash && i + 2 < s_.size() && s_[i + 2] == '-' ? '-' : ':';
    if (i + 2 >= s_.size() || s_[i + 2] != sep || !two_digits(i + 3, 59)) return 0;
    size_t j = i + 5;
    if (j + 2 < s_.size() && s_[j] == sep && two_digits(j + 1, 60)) j += 3;
    if (j + 1 < s_.size() && (s_[j] == '.' || s_[j] == ',' || (sep == '-' && s_[j] == '_')) && is_digit(s_[j + 1]))
      j += 1 + count_digits(s_, j + 1);
    return j;
  }

  // A trailing zone: Z, +01:00, -0500.
  size_t zone(size_t j) const {
    if (j < s_.size() && s_[j] == 'Z' && !(j + 1 < s_.size() && is_alnum(s_[j + 1]))) return j + 1;
    if (j < s_.size() && (s_[j] == '+' || s_[j] == '-') && two_digits(j + 1, 23)) {
      size_t k = j + 3;
      if (k < s_.size() && s_[k] == ':') ++k;
      if (two_digits(k, 59)) return k + 2;
    }
    return j;
  }

  size_t iso_date(size_t i) {
    if (count_digits(s_, i) != 4 || i + 10 > s_.size()) return 0;
    char sep = s_[i + 4];
    if ((sep != '-' && sep != '/') || s_[i + 7] != sep) return 0;
    if (!two_digits(i + 5, 12) || !two_digits(i + 8, 31)) return 0;
    size_t j = i + 10;
    if (j < s_.size() && is_digit(s_[j])) return 0;
    if (j + 1 < s_.size() && (s_[j] == 'T' || s_[j] == ' ' || s_[j] == '_')) {
      size_t t = time_of_day(j + 1, s_[j] == 'T');
      if (t) return emit(zone(t) - i, "<time>");
    }
    return emit(j - i, "<date>");
  }

  // 02:18:07, optionally followed by a ctime year (" 2026").
  size_t clock_time(size_t i) {
    size_t h = count_digits(s_, i);
    if (h < 1 || h > 2) return 0;
    size_t j = i + h;
    if (j + 6 > s_.size()) return 0;
    if (s_[j] != ':' || !two_digits(j + 1, 59) || j + 3 >= s_.size() || s_[j + 3] != ':' || !two_digits(j + 4, 60))
      return 0;
    j += 6;
    if (j < s_.size() && (s_[j] == ':' || is_digit(s_[j]))) return 0;
    if (j + 1 < s_.size() && s_[j] == '.' && is_digit(s_[j + 1])) j += 1 + count_digits(s_, j + 1);
    j = zone(j);
    if (j + 5 <= s_.size() && s_[j] == ' ' && count_digits(s_, j + 1) == 4 &&
        (s_.substr(j + 1, 2) == "19" || s_.substr(j + 1, 2) == "20"))
      j += 5;
    return emit(j - i, "<time>");
  }

  size_t word_in(size_t i, const char* const* list, size_t n) const {
    size_t best = 0;
    for (size_t k = 0; k < n; ++k) {
      std::string_view w = list[k];
      if (s_.substr(i, w.size()) == w && !(i + w.size() < s_.size() && is_alpha(s_[i + w.size()])))
        best = std::max(best, w.size());
    }
    return best;
  }
  size_t month_at(size_t i) const { return word_in(i, kMonths, std::size(kMonths)); }
  size_t spaces_at(size_t i) const {
    size_t j = i;
    while (j < s_.size() && s_[j] == ' ') ++j;
    return j - i;
  }

  // "01 Dec 2026" (RFC 2822's order).
  size_t day_month_year(size_t i) {
    size_t d = count_digits(s_, i);
    if (d < 1 || d > 2) return 0;
    size_t j = i + d;
    size_t sp = spaces_at(j);
    if (sp != 1) return 0;
    size_t m = month_at(j + 1);
    if (!m) return 0;
    j += 1 + m;
    if (j < s_.size() && s_[j] == ' ' && count_digits(s_, j + 1) == 4) return emit(j + 5 - i, "<date>");
    return 0;
  }

  // "Dec  1", "Tue Dec  1", "Mon, 01 Dec 2026", "December 1, 2026".
  size_t month_name_date(size_t i) {
    size_t j = i;
    size_t wd = word_in(i, kWeekdays, std::size(kWeekdays));
    if (wd) {
      j += wd;
      if (j < s_.size() && s_[j] == ',') ++j;
      size_t sp = spaces_at(j);
      if (sp == 0) return 0;
      j += sp;
      if (j < s_.size() && is_digit(s_[j])) {
        size_t save = out_.size();
        size_t n = day_month_year(j);
        if (!n) return 0;
        out_.resize(save);
        return emit(j + n - i, "<date>");
      }
    }
    size_t m = month_at(j);
    if (!m) return 0;
    j += m;
    size_t sp = spaces_at(j);
    if (sp == 0) return 0;
    size_t d = count_digits(s_, j + sp);
    if (d < 1 || d > 2) return 0;
    j += sp + d;
    if (j < s_.size() && is_alnum(s_[j])) return 0;
    if (j + 6 <= s_.size() && s_[j] == ',' && s_[j + 1] == ' ' && count_digits(s_, j + 2) == 4) j += 6;
    return emit(j - i, "<date>");
  }

  // Seconds (10 digits, with an optional fraction), milliseconds, micro- or
  // nanoseconds since the epoch, 2017..2033.
  size_t epoch(size_t i) {
    size_t d = count_digits(s_, i);
    if ((d != 10 && d != 13 && d != 16 && d != 19) || s_[i] != '1' || s_[i + 1] < '5') return 0;
    size_t j = i + d;
    if (d == 10 && j + 1 < s_.size() && s_[j] == '.' && is_digit(s_[j + 1])) j += 1 + count_digits(s_, j + 1);
    if (j < s_.size() && is_word(s_[j])) return 0;
    return emit(j - i, "<time>");
  }

  size_t address(size_t i) {
    if (i + 2 >= s_.size() || (s_[i + 1] != 'x' && s_[i + 1] != 'X')) return 0;
    size_t j = i + 2;
    while (j < s_.size() && is_hex(s_[j])) ++j;
    if (j - i - 2 < 6 || (j < s_.size() && is_word(s_[j]))) return 0;
    return emit(j - i, "0x<addr>");
  }

  size_t duration(size_t i) {
    size_t n = match_duration(s_, i);
    return n ? emit(n, "<dur>") : 0;
  }

  // Durations printed without a unit: TAP's "duration_ms: 1.23" and JUnit's
  // time="0.034".
  size_t duration_field(size_t i) {
    std::string_view rest = s_.substr(i);
    if (starts_with(rest, "duration_ms")) {
      size_t j = i + 11;
      if (j < s_.size() && (s_[j] == ':' || s_[j] == '=')) ++j;
      j += spaces_at(j);
      size_t d = count_digits(s_, j);
      if (!d) return 0;
      std::string head(s_.substr(i, j - i));
      j += d;
      if (j + 1 < s_.size() && s_[j] == '.' && is_digit(s_[j + 1])) j += 1 + count_digits(s_, j + 1);
      return emit(j - i, head + "<dur>");
    }
    if (starts_with(rest, "time=\"") || starts_with(rest, "time='")) {
      char q = rest[5];
      size_t j = i + 6;
      while (j < s_.size() && (is_digit(s_[j]) || s_[j] == '.' || s_[j] == ',')) ++j;
      if (j == i + 6 || j >= s_.size() || s_[j] != q) return 0;
      return emit(j + 1 - i, std::string("time=") + q + "<dur>" + q);
    }
    return 0;
  }

  size_t pid_word(size_t i) {
    if (i + 3 > s_.size() || lower(s_[i]) != 'p' || lower(s_[i + 1]) != 'i' || lower(s_[i + 2]) != 'd') return 0;
    size_t j = i + 3;
    if (j < s_.size() && is_word(s_[j])) return 0;
    if (j < s_.size() && (s_[j] == ':' || s_[j] == '=' || s_[j] == '#')) ++j;
    j += spaces_at(j);
    if (j < s_.size() && s_[j] == '#') ++j;
    size_t d = count_digits(s_, j);
    if (!d || (j + d < s_.size() && is_word(s_[j + d]))) return 0;
    return emit(j + d - i, std::string(s_.substr(i, j - i)) + "<pid>");
  }

  size_t hex_id(size_t i) {
    size_t j = i;
    bool digit = false, low = false, up = false;
    while (j < s_.size() && is_hex(s_[j])) {
      digit |= is_digit(s_[j]);
      low |= is_lower(s_[j]);
      up |= is_upper(s_[j]);
      ++j;
    }
    if (j - i < 8 || !digit || !(low || up) || (low && up)) return 0;
    if (j < s_.size() && is_word(s_[j])) return 0;
    return emit(j - i, "<hex>");
  }

  size_t identity_hash(size_t i) {
    if (i == 0 || !is_alnum(s_[i - 1])) return 0;
    size_t j = i + 1;
    bool digit = false;
    while (j < s_.size() && is_hex(s_[j])) digit |= is_digit(s_[j++]);
    size_t n = j - i - 1;
    if (n < 5 || n > 8 || !digit || (j < s_.size() && is_alnum(s_[j]))) return 0;
    return emit(j - i, "@<hash>");
  }

  size_t bracket_pid(size_t i) {
    size_t d = count_digits(s_, i + 1);
    if (d < 3 || d > 7 || i + 1 + d >= s_.size() || s_[i + 1 + d] != ']') return 0;
    return emit(d + 2, "[<pid>]");
  }

  // Rust: "thread 'tests::adds' (7520) panicked".
  size_t thread_id(size_t i) {
    if (i < 2 || s_[i - 1] != ' ' || s_[i - 2] != '\'') return 0;
    size_t d = count_digits(s_, i + 1);
    if (!d || i + 1 + d >= s_.size() || s_[i + 1 + d] != ')') return 0;
    return emit(d + 2, "(<pid>)");
  }

  size_t long_number(size_t i) {
    size_t d = count_digits(s_, i);
    return d >= 12 ? emit(d, "<n>") : 0;
  }

  std::string_view s_;
  const std::vector<std::string>& roots_;
  std::string out_;
};

std::vector<std::string> temp_roots() {
  std::vector<std::string> roots = {"/tmp/", "/var/tmp/", "/private/tmp/", "/private/var/folders/", "/var/folders/",
                                    "/dev/shm/"};
  if (const char* t = std::getenv("TMPDIR")) {
    std::string dir = t;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.size() > 1 && dir[0] == '/') roots.push_back(dir + "/");
  }
  return roots;
}

// ---------------------------------------------------------------------------
// Failure evidence.

bool contains_word(std::string_view lowered, std::string_view w) {
  for (size_t p = lowered.find(w); p != std::string_view::npos; p = lowered.find(w, p + 1)) {
    bool left = p == 0 || !is_word(lowered[p - 1]);
    bool right = p + w.size() >= lowered.size() || !is_word(lowered[p + w.size()]);
    if (left && right) return true;
  }
  return false;
}

// `lowered` is a line in lower case with its tallies removed.
bool is_evidence_line(std::string_view lowered) {
  static const std::string_view substrings[] = {
      "fail", "error", "assert", "expect", "panic", "exception", "traceback", "not ok", "abort", "segfault",
      "segmentation fault", "timeout", "timed out", "mismatch", "!=", "but was", "\xe2\x9c\x96" /* ✖ */,
      "\xe2\x9c\x95" /* ✕ */, "\xc3\x97" /* × */, "\xe2\x97\x8f" /* ● */, "\xe2\x89\xa0" /* ≠ */};
  for (std::string_view k : substrings)
    if (lowered.find(k) != std::string_view::npos) return true;
  static const std::string_view words[] = {"want", "got", "actual", "received"};
  for (std::string_view w : words)
    if (contains_word(lowered, w)) return true;
  return false;
}

// Words that, next to a number, make a tally ("2 passed", "Tests run: 3",
// failures="1", "# fail 1"): how many tests ran or failed, never which.
bool tally_word_at(std::string_view lowered, size_t i, size_t* end) {
  static const std::string_view words[] = {
      "tests", "test", "passed", "passing", "pass", "failed", "failing", "failures", "failure", "fail", "errors",
      "error", "skipped", "skip", "ignored", "measured", "filtered", "total", "todo", "cancelled", "suites",
      "suite", "run", "pending", "disabled", "xfailed", "xpassed", "deselected", "warnings", "snapshots"};
  for (std::string_view w : words) {
    if (lowered.substr(i, w.size()) != w) continue;
    if (i + w.size() < lowered.size() && is_word(lowered[i + w.size()])) continue;
    *end = i + w.size();
    return true;
  }
  return false;
}

// End of the tally words that follow `k` ("1 tests failed"), or `k`.
size_t more_tally_words(std::string_view lowered, size_t k) {
  size_t w = 0;
  while (true) {
    size_t m = k;
    while (m < lowered.size() && lowered[m] == ' ') ++m;
    if (m == k || !tally_word_at(lowered, m, &w)) return k;
    k = w;
  }
}

std::vector<std::pair<size_t, size_t>> tally_spans(std::string_view lowered) {
  std::vector<std::pair<size_t, size_t>> spans;
  size_t i = 0;
  while (i < lowered.size()) {
    bool boundary = i == 0 || !is_word(lowered[i - 1]);
    if (boundary && is_digit(lowered[i])) {  // "2 passed", "67% tests passed", "1 FAILED TEST"
      size_t k = i + count_digits(lowered, i);
      if (k < lowered.size() && lowered[k] == '%') ++k;
      size_t end = more_tally_words(lowered, k);
      if (end > k) {
        spans.emplace_back(i, end);
        i = end;
        continue;
      }
    }
    size_t w = 0;
    if (boundary && is_alpha(lowered[i]) && tally_word_at(lowered, i, &w)) {  // "Failures: 1", tests="3"
      size_t k = w;
      if (k < lowered.size() && (lowered[k] == ':' || lowered[k] == '=')) ++k;
      char quote = k < lowered.size() && (lowered[k] == '"' || lowered[k] == '\'') ? lowered[k++] : 0;
      while (k < lowered.size() && lowered[k] == ' ') ++k;
      size_t d = count_digits(lowered, k);
      if (d && !(k + d < lowered.size() && is_word(lowered[k + d]))) {
        k += d;
        if (quote && k < lowered.size() && lowered[k] == quote) ++k;
        else k = more_tally_words(lowered, k);  // "Tests: 1 failed"
        spans.emplace_back(i, k);
        i = k;
        continue;
      }
      i = w;
      continue;
    }
    ++i;
  }
  return spans;
}

// Digit runs in s[from, to) become "<n>".
void replace_numbers(std::string_view s, size_t from, size_t to, std::string& out) {
  for (size_t k = from; k < to;) {
    size_t d = count_digits(s, k);
    if (d) {
      out += "<n>";
      k += d;
    } else {
      out += s[k++];
    }
  }
}

// A passing test's line: never evidence, and skipped among details so that
// adding or renaming a passing test leaves the failure's signature alone.
bool is_pass_line(std::string_view line) {
  std::string_view t = trim(line);
  if (t.find("\xe2\x9c\x93") != std::string_view::npos || t.find("\xe2\x9c\x94") != std::string_view::npos) return true;
  if (starts_with(t, "[       OK ]") || starts_with(t, "[  PASSED  ]")) return true;
  if (starts_with(t, "ok ") && t.size() > 3 && is_digit(t[3])) return true;  // TAP
  if (ends_with(t, " ... ok")) return true;                                  // cargo
  size_t sp = t.find(' ');
  return sp != std::string_view::npos && t.substr(0, sp).find("::") != std::string_view::npos &&
         starts_with(ltrim(t.substr(sp)), "PASSED");  // pytest -v
}

struct Classified {
  bool pass = false;
  bool evidence = false;
  std::string text;  // what goes into the signature
};

Classified classify(std::string_view line) {
  Classified c;
  if (is_pass_line(line)) {
    c.pass = true;
    return c;
  }
  // pytest's "FAILED id - message": the message is cut to the terminal width.
  for (std::string_view p : {std::string_view("FAILED "), std::string_view("ERROR ")}) {
    if (!starts_with(line, p)) continue;
    size_t dash = line.find(" - ", p.size());
    if (dash == std::string_view::npos) continue;
    std::string_view id = line.substr(p.size(), dash - p.size());
    if (id.find("::") != std::string_view::npos || ends_with(id, ".py")) line = line.substr(0, dash);
  }
  std::string lowered(line);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), lower);
  std::string without_tallies;
  size_t at = 0;
  for (auto [from, to] : tally_spans(lowered)) {
    without_tallies += lowered.substr(at, from - at);
    c.text += line.substr(at, from - at);
    replace_numbers(line, from, to, c.text);
    at = to;
  }
  without_tallies += lowered.substr(at);
  c.text += line.substr(at);
  // pytest's "E   " lines explain the failure whatever words they use.
  c.evidence = starts_with(line, "E ") || is_evidence_line(without_tallies);
  // A test's position in the run ("not ok 3 - x", CTest's "1/3 Test #1: x"
  // and "  1 - x (Failed)") moves when tests are added before it.
  std::string_view t = ltrim(c.text);
  std::string head = c.text.substr(0, c.text.size() - t.size());
  size_t d = count_digits(t, 0);
  size_t colon = t.find(": ");
  if (starts_with(t, "not ok ") && count_digits(t, 7)) {
    c.text = head + "not ok <n>" + std::string(t.substr(7 + count_digits(t, 7)));
  } else if (d && starts_with(t.substr(d), " - ")) {
    c.text = head + "<n>" + std::string(t.substr(d));
  } else if (d && t.substr(d, 1) == "/" && colon != std::string_view::npos &&
             t.substr(0, colon).find(" Test ") != std::string_view::npos) {
    replace_numbers(t, 0, colon, head);
    c.text = head + std::string(t.substr(colon));
  }
  return c;
}

// ---------------------------------------------------------------------------
// Failing test names, one recognizer per runner family.

class TestNameCollector {
 public:
  explicit TestNameCollector(std::string_view output) : lines_(terminal_lines(output)), text_(strip_ansi(output)) {}

  std::vector<std::string> run() {
    for (const auto& line : lines_) {
      googletest(line);
      ctest(line);
      pytest(line);
      tap(line);
      node_spec(line);
      jest_vitest(line);
      go(line);
      cargo(line);
      maven(line);
    }
    junit_xml();

    names_.insert(pytest_ids_.empty() ? pytest_headers_.begin() : pytest_ids_.begin(),
                  pytest_ids_.empty() ? pytest_headers_.end() : pytest_ids_.end());
    if (!jest_named_) names_.insert(jest_marks_.begin(), jest_marks_.end());
    if (!node_spec_named_) names_.insert(node_spec_section_.begin(), node_spec_section_.end());
    // A Go test fails whenever one of its subtests does; the subtest is the news.
    for (const auto& g : go_) {
      auto child = go_.lower_bound(g + "/");
      if (!(child != go_.end() && starts_with(*child, g + "/"))) names_.insert(g);
    }
    return {names_.begin(), names_.end()};
  }

 private:
  void add(std::string_view name) {
    name = trim(name);
    if (!name.empty()) names_.emplace(name);
  }

  void googletest(std::string_view line) {
    std::string_view t = ltrim(line);
    static constexpr std::string_view kMark = "[  FAILED  ] ";
    if (!starts_with(t, kMark)) return;
    std::string_view rest = t.substr(kMark.size());
    if (rest.empty() || is_digit(rest[0])) return;  // "[  FAILED  ] 1 test, listed below:"
    add(rest.substr(0, rest.find_first_of(" ,")));
  }

  void ctest(std::string_view line) {
    std::string_view t = trim(line);
    if (t == "The following tests FAILED:") {
      in_ctest_list_ = true;
      return;
    }
    if (in_ctest_list_) {  // "  1 - adds (Failed)"
      size_t d = count_digits(t, 0);
      std::string_view rest = ltrim(t.substr(d));
      if (d && starts_with(rest, "- ")) {
        rest = rest.substr(2);
        add(rest.substr(0, rest.find(" (")));
        return;
      }
      in_ctest_list_ = false;
    }
    // "1/3 Test #1: adds .......***Failed    0.00 sec"
    if (t.find("***") == std::string_view::npos) return;
    size_t p = t.find("Test ");
    if (p == std::string_view::npos) return;
    size_t j = p + 5;
    while (j < t.size() && t[j] == ' ') ++j;
    if (j >= t.size() || t[j] != '#') return;
    size_t d = count_digits(t, j + 1);
    j += 1 + d;
    if (!d || j + 1 >= t.size() || t[j] != ':' || t[j + 1] != ' ') return;
    std::string_view rest = ltrim(t.substr(j + 2));
    add(rest.substr(0, rest.find(' ')));
  }

  void pytest(std::string_view line) {
    for (std::string_view p : {std::string_view("FAILED "), std::string_view("ERROR ")}) {
      if (!starts_with(line, p)) continue;
      std::string_view rest = line.substr(p.size());
      std::string_view id = trim(rest.substr(0, rest.find(" - ")));
      std::string_view first = id.substr(0, id.find(' '));
      if (first.find("::") != std::string_view::npos || ends_with(first, ".py")) pytest_ids_.emplace(id);
      return;
    }
    // -v: "test_calc.py::test_adds FAILED    [ 33%]"
    std::string_view t = trim(line);
    size_t sp = t.find(' ');
    if (sp != std::string_view::npos && t.substr(0, sp).find("::") != std::string_view::npos) {
      std::string_view status = ltrim(t.substr(sp));
      if (starts_with(status, "FAILED") || starts_with(status, "ERROR")) pytest_ids_.emplace(t.substr(0, sp));
      return;
    }
    // "______ test_adds ______" section headers.
    if (!starts_with(t, "___ ") && !starts_with(t, "____")) return;
    if (!ends_with(t, " ___") && !ends_with(t, "____")) return;
    size_t a = t.find_first_not_of('_'), b = t.find_last_not_of('_');
    if (a == std::string_view::npos || a < 3 || t.size() - 1 - b < 3) return;
    std::string_view inner = trim(t.substr(a, b - a + 1));
    for (std::string_view p : {std::string_view("ERROR at setup of "), std::string_view("ERROR at teardown of "),
                               std::string_view("ERROR collecting ")})
      if (starts_with(inner, p)) inner = inner.substr(p.size());
    if (!inner.empty() && inner.find(' ') == std::string_view::npos) pytest_headers_.emplace(inner);
  }

  // TAP as node --test prints it: "# Subtest: name" opens a level, nested
  // levels are indented four spaces, and a parent's "not ok" follows its
  // children's.
  void tap(std::string_view line) {
    size_t ind = indent_of(line);
    std::string_view t = trim(line);
    size_t depth = ind / 4;
    if (starts_with(t, "# Subtest: ")) {
      subtests_.resize(depth);
      subtests_.emplace_back(trim(t.substr(11)));
      return;
    }
    if (!starts_with(t, "not ok") || (t.size() > 6 && t[6] != ' ')) return;
    std::string_view rest = ltrim(t.substr(6));
    rest = ltrim(rest.substr(count_digits(rest, 0)));
    if (starts_with(rest, "- ")) rest = rest.substr(2);
    long previous = last_not_ok_indent_;
    last_not_ok_indent_ = static_cast<long>(ind);
    size_t hash = rest.find(" # ");
    if (hash != std::string_view::npos) {
      std::string dir(ltrim(rest.substr(hash + 3)).substr(0, 4));
      std::transform(dir.begin(), dir.end(), dir.begin(), lower);
      if (dir == "todo" || dir == "skip") return;  // expected not to pass
      rest = rest.substr(0, hash);
    }
    if (previous > static_cast<long>(ind)) return;  // failed because a child did
    std::string name;
    for (size_t k = 0; k < depth && k < subtests_.size(); ++k)
      if (!subtests_[k].empty()) name += subtests_[k] + " > ";
    std::string leaf(trim(rest));
    for (size_t p = leaf.find("\\#"); p != std::string::npos; p = leaf.find("\\#", p)) leaf.erase(p, 1);
    add(name + leaf);
  }

  // node --test's spec reporter: "▶ suite" opens a suite, "✖ name (1ms)"
  // is a failed test, and a suite closes with its own "✖ suite" when a child
  // failed. After "✖ failing tests:" the failures are repeated without their
  // suites; that copy is used only when the tree was not seen.
  void node_spec(std::string_view line) {
    static constexpr std::string_view kSuite = "\xe2\x96\xb6 ", kFail = "\xe2\x9c\x96 ";
    size_t ind = indent_of(line);
    std::string_view t = trim(line);
    bool suite = starts_with(t, kSuite), fail = starts_with(t, kFail);
    if (!suite && !fail) return;
    std::string name = strip_trailing_duration(t.substr(suite ? kSuite.size() : kFail.size()));
    if (suite) {
      while (!suites_.empty() && suites_.back().indent >= ind) suites_.pop_back();
      suites_.push_back({ind, name, false});
      return;
    }
    if (name == "failing tests:") {
      in_failing_section_ = true;
      return;
    }
    if (name.find(" # TODO") != std::string::npos || name.find(" # SKIP") != std::string::npos) return;
    if (!name.empty() && is_digit(name[0]) && name.find("problem") != std::string::npos) return;  // eslint's tally
    if (in_failing_section_) {
      node_spec_section_.insert(name);
      return;
    }
    while (!suites_.empty() && suites_.back().indent > ind) suites_.pop_back();
    if (!suites_.empty() && suites_.back().indent == ind && suites_.back().name == name) {
      bool child_failed = suites_.back().child_failed;
      if (!child_failed) {  // the suite itself failed (a hook), not a test in it
        std::string full;
        for (const auto& s : suites_) full += (full.empty() ? "" : " > ") + s.name;
        add(full);
        node_spec_named_ = true;
      }
      suites_.pop_back();
      return;
    }
    while (!suites_.empty() && suites_.back().indent >= ind) suites_.pop_back();
    std::string full;
    for (auto& s : suites_) {
      full += s.name + " > ";
      s.child_failed = true;
    }
    add(full + name);
    node_spec_named_ = true;
  }

  void jest_vitest(std::string_view line) {
    static constexpr std::string_view kDot = "\xe2\x97\x8f ", kCross = "\xe2\x9c\x95 ", kTimes = "\xc3\x97 ";
    std::string_view t = trim(line);
    if (starts_with(t, kDot)) {
      std::string_view name = trim(t.substr(kDot.size()));
      if (name == "Test suite failed to run") {
        if (!jest_file_.empty()) add(jest_file_);
        jest_named_ = true;
      } else if (name != "Console") {
        add(name);
        jest_named_ = true;
      }
      return;
    }
    if (starts_with(t, "FAIL ")) {
      std::string_view rest = trim(t.substr(5));
      if (rest.find(" > ") != std::string_view::npos) {  // vitest: "file > suite > test"
        add(rest);
        jest_named_ = true;
      } else if (ends_with(rest, " ]") && rest.find(" [ ") != std::string_view::npos) {  // vitest: file failed to load
        add(rest.substr(0, rest.find(" [ ")));
        jest_named_ = true;
      } else {
        jest_file_ = strip_trailing_duration(rest);
      }
      return;
    }
    for (std::string_view mark : {kCross, kTimes})
      if (starts_with(t, mark)) jest_marks_.insert(strip_trailing_duration(t.substr(mark.size())));
  }

  void go(std::string_view line) {
    std::string_view t = ltrim(line);
    if (!starts_with(t, "--- FAIL: ")) return;
    std::string_view rest = t.substr(10);
    std::string name(trim(rest.substr(0, rest.find(" ("))));
    if (!name.empty()) go_.insert(name);
  }

  void cargo(std::string_view line) {
    std::string_view t = rtrim(line);
    if (starts_with(t, "test ") && ends_with(t, " ... FAILED")) {
      std::string_view name = t.substr(5, t.size() - 5 - 11);
      if (ends_with(name, " - should panic")) name.remove_suffix(15);
      add(name);
      return;
    }
    if (starts_with(t, "---- ") && (ends_with(t, " stdout ----") || ends_with(t, " stderr ----"))) {
      add(t.substr(5, t.size() - 5 - 12));
      return;
    }
    if (t == "failures:") {
      in_cargo_failures_ = true;
      return;
    }
    if (in_cargo_failures_) {
      if (starts_with(t, "    ") && !is_blank(t)) add(t);
      else in_cargo_failures_ = false;
    }
  }

  void maven(std::string_view line) {
    if (line.find("<<< FAILURE!") == std::string_view::npos && line.find("<<< ERROR!") == std::string_view::npos) return;
    std::string_view t = trim(line);
    if (starts_with(t, "[ERROR]")) t = ltrim(t.substr(7));
    if (starts_with(t, "Tests run:")) return;  // the per-class tally
    std::string_view token = t.substr(0, t.find(' '));
    size_t open = token.find('(');
    if (open != std::string_view::npos && ends_with(token, ")") && open + 2 < token.size()) {
      // Surefire 2: "method(package.Class)"
      add(std::string(token.substr(open + 1, token.size() - open - 2)) + "." + std::string(token.substr(0, open)));
    } else {
      add(token);
    }
  }

  static std::string xml_unescape(std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '&') {
        out += v[i];
        continue;
      }
      size_t semi = v.find(';', i);
      if (semi == std::string_view::npos || semi - i > 10) {
        out += v[i];
        continue;
      }
      std::string_view ent = v.substr(i + 1, semi - i - 1);
      if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "amp") out += '&';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (starts_with(ent, "#")) {
        bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
        unsigned long cp = std::strtoul(std::string(ent.substr(hex ? 2 : 1)).c_str(), nullptr, hex ? 16 : 10);
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) {
          out += static_cast<char>(0xc0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
          out += static_cast<char>(0xe0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
          out += static_cast<char>(0xf0 | (cp >> 18));
          out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        }
      } else {
        out += v.substr(i, semi - i + 1);
      }
      i = semi;
    }
    return out;
  }

  static bool has_tag(std::string_view body, std::string_view tag) {
    for (size_t p = body.find(tag); p != std::string_view::npos; p = body.find(tag, p + 1)) {
      size_t e = p + tag.size();
      if (e < body.size() && (body[e] == ' ' || body[e] == '>' || body[e] == '/' || body[e] == '\n' || body[e] == '\t'))
        return true;
    }
    return false;
  }

  void junit_xml() {
    std::string_view x = text_;
    for (size_t p = x.find("<testcase"); p != std::string_view::npos; p = x.find("<testcase", p + 1)) {
      size_t j = p + 9;
      if (j >= x.size() || !(x[j] == ' ' || x[j] == '\n' || x[j] == '\t' || x[j] == '\r')) continue;
      std::string name, classname;
      // Attributes up to the end of the tag, honouring quotes.
      while (j < x.size() && x[j] != '>' && x[j] != '/') {
        while (j < x.size() && (x[j] == ' ' || x[j] == '\n' || x[j] == '\t' || x[j] == '\r')) ++j;
        size_t k = j;
        while (k < x.size() && x[k] != '=' && x[k] != '>' && x[k] != '/' && x[k] != ' ') ++k;
        std::string_view key = x.substr(j, k - j);
        if (k >= x.size() || x[k] != '=' || k + 1 >= x.size() || (x[k + 1] != '"' && x[k + 1] != '\'')) {
          j = k;
          break;
        }
        char q = x[k + 1];
        size_t end = x.find(q, k + 2);
        if (end == std::string_view::npos) return;
        std::string value = xml_unescape(x.substr(k + 2, end - k - 2));
        if (key == "name") name = value;
        else if (key == "classname") classname = value;
        j = end + 1;
      }
      if (j >= x.size() || x[j] == '/') continue;  // <testcase .../> passed
      size_t close = x.find("</testcase>", j);
      std::string_view body = x.substr(j, close == std::string_view::npos ? std::string_view::npos : close - j);
      if (!has_tag(body, "<failure") && !has_tag(body, "<error")) continue;
      add(classname.empty() || classname == name ? name : classname + "." + name);
    }
  }

  struct Suite {
    size_t indent;
    std::string name;
    bool child_failed;
  };

  std::vector<std::string> lines_;
  std::string text_;
  std::set<std::string> names_;
  bool in_ctest_list_ = false;
  std::set<std::string> pytest_ids_, pytest_headers_;
  std::vector<std::string> subtests_;
  long last_not_ok_indent_ = -1;
  std::vector<Suite> suites_;
  bool in_failing_section_ = false, node_spec_named_ = false;
  std::set<std::string> node_spec_section_;
  std::string jest_file_;
  bool jest_named_ = false;
  std::set<std::string> jest_marks_;
  std::set<std::string> go_;
  bool in_cargo_failures_ = false;
};

}  // namespace

std::vector<std::string> extract_failing_tests(std::string_view output) {
  return TestNameCollector(output).run();
}

std::string normalize(std::string_view text) {
  const std::vector<std::string> roots = temp_roots();
  std::string out;
  bool pending_blank = false;
  for (const auto& line : terminal_lines(text)) {
    std::string n = LineNormalizer(line, roots).run();
    if (n.empty()) {
      pending_blank = !out.empty();
      continue;
    }
    if (pending_blank) out += '\n';
    pending_blank = false;
    out += n;
    out += '\n';
  }
  return out;
}

std::string failure_evidence(std::string_view normalized) {
  std::vector<std::string> lines = util::split_lines(normalized);
  std::set<std::string> kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    Classified c = classify(lines[i]);
    if (!c.evidence) continue;
    kept.insert(c.text);
    size_t base = indent_of(lines[i]);
    int details = 0;
    for (size_t j = i + 1; j < lines.size() && details < 10; ++j) {
      if (is_blank(lines[j])) continue;
      if (indent_of(lines[j]) <= base) break;
      Classified d = classify(lines[j]);
      if (d.pass) continue;
      kept.insert(d.text);
      ++details;
    }
  }
  std::string out;
  for (const auto& k : kept) out += k + "\n";
  return out;
}

std::string issue_signature(const std::string& check_id, std::string_view output) {
  std::vector<std::string> tests = extract_failing_tests(output);
  std::string normalized = normalize(output);
  std::string material = "phoenix-issue-v1\n" + check_id + "\n" + std::to_string(tests.size()) + "\n";
  for (const auto& t : tests) material += t + "\n";
  material += tests.empty() ? normalized : failure_evidence(normalized);
  return util::sha256_hex(material);
}

std::string attempt_signature(const std::string& issue_sig, std::vector<std::string> changed_files) {
  for (auto& f : changed_files)
    while (f.size() > 2 && f[0] == '.' && f[1] == '/') f.erase(0, 2);
  std::sort(changed_files.begin(), changed_files.end());
  changed_files.erase(std::unique(changed_files.begin(), changed_files.end()), changed_files.end());
  std::string material = "phoenix-attempt-v1\n" + issue_sig + "\n" + std::to_string(changed_files.size()) + "\n";
  for (const auto& f : changed_files) material += f + "\n";
  return util::sha256_hex(material);
}

}  // namespace phoenix::engine
