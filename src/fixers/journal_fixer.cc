#include "fixers/journal_fixer.h"

#include <chrono>
#include <algorithm>
#include <optional>

#include "gitx/repo.h"
#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::fixers {

namespace {

using util::plural;

// "replay of 1a2b3c4d5e6f (healed 3 times, saves ~2 model calls and ~4m10s)"
std::string describe(const journal::Entry& e) {
  std::string saves;
  if (e.model_calls) saves = "~" + plural(*e.model_calls, "model call", "model calls");
  else saves = "an unknown number of model calls";
  if (e.duration_ms && *e.duration_ms > 0) saves += " and ~" + util::duration_compact(*e.duration_ms);
  return "replay of " + util::sha12(e.signature) + " (healed " + plural(e.successes, "time", "times") + ", saves " +
         saves + ")";
}

}  // namespace

Proposal JournalFixer::propose(const Request& request) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ms_since_t0 = [&t0] {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  };
  Proposal p;
  p.fixer = name();
  const std::string& sig = request.failure.issue_signature;
  try {
    std::vector<journal::Entry> entries = journal_.lookup(sig);
    std::optional<gitx::Repo> repo;
    std::vector<std::string> stale;
    for (const auto& e : entries) {
      if (!offered_.insert(sig + ":" + e.patch_hash).second) continue;
      if (std::any_of(request.earlier.begin(), request.earlier.end(),
                      [&](const EarlierAttempt& a) { return a.patch == e.patch; }))
        continue;
      if (!repo) repo.emplace(gitx::Repo::open(request.repo_root));
      std::string why;
      if (!repo->check_patch_applies(e.patch, gitx::ApplyLocation::kWorkdir, &why)) {
        // The code moved on under the stored patch: demote it now, so it is
        // not offered again, and fall through to the next one.
        journal_.record_failed(sig, e.patch_hash, "no longer applies: " + why);
        stale.push_back(e.patch_hash.substr(0, 8) + " (" + why + ")");
        continue;
      }
      p.status = Status::kProposed;
      p.patch = e.patch;
      p.files = e.files;
      p.summary = "replay the verified fix for " + util::sha12(e.signature) + " first proposed by " + e.fixer;
      p.detail = describe(e);
      p.model_calls = 0;
      p.duration_ms = ms_since_t0();
      return p;
    }
    p.status = Status::kNothing;
    if (!stale.empty())
      p.detail = plural(static_cast<long long>(stale.size()), "stored fix", "stored fixes") + " for " +
                 util::sha12(sig) + " no longer apply, demoted: " + [&] {
                   std::string s;
                   for (const auto& x : stale) s += (s.empty() ? "" : "; ") + x;
                   return s;
                 }();
    else if (entries.empty()) p.detail = "no verified fix for " + util::sha12(sig);
    else p.detail = "every verified fix for " + util::sha12(sig) + " was tried";
  } catch (const Error& e) {
    p.status = Status::kUnavailable;
    p.detail = e.what();
  }
  p.duration_ms = ms_since_t0();
  return p;
}

}  // namespace phoenix::fixers
