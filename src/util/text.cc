#include "util/text.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "util/error.h"
#include "util/fault.h"
#include "util/format.h"

namespace phoenix::util {

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto escape = [&](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
  };
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      escape(c);
      ++i;
      continue;
    }
    bool ok = i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

namespace {
bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
// The bytes a UTF-8 character starting with `c` takes, 0 when `c` starts none.
size_t sequence_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 0;
}
}  // namespace

std::string_view utf8_head(std::string_view s, size_t max_bytes) {
  size_t cut = std::min(max_bytes, s.size());
  // The lead byte of the last character before the cut, at most three
  // continuation bytes back: dropped with them when its sequence does not
  // fit before the cut.
  size_t lead = cut;
  while (lead > 0 && cut - lead < 4 && continuation(static_cast<unsigned char>(s[lead - 1]))) --lead;
  if (lead > 0 && cut - lead < 4) {
    const size_t len = sequence_length(static_cast<unsigned char>(s[lead - 1]));
    if (len > 1 && lead - 1 + len > cut) cut = lead - 1;
  }
  return s.substr(0, cut);
}

std::string_view utf8_tail(std::string_view s, size_t max_bytes) {
  size_t from = s.size() - std::min(max_bytes, s.size());
  // A cut inside a character leaves up to three continuation bytes first.
  for (int i = 0; i < 3 && from < s.size() && continuation(static_cast<unsigned char>(s[from])); ++i) ++from;
  return s.substr(from);
}

std::string clip_utf8(std::string_view s, size_t max_bytes, std::string_view mark) {
  if (s.size() <= max_bytes) return std::string(s);
  const size_t room = max_bytes > mark.size() ? max_bytes - mark.size() : 0;
  return std::string(utf8_head(s, room)) + std::string(mark);
}

void HeadTail::append(std::string_view data) {
  total_ += data.size();
  if (head_.size() < head_cap_) {
    size_t take = std::min(head_cap_ - head_.size(), data.size());
    head_.append(data.substr(0, take));
    data.remove_prefix(take);
  }
  if (tail_cap_ == 0 || data.empty()) return;
  if (tail_.size() < tail_cap_) tail_.resize(tail_cap_);
  if (data.size() >= tail_cap_) {
    data = data.substr(data.size() - tail_cap_);
    std::copy(data.begin(), data.end(), tail_.begin());
    tail_pos_ = 0;
    tail_full_ = true;
    return;
  }
  for (char c : data) {
    tail_[tail_pos_++] = c;
    if (tail_pos_ == tail_cap_) {
      tail_pos_ = 0;
      tail_full_ = true;
    }
  }
}

std::string HeadTail::tail_str() const {
  if (!tail_full_) return tail_.substr(0, tail_pos_);
  return tail_.substr(tail_pos_) + tail_.substr(0, tail_pos_);
}

std::string HeadTail::str() const {
  std::string t = tail_str();
  if (total_ == head_.size() + t.size()) return head_ + t;
  // Something was left out between the two: neither side ends (or starts)
  // with a piece of a character.
  const std::string_view head = utf8_head(head_, head_.size());
  const std::string_view tail = utf8_tail(t, t.size());
  size_t omitted = total_ - head.size() - tail.size();
  return std::string(head) + "\n[... " + std::to_string(omitted) + " bytes omitted ...]\n" + std::string(tail);
}

std::string HeadTail::last(size_t n) const {
  std::string all = total_ > head_.size() + tail_size() ? tail_str() : head_ + tail_str();
  return std::string(utf8_tail(all, n));
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = static_cast<size_t>(-1);
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough: at most a third of the word wrong (and at least 1 edit allowed).
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) {
        out.push_back(cur);
        cur.clear();
        in_word = false;
      }
      ++i;
    } else if (c == '\'') {
      in_word = true;
      size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) throw ConfigError("unterminated ' in command: " + std::string(s));
      cur.append(s.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '"') {
          closed = true;
          ++i;
          break;
        }
        if (s[i] == '\\' && i + 1 < s.size() && std::string_view("\"\\$`\n").find(s[i + 1]) != std::string_view::npos) {
          cur.push_back(s[i + 1]);
          i += 2;
          continue;
        }
        cur.push_back(s[i++]);
      }
      if (!closed) throw ConfigError("unterminated \" in command: " + std::string(s));
    } else if (c == '\\' && i + 1 < s.size()) {
      in_word = true;
      cur.push_back(s[i + 1]);
      i += 2;
    } else {
      in_word = true;
      cur.push_back(c);
      ++i;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out.push_back(' ');
    bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out.push_back('\'');
    for (char c : a) {
      if (c == '\'') out += "'\\''";
      else out.push_back(c);
    }
    out.push_back('\'');
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      break;
    }
    out.emplace_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string compact_utc(bool millis) {
  std::string iso = now_iso8601();  // 2026-12-01T02:09:41.123Z
  std::string digits;
  for (char c : iso)
    if (c >= '0' && c <= '9') digits.push_back(c);
  return digits.substr(0, 8) + "-" + digits.substr(8, millis ? 9 : 6);
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
             .count() +
         PHOENIX_FAULT_CLOCK_OFFSET_MS();
}

long long iso8601_ms(const std::string& ts) {
  int Y, M, D, h, m, sec, ms = 0;
  if (std::sscanf(ts.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &Y, &M, &D, &h, &m, &sec, &ms) < 6) return -1;
  std::tm tm = civil_tm(Y, M, D, h, m, sec);
  return static_cast<long long>(timegm(&tm)) * 1000 + ms;
}

std::tm civil_tm(int year, int month, int day, int hour, int minute, int second) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return tm;
}

std::string now_iso8601() { return iso8601(now_ms()); }

}  // namespace phoenix::util
