// The measurement store (docs/measured.md): a green measurement keyed by
// what was measured, so that the same measurement made again — by
// `phoenix sense`, `phoenix run`, the loop, the pre-push hook, in any
// worktree of the repository — answers from the store.
//
// The key: the git tree id of the measured tree (only a clean tree has
// one: no modified, staged or untracked-and-not-ignored file), the check's
// definition as phoenix.json gives it, the setup steps' fingerprint (the
// steps and the hash of their inputs: setup::fingerprint; "" without
// steps), the values of the environment variables the check names in
// `cache.env`, and Phoenix's version. A record is served only when every
// part matches exactly, whoever wrote it (a record pulled from a remote
// included). A red result is recorded with its failing set (the tests its
// runner named, or its issue signature when none), never served as a
// verdict: it is only the reference a later change is judged against
// (find_reference, engine/verdict.h).
//
// On disk: one JSON file per tree, `<dir>/<tree id>.json` =
// {"version":1,"records":[{key, id, ok, signal, evidence, duration_ms, at_ms,
// where, trace_seq, origin, failing, signature}]} (a record without "ok" is
// green), replaced atomically. A file that does not
// parse is ignored with one warning on stderr and removed (the next green
// measurement writes it again). No git, no hashing: part of phoenix_lite,
// so the thin pre-push binary reads and writes it too; the caller names
// the folder (layout::measured_dir) and finds the tree id.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "util/json.h"

namespace phoenix::checks {

inline constexpr int kMeasuredVersion = 1;
// PHOENIX_NO_CACHE=1: every measurement runs fresh (as --no-cache).
inline constexpr const char* kNoCacheEnv = "PHOENIX_NO_CACHE";

struct MeasureKey {
  std::string tree;                        // git tree id of the measured tree
  std::string check;                       // the check's definition (its JSON, keys sorted)
  std::string setup;                       // setup steps' fingerprint, "" without steps
  std::map<std::string, std::string> env;  // cache.env's names and values ("" when unset)
  std::string version;                     // Phoenix's
  util::Json to_json() const;              // all but the tree (the file's name)
  bool operator==(const MeasureKey& o) const;
};

// The key of `spec` measured on `tree` after setup `setup`, with the
// environment of this process.
MeasureKey measure_key(const CheckSpec& spec, const std::string& tree, const std::string& setup);

// Whether `spec` may be served from the store: its "cache", else true for
// a command_exit check only (contract and visual checks measure a server
// or a picture; file checks cost nothing).
bool cache_wanted(const CheckSpec& spec);
// PHOENIX_NO_CACHE set to anything but "" or "0".
bool cache_disabled_by_env();

struct Measurement {
  MeasureKey key;
  SenseResult result;        // green, or red with its failing set below
  long long at_ms = 0;       // when it was measured (Unix ms)
  std::string where;         // "loop-20261204", "run", "hook", "sense"
  long long trace_seq = -1;  // its trace line; -1 when none was written
  std::string origin;        // "" measured here; else the remote it was pulled from
  // A red measurement's failing set: the tests named failing (sorted), and
  // its issue signature (what tells one crash from another).
  std::vector<std::string> failing;
  std::string signature;
};

// The green record for `key` in the store at `dir`, no older than
// `max_age_h` hours (0: any age); nullopt when there is none.
std::optional<Measurement> find_measurement(const std::string& dir, const MeasureKey& key, double max_age_h = 0);

// Records a measurement, green or red, replacing one of the same key. Best
// effort: a store that cannot be written costs a re-run.
void record_measurement(const std::string& dir, const Measurement& m);

// The newest record, green or red, of the check defined by `check` (its
// JSON, as MeasureKey::check) on `tree`, whatever its setup, environment
// or version: what a reference tree said of that check. nullopt when the
// store has none.
std::optional<Measurement> find_reference(const std::string& dir, const std::string& tree, const std::string& check);

// `m.result` as served: its `cached` note set ("measured 14:02 in
// loop-20261204, trace #812"), duration 0.
SenseResult served(const Measurement& m);

// The tree of `commit` as Phoenix noted it when it measured that commit
// (`<dir>/commits/<commit>`), so that the thin pre-push binary keys a push
// without asking git; "" when there is no note. Notes are written here
// only (remember_tree, from git's own answer), never pulled from a remote:
// a commit id names its tree for good, so a note never goes stale.
std::string known_tree(const std::string& dir, const std::string& commit);
// Notes `commit`'s tree; best effort, and nothing when the note is there.
void remember_tree(const std::string& dir, const std::string& commit, const std::string& tree);

// Every green record of the store, for `phoenix doctor` and `journal push`.
std::vector<Measurement> all_measurements(const std::string& dir);
// The file of a tree's records, its name, and the records of a file's text
// (throws on text that is not a store file).
std::string measured_file_name(const std::string& tree);
std::vector<Measurement> parse_measured(const std::string& tree, const std::string& text);
std::string format_measured(const std::vector<Measurement>& records);
util::Json measured_to_json(const std::vector<Measurement>& records);
std::vector<Measurement> measured_from_json(const std::string& tree, const util::Json& doc);
// 40 or 64 lowercase hex digits: the only names a store file may have.
bool is_tree_id(const std::string& s);
// Adds the green `records` whose key the store lacks (a valid tree id
// each); returns how many. Throws Error when a file cannot be written.
long long merge_measurements(const std::string& dir, const std::vector<Measurement>& records);

}  // namespace phoenix::checks
