// Words and numbers as people read them: counts, seconds, short commit ids,
// time stamps, and the small string edits that make them. Know nothing of
// Phoenix. One of each: look here before writing another.
#pragma once

#include <string>
#include <string_view>

namespace phoenix::util {

// ASCII letters in lower case; every other byte as it is.
std::string lower(std::string_view s);
// Every occurrence of `from` (not empty) replaced by `to`, left to right.
std::string replace_all(std::string s, std::string_view from, std::string_view to);
// "1 run", "3 runs".
std::string plural(long long n, std::string_view one, std::string_view many);
// Seconds as printf's %g writes them: "30", "0.5", "1e+03".
std::string secs(double s);

// Milliseconds as people read a length of time, in three forms (negative
// counts as 0 in the first; the others print what they are given):
// the words of the report and the timeline: "840 ms", "4.2 s" (under 10 s),
// "42 s", "4 min 12 s", "5 min", "2 h 13 min", "3 h" (each rounded to its
// last unit);
std::string duration(long long ms);
// the journal's, short and without spaces: "850ms", "12.5s", "4m10s",
// "2h05m" (cut, not rounded, below its last unit);
std::string duration_compact(long long ms);
// seconds with one decimal however long it was: "0.8 s", "75.3 s".
std::string seconds_tenths(long long ms);

// A commit as people read it: its first 7 hex digits, as `git log --oneline`.
std::string short_sha(std::string_view sha);
// The first 12 hex digits of a commit or a signature, as the trace, the
// hook's lines, the journal and the timeline name them.
std::string sha12(std::string_view hex);

// Milliseconds since the epoch as "2026-12-01T02:09:41.123Z" (UTC; what
// util::now_iso8601 writes and util::iso8601_ms reads).
std::string iso8601(long long ms);

}  // namespace phoenix::util
