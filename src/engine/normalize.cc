#include "engine/normalize.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/output_text.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

using namespace output;

// Normalization of one line: a left-to-right scan where each recognizer
// either consumes a token (appending its placeholder) or returns 0.

const char* const kWeekdays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
                                 "Mon",    "Tue",     "Wed",       "Thu",      "Fri",    "Sat",      "Sun"};
const char* const kMonths[] = {"January",   "February", "March",    "April",    "May",  "June", "July", "August",
                               "September", "October",  "November", "December", "Jan",  "Feb",  "Mar",  "Apr",
                               "Jun",       "Jul",      "Aug",      "Sep",      "Sept", "Oct",  "Nov",  "Dec"};

bool is_path_char(char c) {
  return is_alnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '~' || c == '/';
}
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
    if (util::starts_with(s_, kOmittedHead) && util::ends_with(s_, kOmittedTail)) return "[... bytes omitted ...]";
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
      if (util::starts_with(rest, r)) {
        root = &r;
        break;
      }
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
    if (!parts.empty() && util::ends_with(path, "/")) rep += "/";
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
    if (util::starts_with(rest, "duration_ms")) {
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
    if (util::starts_with(rest, "time=\"") || util::starts_with(rest, "time='")) {
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
  std::vector<std::string> roots = {"/tmp/",         "/var/tmp/", "/private/tmp/", "/private/var/folders/",
                                    "/var/folders/", "/dev/shm/"};
  if (const char* t = std::getenv("TMPDIR")) {
    std::string dir = t;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.size() > 1 && dir[0] == '/') roots.push_back(dir + "/");
  }
  return roots;
}

}  // namespace

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

}  // namespace phoenix::engine
