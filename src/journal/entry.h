// One remembered fix (Entry) and the counts behind it (Tally): the journal's
// records as values, with the pure logic on them (totals, merging, what a
// replay saved). No SQLite here: journal.h stores them, share.h carries them.
//
// Sharing (journal/share.h) works on per-origin tallies: each journal file
// has an origin id (random, made once), and every count lives in a row of
// its origin. A total is the sum over origins; merging takes, per origin,
// the larger of each count (counts of one origin only grow). So pulling the
// same entries twice, or pulling back what one pushed, never double counts,
// and nobody's counts are lost (a grow-only counter per origin).
//
// Times are milliseconds since the epoch. Verdicts are ordered by time: an
// entry is verified while its newest success (over every origin) is newer
// than its newest failure; on a tie, the failure wins.
//
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace phoenix::journal {

// The counts one journal (origin) contributed to an entry. Only grow.
struct Tally {
  long long attempts = 0;    // times the patch was tried for the signature
  long long successes = 0;   // measured green (first heal and replays)
  long long failures = 0;    // measured red, rejected, or no longer applying
  long long replays = 0;     // successes that came from the journal itself
  long long first_seen = 0;  // ms since epoch; 0 = never
  long long last_seen = 0;
  long long last_verified = 0;
  long long last_failed = 0;
  std::string last_failure;  // why it failed at last_failed
};

// A fix as a heal measured it: the issue, the patch, and what the fixer
// that proposed it spent. What a heal hands the journal (Journal::
// record_healed) and the facts every entry keeps of its first heal.
struct Fix {
  std::string signature;                 // issue signature (64 hex)
  std::string check;                     // check id
  std::string failure_type;              // unit, e2e, ...
  std::string patch;                     // git's unified diff, applies with gitx::Repo::apply_patch
  std::vector<std::string> files;        // the paths the patch changes
  std::string fixer;                     // who proposed it (never "journal")
  std::optional<long long> duration_ms;  // that fixer's time: what one replay saves
  std::optional<long long> verify_ms;    // the verifying re-run
  std::optional<long long> model_calls;  // null when unknown
  std::optional<double> cost_usd;        // null when unknown, never 0 for unknown
};

// One remembered fix: one patch for one issue signature (its identity:
// the signature and patch_hash), the fix as first measured (kept from the
// first journal that had it), and the counts of every origin.
struct Entry : Fix {
  std::string patch_hash;  // sha256 hex of `patch`
  // totals over every origin (see Tally); recompute() derives them
  bool verified = false;
  long long attempts = 0, successes = 0, failures = 0, replays = 0;
  long long first_seen = 0, last_seen = 0, last_verified = 0, last_failed = 0;
  std::string last_failure;
  // per origin id; filled by Journal::export_entries() and share::parse()
  std::map<std::string, Tally> tallies;

  // Sets the totals above from `tallies`.
  void recompute();
  // What the replays saved: replays x the original fix's cost. The model
  // calls and dollars are null when the original's are unknown.
  long long saved_ms() const { return replays * duration_ms.value_or(0); }
  std::optional<long long> saved_model_calls() const;
  std::optional<double> saved_cost_usd() const;
};

// sha256 hex of a patch: the second half of an entry's identity.
std::string patch_hash(const std::string& patch);

// Two journals' views of one entry (same signature and patch) as one: per
// origin the larger counts and newer times; the facts of the original fix
// from `mine`, with unknown ones taken from `theirs`. Totals recomputed.
// Commutative in the counts and idempotent: merging the result with
// either input again changes nothing.
Entry merge_entries(const Entry& mine, const Entry& theirs);

// Equal counts and times (Tally) / equal tallies and facts of the original
// fix (Entry): whether a merge changed anything.
bool same_tally(const Tally& a, const Tally& b);
bool same_entry(const Entry& a, const Entry& b);

// `s` is exactly `n` lowercase hex digits (n = 0: any length): signatures,
// patch hashes (64) and origin ids (32).
bool is_lower_hex(const std::string& s, size_t n = 0);

}  // namespace phoenix::journal
