// Normalization of program output: what differs
// between two runs of the same failure becomes fixed placeholders, so an
// issue signature (signature.h) is the same each time the failure is seen.
#pragma once

#include <string>
#include <string_view>

namespace phoenix::engine {

// Rewrites what differs between two runs of the same failure into fixed
// placeholders; the result is stable text that ends in '\n' (or is empty).
//   - ANSI escape sequences (CSI, OSC, two-byte escapes) are removed; a
//     carriage return keeps only what was written after it (progress lines).
//   - Timestamps and dates -> "<time>" / "<date>": ISO 8601 (with 'T' or ' ',
//     fractions, zones, and file-name-safe "T02-21-32"), "2026/12/01",
//     "Dec  1" / "Tue Dec  1" / "01 Dec 2026", bare "02:18:07", epoch seconds
//     or milliseconds of this era (10/13/16/19 digits starting 15..19).
//   - Durations -> "<dur>": a number with a unit (ns, us, µs, ms, s, sec,
//     second(s), min, minute(s)), Go's "1m2.5s", and the unit-less values of
//     time="…" attributes and "duration_ms" fields.
//   - Addresses "0x" + 6 or more hex digits -> "0x<addr>"; Java identity
//     hashes "Object@1b6d3586" -> "Object@<hash>".
//   - Pids: "pid 1234" / "PID: 1234" / "pid=1234" -> "pid <pid>" etc.;
//     "[1234]" (3-7 digits in brackets) -> "[<pid>]"; Rust's thread id in
//     "thread 'name' (7520)" -> "(<pid>)".
//   - Temporary paths under /tmp, /var/tmp, /var/folders, /private/tmp,
//     /private/var/folders, /dev/shm or $TMPDIR -> "<tmp>/" + the last path
//     component (itself "<rand>" when it looks generated), or just "<tmp>"
//     for a lone generated entry: everything between is run-specific.
//     Elsewhere, a path component with a mkdtemp-like segment
//     ("build-Xk29aQ") has that segment replaced by "<rand>".
//   - UUIDs -> "<uuid>"; hex ids of 8+ chars mixing digits and letters (git
//     and build hashes) -> "<hex>"; digit runs of 12+ -> "<n>".
//   - Ports after 127.0.0.1, localhost, 0.0.0.0, [::1], [::] -> ":<port>".
//   - Phoenix's own "[... N bytes omitted ...]" truncation marker loses N.
//   - Trailing whitespace is removed; runs of blank lines become one blank
//     line; leading and trailing blank lines are dropped.
// Ordinary numbers ("expected 5, got 4", "3 tests") are kept: they are
// usually the failure itself.
std::string normalize(std::string_view text);

}  // namespace phoenix::engine
