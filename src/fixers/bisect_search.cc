#include "fixers/bisect_search.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "util/format.h"

namespace phoenix::fixers {

namespace {

// The position in [a, b) nearest `want` (above first) not in `taken`.
std::optional<size_t> nearest_free(size_t want, size_t a, size_t b, const std::set<size_t>& taken) {
  for (size_t d = 0; d < b - a; ++d) {
    if (want + d < b && !taken.count(want + d)) return want + d;
    if (want >= a + d && !taken.count(want - d)) return want - d;
  }
  return std::nullopt;
}

}  // namespace

BisectRange::BisectRange(std::vector<std::string> positions)
    : pos(std::move(positions)), lo(0), hi(pos.empty() ? 0 : pos.size() - 1) {}

std::vector<size_t> BisectRange::plan(const std::set<size_t>& in_flight, size_t free) const {
  struct Segment {
    size_t a, b, probes = 0;
    size_t size() const { return b - a + 1; }
  };
  std::vector<Segment> segments;
  size_t a = lo;
  for (size_t m : in_flight) {
    if (m < a || m >= hi) continue;
    segments.push_back({a, m});
    a = m + 1;
  }
  segments.push_back({a, hi});
  for (size_t i = 0; i < free; ++i) {
    Segment* best = nullptr;
    double best_piece = 1;
    for (Segment& g : segments) {
      const double piece = static_cast<double>(g.size()) / static_cast<double>(g.probes + 1);
      if (g.probes + 1 < g.size() && piece > best_piece) best = &g, best_piece = piece;
    }
    if (!best) break;
    ++best->probes;
  }
  std::set<size_t> taken = skipped;
  taken.insert(in_flight.begin(), in_flight.end());
  std::vector<size_t> out;
  for (const Segment& g : segments) {
    for (size_t i = 1; i <= g.probes; ++i) {
      const size_t want = g.a + (g.size() * i + g.probes) / (g.probes + 1) - 1;
      if (std::optional<size_t> m = nearest_free(want, g.a, g.b, taken)) {
        out.push_back(*m);
        taken.insert(*m);
      }
    }
  }
  return out;
}

void BisectRange::measured(size_t position, bool green, BisectResult& r) {
  r.steps.push_back({pos[position], position, green});
  if (green) lo = position + 1;
  else hi = position;
}

void BisectRange::skip(size_t position, const std::string& why, BisectResult& r) {
  const std::string& sha = pos[position];
  skipped.insert(position);
  r.skipped.push_back(sha);
  last_skip_why = util::short_sha(sha) + ": " + why;
}

void BisectRange::conclude(BisectResult& r) const {
  if (lo < hi) {
    r.verdict = BisectResult::Verdict::kSkipped;
    std::string names;
    for (size_t i = std::max<size_t>(lo, 1); i <= hi; ++i)
      names += (names.empty() ? "" : ", ") + util::short_sha(pos[i]);
    r.reason = "the first red commit is one of " + names + ": the commits between could not be measured (" +
               last_skip_why + ")";
    return;
  }
  if (lo == 0) {
    r.verdict = BisectResult::Verdict::kGoodIsRed;
    return;
  }
  r.verdict = BisectResult::Verdict::kFound;
  r.culprit = pos[lo];
  r.last_good = pos[lo - 1];
  r.culprit_position = lo;
}

}  // namespace phoenix::fixers
