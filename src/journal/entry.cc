#include "journal/entry.h"

#include <algorithm>
#include <cstdio>

#include "util/hash.h"

namespace phoenix::journal {
namespace {

Tally merge_tally(const Tally& a, const Tally& b) {
  Tally r;
  r.attempts = std::max(a.attempts, b.attempts);
  r.successes = std::max(a.successes, b.successes);
  r.failures = std::max(a.failures, b.failures);
  r.replays = std::max(a.replays, b.replays);
  r.first_seen = a.first_seen == 0   ? b.first_seen
                 : b.first_seen == 0 ? a.first_seen
                                     : std::min(a.first_seen, b.first_seen);
  r.last_seen = std::max(a.last_seen, b.last_seen);
  r.last_verified = std::max(a.last_verified, b.last_verified);
  r.last_failed = std::max(a.last_failed, b.last_failed);
  r.last_failure = b.last_failed > a.last_failed ? b.last_failure : a.last_failure;
  return r;
}

}  // namespace

bool same_tally(const Tally& a, const Tally& b) {
  return a.attempts == b.attempts && a.successes == b.successes && a.failures == b.failures && a.replays == b.replays &&
         a.first_seen == b.first_seen && a.last_seen == b.last_seen && a.last_verified == b.last_verified &&
         a.last_failed == b.last_failed && a.last_failure == b.last_failure;
}

void Entry::recompute() {
  attempts = successes = failures = replays = 0;
  first_seen = last_seen = last_verified = last_failed = 0;
  last_failure.clear();
  for (const auto& [origin, t] : tallies) {
    attempts += t.attempts;
    successes += t.successes;
    failures += t.failures;
    replays += t.replays;
    if (t.first_seen != 0 && (first_seen == 0 || t.first_seen < first_seen)) first_seen = t.first_seen;
    last_seen = std::max(last_seen, t.last_seen);
    last_verified = std::max(last_verified, t.last_verified);
    if (t.last_failed > last_failed) {
      last_failed = t.last_failed;
      last_failure = t.last_failure;
    }
  }
  // A tie cannot come from one journal (its events on an entry get strictly
  // increasing times); between machines, a failure wins: a stale patch
  // costs seconds, a wrongly trusted one costs correctness.
  verified = last_verified > last_failed;
}

std::optional<long long> Entry::saved_model_calls() const {
  if (replays == 0) return 0;
  if (!model_calls) return std::nullopt;
  return replays * *model_calls;
}

std::optional<double> Entry::saved_cost_usd() const {
  if (replays == 0) return 0.0;
  if (!cost_usd) return std::nullopt;
  return static_cast<double>(replays) * *cost_usd;
}

Entry merge_entries(const Entry& mine, const Entry& theirs) {
  Entry r = mine;
  if (!r.duration_ms) r.duration_ms = theirs.duration_ms;
  if (!r.verify_ms) r.verify_ms = theirs.verify_ms;
  if (!r.model_calls) r.model_calls = theirs.model_calls;
  if (!r.cost_usd) r.cost_usd = theirs.cost_usd;
  for (const auto& [origin, t] : theirs.tallies) {
    auto it = r.tallies.find(origin);
    r.tallies[origin] = it == r.tallies.end() ? t : merge_tally(it->second, t);
  }
  r.recompute();
  return r;
}

bool same_entry(const Entry& a, const Entry& b) {
  if (a.tallies.size() != b.tallies.size()) return false;
  for (const auto& [origin, t] : a.tallies) {
    auto it = b.tallies.find(origin);
    if (it == b.tallies.end() || !same_tally(t, it->second)) return false;
  }
  return a.duration_ms == b.duration_ms && a.verify_ms == b.verify_ms && a.model_calls == b.model_calls &&
         a.cost_usd == b.cost_usd;
}

std::string patch_hash(const std::string& patch) { return util::sha256_hex(patch); }

bool is_lower_hex(const std::string& s, size_t n) {
  return (n == 0 || s.size() == n) &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace phoenix::journal
