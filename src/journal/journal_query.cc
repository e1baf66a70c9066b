// The journal's queries: lookup, list, stats, and forget (journal.h).
#include "journal/journal.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "journal/internal.h"
#include "journal/sqlite.h"
#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::journal {

using internal::kEntryColumns;
using sqlite::col_opt_int;
using sqlite::col_opt_real;
using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

// ---------------------------------------------------------------------------
// Journal::Impl: forget's steps.

// Up to `limit` signatures in [lo, hi), each with its first check id,
// most recently seen first. Hex digits sort below 'g', so [prefix,
// prefix + "g") is exactly the signatures starting with prefix, read
// through the index.
std::vector<std::pair<std::string, std::string>> Journal::Impl::signatures_between(const std::string& lo,
                                                                                   const std::string& hi, int limit) {
  sqlite3_stmt* s = db.stmt(
      "SELECT signature, min(check_id) FROM entries WHERE signature >= ?1 AND signature < ?2 "
      "GROUP BY signature ORDER BY max(last_seen) DESC LIMIT ?3");
  Use u(db, s);
  u.text(1, lo).text(2, hi).integer(3, limit);
  std::vector<std::pair<std::string, std::string>> out;
  while (u.step("read it")) out.emplace_back(col_text(s, 0), col_text(s, 1));
  return out;
}

// The one signature starting with `prefix` (lowercase hex); none or more
// than one throws the UsageError naming the candidates.
std::string Journal::Impl::the_signature_starting_with(const std::string& prefix) {
  auto describe = [](const std::vector<std::pair<std::string, std::string>>& sigs, size_t shown) {
    std::string s;
    for (size_t i = 0; i < sigs.size() && i < shown; ++i)
      s += (i ? ", " : "") + util::sha12(sigs[i].first) + " (" + sigs[i].second + ")";
    if (sigs.size() > shown) s += ", ...";
    return s;
  };
  auto matches = signatures_between(prefix, prefix + "g", 11);
  if (matches.empty()) {
    auto all = signatures_between("", "g", 11);
    throw UsageError(
        "--forget: no journal entry's signature starts with '" + prefix + "' " +
        (all.empty() ? std::string("(the journal is empty)") : "(the journal has: " + describe(all, 10) + ")"));
  }
  if (matches.size() > 1)
    throw UsageError("--forget: '" + prefix + "' is ambiguous: it matches " + describe(matches, 10) +
                     "; give more digits");
  return matches[0].first;
}

// Every patch stored for `signature` (without tallies).
std::vector<Entry> Journal::Impl::entries_of(const std::string& signature) {
  sqlite3_stmt* s = db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries WHERE signature = ?1");
  Use u(db, s);
  u.text(1, signature);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(read_entry(s, nullptr));
  return out;
}

// Deletes the signature's entries and tallies, and remembers it was
// forgotten `at` (so a later pull does not bring back older verdicts).
void Journal::Impl::delete_signature(const std::string& signature, long long at) {
  for (const char* sql : {"DELETE FROM tallies WHERE entry_id IN (SELECT id FROM entries WHERE signature = ?1)",
                          "DELETE FROM entries WHERE signature = ?1"}) {
    Use u(db, db.stmt(sql));
    u.text(1, signature);
    u.step("forget an entry");
  }
  Use u(db, db.stmt("INSERT OR REPLACE INTO forgotten (signature, at) VALUES (?1, ?2)"));
  u.text(1, signature).integer(2, at);
  u.step("forget an entry");
}

// ---------------------------------------------------------------------------
// Journal

std::vector<Entry> Journal::lookup(const std::string& signature) const {
  sqlite3_stmt* s =
      impl_->db.stmt(std::string("SELECT ") + kEntryColumns +
                     " FROM entries WHERE signature = ?1 AND verified = 1 ORDER BY last_verified DESC, id DESC");
  Use u(impl_->db, s);
  u.text(1, signature);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::list() const {
  sqlite3_stmt* s =
      impl_->db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY last_seen DESC, id DESC");
  Use u(impl_->db, s);
  std::vector<Entry> out;
  while (u.step("read it")) out.push_back(impl_->read_entry(s, nullptr));
  return out;
}

std::vector<Entry> Journal::forget(const std::string& raw_prefix) {
  std::string prefix = util::trim(raw_prefix);
  std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](unsigned char c) { return std::tolower(c); });
  if (prefix.empty() || prefix.size() > 64 || !is_lower_hex(prefix))
    throw UsageError("--forget: '" + raw_prefix +
                     "' is not a signature prefix (hex digits, as 'phoenix journal' shows)");
  Tx tx(impl_->db, "forget an entry");
  const std::string sig = impl_->the_signature_starting_with(prefix);
  std::vector<Entry> removed = impl_->entries_of(sig);
  long long at = util::now_ms();
  for (const auto& e : removed) at = std::max(at, e.last_verified);
  impl_->delete_signature(sig, at);
  tx.commit();
  return removed;
}

Stats Journal::stats() const {
  sqlite3_stmt* s = impl_->db.stmt(
      "SELECT count(*), count(DISTINCT signature), total(verified), total(successes), total(failures), total(replays), "
      "total(replays * coalesce(duration_ms, 0)), "
      "sum(CASE WHEN model_calls IS NOT NULL AND replays > 0 THEN replays * model_calls END), "
      "total(CASE WHEN model_calls IS NULL THEN replays ELSE 0 END), "
      "sum(CASE WHEN cost_usd IS NOT NULL AND replays > 0 THEN replays * cost_usd END), "
      "total(CASE WHEN cost_usd IS NULL THEN replays ELSE 0 END) FROM entries");
  Use u(impl_->db, s);
  u.step("read it");
  Stats st;
  auto ll = [&](int i) { return static_cast<long long>(sqlite3_column_double(s, i)); };
  st.entries = sqlite3_column_int64(s, 0);
  st.signatures = sqlite3_column_int64(s, 1);
  st.verified = ll(2);
  st.demoted = st.entries - st.verified;
  st.successes = ll(3);
  st.failures = ll(4);
  st.replays = ll(5);
  st.saved_ms = ll(6);
  st.replays_unknown_model_calls = ll(8);
  st.replays_unknown_cost = ll(10);
  if (auto known = col_opt_int(s, 7)) st.saved_model_calls = *known;
  else if (st.replays_unknown_model_calls == 0) st.saved_model_calls = 0;
  if (auto known = col_opt_real(s, 9)) st.saved_cost_usd = *known;
  else if (st.replays_unknown_cost == 0) st.saved_cost_usd = 0.0;
  return st;
}

}  // namespace phoenix::journal
