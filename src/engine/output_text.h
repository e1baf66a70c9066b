// Program output as text, for the signature code (normalize.h,
// test_runners.h, signature.h): ASCII character classes, blank trimming that
// returns views, colour codes removed, lines as a terminal shows them, and
// durations ("12 ms", "0.53s", Go's "1m2.5s").
//
// ASCII classes only: program output is bytes, and a UTF-8 byte must never
// count as part of a word (it would glue a placeholder to a neighbour).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::engine::output {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
inline bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
inline bool is_word(char c) { return is_alnum(c) || c == '_'; }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_blank_char(char c) { return c == ' ' || c == '\t'; }
inline char lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// Views without the leading blanks (space, tab) / the trailing blanks and
// carriage returns. Unlike util::trim, they never drop a newline and never
// copy.
std::string_view ltrim(std::string_view s);
std::string_view rtrim(std::string_view s);
// The number of leading blanks.
size_t indent_of(std::string_view s);
// Only blanks (and carriage returns at the end).
bool is_blank(std::string_view s);
// The number of ASCII digits starting at s[i].
size_t count_digits(std::string_view s, size_t i);

// ANSI escape sequences (CSI, OSC/DCS/APC/PM strings, two-byte escapes)
// removed.
std::string strip_ansi(std::string_view s);
// Lines as a terminal shows them: colour removed, and a carriage return
// (a progress bar redrawing itself) keeps only what was written after it.
// No line holds a '\r' or a '\n'.
std::vector<std::string> terminal_lines(std::string_view text);

// Length of a duration starting at s[i] ("12 ms", "0.53s", "1m2.5s"), or 0.
// Units: ns, us, µs, ms, s, sec(s), second(s), min(s), minute(s), and Go's h
// and m inside a compound duration.
size_t match_duration(std::string_view s, size_t i);
// `name` without a runner's trailing duration: "(0 ms)", " 25ms", " (1.2 s)".
std::string strip_trailing_duration(std::string_view name);

}  // namespace phoenix::engine::output
