// Text helpers that know nothing of Phoenix.
#pragma once

#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::util {

// Replaces every byte sequence that is not valid UTF-8 with "\xNN" escapes,
// so arbitrary program output can be stored in JSON and printed safely.
std::string to_valid_utf8(std::string_view bytes);

// The longest start of `s` of at most `max_bytes` bytes that does not end
// inside a UTF-8 character (a lead byte whose continuation bytes were cut
// off is left out with them); the longest end of `s` of at most
// `max_bytes` bytes that does not start inside one (continuation bytes
// before the first whole character are left out). Bytes that are not
// UTF-8 are cut like any other byte. The one place a text is shortened
// to a length: messages, details, evidence, logs.
std::string_view utf8_head(std::string_view s, size_t max_bytes);
std::string_view utf8_tail(std::string_view s, size_t max_bytes);
// utf8_head(s, max_bytes - the mark's size) + `mark` when `s` is longer
// than `max_bytes`, else `s`: "a long detail...".
std::string clip_utf8(std::string_view s, size_t max_bytes, std::string_view mark = "...");

// Keeps the first `head` and last `tail` bytes of a stream of any length,
// counting the total: bounded memory for a command printing gigabytes.
class HeadTail {
 public:
  HeadTail(size_t head, size_t tail) : head_cap_(head), tail_cap_(tail) {}
  void append(std::string_view data);
  size_t total() const { return total_; }
  bool truncated() const { return total_ > head_.size() + tail_size(); }
  // head + "\n[... N bytes omitted ...]\n" + tail, or everything when it fit.
  std::string str() const;
  // Only the last `n` bytes kept (from the tail buffer, or head when short).
  std::string last(size_t n) const;

 private:
  size_t tail_size() const { return tail_full_ ? tail_cap_ : tail_pos_; }
  std::string tail_str() const;
  size_t head_cap_, tail_cap_;
  std::string head_;
  std::string tail_;  // ring buffer of tail_cap_ bytes
  size_t tail_pos_ = 0;
  bool tail_full_ = false;
  size_t total_ = 0;
};

// Levenshtein distance, for "did you mean".
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, or "" when none is close enough.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// Splits a command string into words like a POSIX shell would (quotes and
// backslashes), without expanding anything and without a shell. Throws
// Error on an unterminated quote.
std::vector<std::string> split_words(std::string_view s);

// Joins argv for display, quoting words that need it.
std::string join_argv(const std::vector<std::string>& argv);
// The items with `sep` between them: join({"a", "b"}, ", ") is "a, b".
std::string join(const std::vector<std::string>& items, std::string_view sep);

std::string trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::vector<std::string> split_lines(std::string_view s);

// Current time as "2026-12-01T02:09:41.123Z" (UTC, milliseconds).
std::string now_iso8601();
// Current UTC time for names that sort: "20261201-020941", or with
// milliseconds "20261201-020941123".
std::string compact_utc(bool millis);
// Milliseconds since the epoch.
long long now_ms();
// "2026-12-01T02:09:41.123Z" (as now_iso8601 writes; milliseconds optional)
// to milliseconds since the epoch; -1 when it is not such a stamp.
long long iso8601_ms(const std::string& ts);
// The std::tm of a calendar date and time (month 1-12), everything else
// zero: what timegm() reads as UTC, or mktime() as local time once
// tm_isdst is -1.
std::tm civil_tm(int year, int month, int day, int hour, int minute, int second);

}  // namespace phoenix::util
