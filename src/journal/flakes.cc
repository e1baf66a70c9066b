// The flake ledger: Journal::record_flake and Journal::flakes (journal.h).
#include <sqlite3.h>

#include "journal/internal.h"
#include "journal/journal.h"
#include "journal/sqlite.h"
#include "util/text.h"

namespace phoenix::journal {

using sqlite::col_text;
using sqlite::Tx;
using sqlite::Use;

void Journal::record_flake(const FlakeSighting& f) {
  auto& db = impl_->db;
  Tx tx(db, "record a flaky test");
  const long long now = util::now_ms();
  {
    sqlite3_stmt* s = db.stmt(
        "INSERT INTO flakes (check_id, test, runs, failures, flaky, first_seen, last_seen) "
        "VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5) "
        "ON CONFLICT (check_id, test) DO UPDATE SET runs = runs + ?3, failures = failures + ?4, "
        "flaky = flaky + 1, last_seen = max(last_seen, ?5)");
    Use u(db, s);
    u.text(1, f.check).text(2, f.test).integer(3, f.runs).integer(4, f.failures).integer(5, now);
    u.step("record a flaky test");
  }
  if (!f.tree.empty()) {
    sqlite3_stmt* s = db.stmt("INSERT OR IGNORE INTO flake_trees (check_id, test, tree) VALUES (?1, ?2, ?3)");
    Use u(db, s);
    u.text(1, f.check).text(2, f.test).text(3, f.tree);
    u.step("record a flaky test");
  }
  tx.commit();
}

std::vector<Flake> Journal::flakes() const {
  auto& db = impl_->db;
  sqlite3_stmt* s = db.stmt(
      "SELECT f.check_id, f.test, f.runs, f.failures, f.flaky, f.first_seen, f.last_seen, "
      "(SELECT count(*) FROM flake_trees t WHERE t.check_id = f.check_id AND t.test = f.test) "
      "FROM flakes f ORDER BY f.last_seen DESC, f.check_id, f.test");
  Use u(db, s);
  std::vector<Flake> out;
  while (u.step("read the flake ledger")) {
    Flake f;
    f.check = col_text(s, 0);
    f.test = col_text(s, 1);
    f.runs = sqlite3_column_int64(s, 2);
    f.failures = sqlite3_column_int64(s, 3);
    f.flaky = sqlite3_column_int64(s, 4);
    f.first_seen = sqlite3_column_int64(s, 5);
    f.last_seen = sqlite3_column_int64(s, 6);
    f.trees = sqlite3_column_int64(s, 7);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace phoenix::journal
