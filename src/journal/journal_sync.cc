// Sharing journals (journal/share.h): every entry with its per-origin
// tallies out, and another journal's entries merged in (journal/entry.h
// says how two views of one entry merge).
#include "journal/journal.h"

#include <sqlite3.h>

#include <map>
#include <optional>

#include "journal/internal.h"
#include "journal/sqlite.h"

namespace phoenix::journal {

using internal::kEntryColumns;
using internal::read_tally;
using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

std::vector<Entry> Journal::export_entries() const {
  std::vector<Entry> out;
  std::map<long long, size_t> index;
  {
    sqlite3_stmt* s =
        impl_->db.stmt(std::string("SELECT ") + kEntryColumns + " FROM entries ORDER BY signature, patch_hash");
    Use u(impl_->db, s);
    while (u.step("read it")) {
      long long id = 0;
      out.push_back(impl_->read_entry(s, &id));
      index[id] = out.size() - 1;
    }
  }
  sqlite3_stmt* s = impl_->db.stmt(
      "SELECT entry_id, origin, attempts, successes, failures, replays, first_seen, last_seen, last_verified, "
      "last_failed, last_failure FROM tallies");
  Use u(impl_->db, s);
  while (u.step("read it")) {
    auto it = index.find(sqlite3_column_int64(s, 0));
    if (it == index.end()) continue;  // an orphan row: not part of any entry
    out[it->second].tallies[col_text(s, 1)] = read_tally(s, 2);
  }
  return out;
}

MergeResult Journal::merge(const std::vector<Entry>& incoming) {
  MergeResult r;
  Tx tx(impl_->db, "merge entries");
  for (const Entry& raw : incoming) {
    Entry in = raw;
    in.recompute();
    long long id = 0;
    std::optional<Entry> local = impl_->find(in.signature, in.patch_hash, &id);
    if (!local) {
      bool forgotten = false;
      {
        Use u(impl_->db, impl_->db.stmt("SELECT at FROM forgotten WHERE signature = ?1"));
        u.text(1, in.signature);
        if (u.step("read it")) forgotten = in.last_verified <= sqlite3_column_int64(u.get(), 0);
      }
      if (!in.verified || forgotten) {
        ++r.skipped;
        continue;
      }
      id = impl_->insert_entry(in);
      for (const auto& [origin, t] : in.tallies) impl_->write_tally(id, origin, t);
      impl_->write_totals(id, in);
      ++r.added;
      continue;
    }
    Entry merged = merge_entries(*local, in);
    if (same_entry(merged, *local)) {
      ++r.unchanged;
      continue;
    }
    impl_->write_fix_facts(id, merged);
    for (const auto& [origin, t] : merged.tallies) {
      auto old = local->tallies.find(origin);
      if (old == local->tallies.end() || !same_tally(old->second, t)) impl_->write_tally(id, origin, t);
    }
    impl_->write_totals(id, merged);
    ++r.updated;
  }
  tx.commit();
  return r;
}

}  // namespace phoenix::journal
