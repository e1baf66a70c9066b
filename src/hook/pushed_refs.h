// What git writes on a pre-push hook's stdin, and how the hook names the
// commits it measures. No git, no I/O: part of phoenix_lite, which the thin
// binary phoenix-hook is built from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phoenix::hook {

// One line per ref being pushed,
//   <local ref> SP <local sha> SP <remote ref> SP <remote sha> LF
// (githooks(5)). A sha is 40 hex digits (64 in a SHA-256 repository); all
// zeros is "no object": a zero local sha is a deletion (the local ref is then
// "(delete)"), a zero remote sha a ref the remote does not have yet.
struct PushedRef {
  std::string local_ref;
  std::string local_sha;
  std::string remote_ref;
  std::string remote_sha;
  bool deletion() const;  // local sha all zeros
  bool creation() const;  // remote sha all zeros (a new branch or tag)
};

// Parses the whole of stdin. A pure function of its input: no I/O, no
// global state, any byte sequence is acceptable input. Empty input is no
// refs; the last line may lack its LF. Anything else that is not exactly
// four single-space-separated fields, with non-empty refs free of control
// characters and both shas of the same length (40 or 64) in hex (either
// case; returned lowercase), throws UsageError (exit 64) naming the line by
// number and showing it (escaped and cut to 80 bytes). Throws nothing else.
std::vector<PushedRef> parse_pre_push(std::string_view input);

// The distinct local shas to measure, in the order they first appear;
// deletions left out.
std::vector<std::string> commits_to_measure(const std::vector<PushedRef>& refs);

// "main,v1@3f2c1a9b7d10": the short local refs that push `commit`.
std::string push_label(const std::vector<const PushedRef*>& refs, const std::string& commit);

}  // namespace phoenix::hook
