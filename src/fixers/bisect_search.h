// The pure part of bisect: what is known of a range of commits (measured
// green, measured red, skipped), which of them to measure next, and the
// verdict once nothing is left to measure. No git, no threads, no oracle:
// fixers/bisect.h resolves the range, moves the worktrees and runs the
// check, and asks this which commits to probe.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace phoenix::fixers {

// One measurement made by bisect_commits(), in the order made.
struct BisectStep {
  std::string sha;
  size_t position = 0;  // 0 = `good`, i = the i-th commit after it (range_size = `bad`)
  bool green = false;
};

struct BisectResult {
  enum class Verdict {
    kFound,       // culprit = first red commit of the range
    kGoodIsRed,   // the oracle is red at `good` itself: no commit of the range to blame
    kEmptyRange,  // good == bad, or good is not an ancestor of bad (see reason)
    kSkipped,     // every commit left to measure was skipped (see reason): the culprit is one of several
  };
  Verdict verdict = Verdict::kEmptyRange;
  std::string culprit;          // kFound: the first red commit
  std::string last_good;        // kFound: the commit before it in the walk (measured green)
  size_t culprit_position = 0;  // kFound: 1..range_size
  size_t range_size = 0;        // commits in good..bad along first parents (bad included)
  std::vector<BisectStep> steps;
  std::vector<std::string> skipped;  // commits the oracle skipped, in the order tried
  std::string reason;                // kEmptyRange, kSkipped: why
  size_t cancelled = 0;              // parallel: probes stopped (or ignored) once the answer no longer needed them
  int runs() const { return static_cast<int>(steps.size()); }
};

// The positions of one search and what is known of them. Position 0 is
// `good`, 1..n the first-parent commits after it, n = bad. Invariant: the
// first red position is in [lo, hi]; everything below lo was measured
// green, hi is red (measured, or `bad`).
struct BisectRange {
  std::vector<std::string> pos;
  size_t lo = 0, hi = 0;
  std::set<size_t> skipped;
  std::string last_skip_why;  // "1a2b3c4: <why>" of the last commit skipped

  BisectRange() = default;
  // Over `positions`: `good` first, `bad` (known red) last; nothing measured.
  explicit BisectRange(std::vector<std::string> positions);

  // Whether the first red position is still unknown.
  bool open() const { return lo < hi; }
  // Whether a result at `position` still narrows the range (it lies in
  // [lo, hi)); one that does not is no longer needed.
  bool wanted(size_t position) const { return position >= lo && position < hi; }

  // Up to `free` new positions to measure, none in `in_flight` (probes
  // already running) or skipped. The probes in flight inside [lo, hi) cut
  // the possible answers into segments; each new probe goes to the segment
  // whose pieces would stay largest, and a segment's probes split it
  // evenly: with s answers [a, b] and c probes, the i-th at
  // a + ceil(s*i/(c+1)) - 1 (for one probe, the midpoint bisect uses). A
  // wanted position that is taken moves to the nearest free one of its
  // segment, above first. Empty when nothing measurable is left.
  std::vector<size_t> plan(const std::set<size_t>& in_flight, size_t free) const;

  // The oracle's answer at `position` (wanted): a step of `r`, and the
  // range narrows (green: above it; red: up to it).
  void measured(size_t position, bool green, BisectResult& r);
  // `position` could not be measured (`why`: BisectSkip's): set aside, and
  // its commit added to r.skipped.
  void skip(size_t position, const std::string& why, BisectResult& r);

  // The verdict once plan() has nothing left: kFound (culprit, last_good,
  // culprit_position), kGoodIsRed, or kSkipped with a reason naming every
  // commit that could still be the first red one.
  void conclude(BisectResult& r) const;
};

}  // namespace phoenix::fixers
