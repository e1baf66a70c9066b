// phoenix journal: what Phoenix remembers (journal/journal.h).
//   phoenix journal [--json] [--forget PREFIX]   list entries, or forget one signature's
//   phoenix journal stats [--json]               what replays saved
//   phoenix journal flaky [--json]               the flake ledger: tests that failed, then passed run again
//   phoenix journal push [REMOTE] [--json]       share verified fixes over refs/phoenix/journal
//   phoenix journal pull [REMOTE] [--json]       merge a remote's into this journal
// Reading commands never create .phoenix/journal.sqlite; a missing one is an
// empty journal.
#include <iostream>

#include "cli/app.h"
#include "engine/measure.h"
#include "gitx/repo.h"
#include "journal/journal.h"
#include "journal/measured_share.h"
#include "journal/share.h"
#include "layout/layout.h"
#include "trace/events.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::cli {

using nlohmann::json;

namespace {

// ms since the epoch as "2026-12-01T02:09:41.123Z"; 0 (never) as null.
json iso(long long ms) { return ms <= 0 ? json(nullptr) : json(util::iso8601(ms)); }

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json entry_json(const journal::Entry& e, bool with_patch) {
  json j = {{"signature", e.signature},
            {"patch_hash", e.patch_hash},
            {"verdict", e.verified ? "verified" : "demoted"},
            {"verified", e.verified},
            {"check", e.check},
            {"failure_type", e.failure_type},
            {"files", e.files},
            {"fixer", e.fixer},
            {"attempts", e.attempts},
            {"successes", e.successes},
            {"failures", e.failures},
            {"replays", e.replays},
            {"first_seen", iso(e.first_seen)},
            {"last_seen", iso(e.last_seen)},
            {"last_verified", iso(e.last_verified)},
            {"last_failed", iso(e.last_failed)},
            {"last_failure", e.last_failure.empty() ? json(nullptr) : json(e.last_failure)},
            {"duration_ms", opt(e.duration_ms)},
            {"verify_ms", opt(e.verify_ms)},
            {"model_calls", opt(e.model_calls)},
            {"cost_usd", opt(e.cost_usd)},
            {"saved_ms", e.saved_ms()},
            {"saved_model_calls", opt(e.saved_model_calls())},
            {"saved_cost_usd", opt(e.saved_cost_usd())}};
  if (with_patch) j["patch"] = e.patch;
  return j;
}

std::string saved_text(long long ms, const std::optional<long long>& calls, const std::optional<double>& cost) {
  std::string s = "~" + util::duration_compact(ms) + ", " +
                  (calls ? std::to_string(*calls) + (*calls == 1 ? " model call" : " model calls") : "? model calls");
  if (cost && *cost > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ", $%.2f", *cost);
    s += buf;
  }
  return s;
}

std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.resize(n, ' ');
  return s;
}

std::string journal_path(const Context& ctx) { return layout::journal_file(ctx.root); }

// The journal for reading: nullopt when there is none yet.
std::optional<journal::Journal> open_existing(const Context& ctx) {
  if (!util::path_exists(journal_path(ctx))) return std::nullopt;
  journal::OpenOptions o;
  o.create = false;
  return journal::Journal::open(journal_path(ctx), o);
}

int list(const Parsed& p) {
  std::optional<journal::Journal> j = open_existing(p.ctx);
  std::vector<journal::Entry> entries;
  if (j) entries = j->list();
  if (p.ctx.json) {
    json arr = json::array();
    for (const auto& e : entries) arr.push_back(entry_json(e, true));
    print_json(p.ctx, arr);
    return kExitOk;
  }
  const size_t flaky_tests = j ? j->flakes().size() : 0;
  const std::string ledger =
      flaky_tests == 0 ? std::string()
                       : "flake ledger: " + util::plural(static_cast<long long>(flaky_tests), "test", "tests") +
                             " seen flaky ('phoenix journal flaky')\n";
  if (entries.empty()) {
    std::cout << "the journal is empty: Phoenix remembers a fix once the check it healed passes again\n" << ledger;
    return kExitOk;
  }
  // Columns as wide as their widest cell, two spaces apart: a long check
  // id or savings text never runs into the next column.
  const std::vector<std::string> header = {"SIGNATURE", "VERDICT", "CHECK", "HEALED", "REPLAYS", "SAVED", "FILES"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : entries) {
    std::string files;
    for (const auto& f : e.files) files += (files.empty() ? "" : ",") + f;
    files = util::clip_utf8(files, 60);
    rows.push_back({util::sha12(e.signature), e.verified ? "verified" : "demoted", e.check, std::to_string(e.successes),
                    std::to_string(e.replays),
                    e.replays ? saved_text(e.saved_ms(), e.saved_model_calls(), e.saved_cost_usd()) : "-", files});
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto cell = [&](const std::vector<std::string>& r, size_t c) {
    return c + 1 == r.size() ? r[c] : pad(r[c], width[c] + 2);
  };
  for (size_t c = 0; c < header.size(); ++c) std::cout << cell(header, c);
  std::cout << "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const journal::Entry& e = entries[i];
    for (size_t c = 0; c < r.size(); ++c) {
      if (c == 1) std::cout << (e.verified ? green(p.ctx, cell(r, c)) : red(p.ctx, cell(r, c)));
      else std::cout << cell(r, c);
    }
    std::cout << "\n";
    if (!e.verified && !e.last_failure.empty())
      std::cout << dim(p.ctx, std::string(width[0] + 2, ' ') + "demoted: " + e.last_failure) << "\n";
  }
  std::cout << ledger;
  return kExitOk;
}

// The flake ledger (journal::Journal::flakes): one line per test.
int flaky(const Parsed& p) {
  std::optional<journal::Journal> j = open_existing(p.ctx);
  const std::vector<journal::Flake> flakes = j ? j->flakes() : std::vector<journal::Flake>{};
  if (p.ctx.json) {
    json arr = json::array();
    for (const auto& f : flakes)
      arr.push_back({{"check", f.check},
                     {"test", f.test},
                     {"runs", f.runs},
                     {"failures", f.failures},
                     {"flaky", f.flaky},
                     {"trees", f.trees},
                     {"first_seen", iso(f.first_seen)},
                     {"last_seen", iso(f.last_seen)}});
    print_json(p.ctx, arr);
    return kExitOk;
  }
  if (flakes.empty()) {
    std::cout << "the flake ledger is empty: no test has failed and then passed when run again\n";
    return kExitOk;
  }
  const std::vector<std::string> header = {"CHECK", "TEST", "FLAKY", "FAILED", "TREES", "LAST SEEN"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : flakes)
    rows.push_back({f.check, f.test, std::to_string(f.flaky) + "x",
                    std::to_string(f.failures) + "/" + std::to_string(f.runs) + " runs", std::to_string(f.trees),
                    util::iso8601(f.last_seen)});
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto* r : {&header}) {
    for (size_t c = 0; c < r->size(); ++c) std::cout << (c + 1 == r->size() ? (*r)[c] : pad((*r)[c], width[c] + 2));
    std::cout << "\n";
  }
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) std::cout << (c + 1 == r.size() ? r[c] : pad(r[c], width[c] + 2));
    std::cout << "\n";
  }
  return kExitOk;
}

int forget(Parsed& p, const std::string& prefix) {
  std::optional<journal::Journal> j = open_existing(p.ctx);
  if (!j) throw UsageError("--forget: the journal is empty (" + journal_path(p.ctx) + " does not exist)");
  std::vector<journal::Entry> removed = j->forget(prefix);
  json list = json::array();
  for (const auto& e : removed)
    list.push_back({{"signature", e.signature}, {"patch_hash", e.patch_hash}, {"check", e.check}});
  p.ctx.trace().append(trace::event::kJournalForget,
                       {{"signature", removed.front().signature}, {"entries", removed.size()}});
  if (p.ctx.json) {
    print_json(p.ctx, {{"forgotten", list}});
  } else {
    std::cout << "forgot " << util::sha12(removed.front().signature) << " (" << removed.front().check
              << "): " << removed.size() << (removed.size() == 1 ? " fix" : " fixes") << "\n";
  }
  return kExitOk;
}

int stats(const Parsed& p) {
  std::optional<journal::Journal> j = open_existing(p.ctx);
  journal::Stats s = j ? j->stats() : journal::Stats{};
  if (!j) s.saved_model_calls = 0, s.saved_cost_usd = 0.0;
  if (p.ctx.json) {
    print_json(p.ctx, {{"entries", s.entries},
                       {"signatures", s.signatures},
                       {"verified", s.verified},
                       {"demoted", s.demoted},
                       {"successes", s.successes},
                       {"failures", s.failures},
                       {"replays", s.replays},
                       {"saved_ms", s.saved_ms},
                       {"saved_model_calls", opt(s.saved_model_calls)},
                       {"saved_cost_usd", opt(s.saved_cost_usd)},
                       {"replays_unknown_model_calls", s.replays_unknown_model_calls},
                       {"replays_unknown_cost", s.replays_unknown_cost}});
    return kExitOk;
  }
  std::cout << "journal: " << s.entries << (s.entries == 1 ? " fix" : " fixes") << " for " << s.signatures
            << (s.signatures == 1 ? " issue" : " issues") << " (" << s.verified << " verified, " << s.demoted
            << " demoted)\n";
  std::cout << "replays: " << s.replays << " (measured heals " << s.successes << ", failures " << s.failures << ")\n";
  std::cout << "saved:   " << saved_text(s.saved_ms, s.saved_model_calls, s.saved_cost_usd);
  if (s.replays_unknown_model_calls > 0)
    std::cout << " (model calls unknown for " << s.replays_unknown_model_calls << " replays)";
  if (s.replays_unknown_cost > 0 && s.replays_unknown_cost < s.replays)
    std::cout << " (cost unknown for " << s.replays_unknown_cost << " replays)";
  std::cout << "\n";
  return kExitOk;
}

std::string measured_store(const Context& ctx) { return engine::store_dir(gitx::Repo::open(ctx.root), ctx.root); }

json measured_json(const journal::MeasuredShare& m) {
  return {{"found", m.found}, {"pushed", m.pushed}, {"records", m.records}, {"added", m.added}};
}

// The measurement store's line after the journal's (journal/measured_share.h).
void print_measured(const journal::MeasuredShare& m, const std::string& remote, bool push) {
  if (push && !m.pushed)
    std::cout << "measurements: " << remote << " is up to date (" << util::plural(m.records, "record", "records")
              << ")\n";
  else if (push)
    std::cout << "measurements: pushed " << util::plural(m.records, "record", "records") << " to " << remote << " ("
              << layout::kMeasuredRef << ")\n";
  else if (!m.found) std::cout << "measurements: " << remote << " has none yet (" << layout::kMeasuredRef << ")\n";
  else
    std::cout << "measurements: pulled " << util::plural(m.records, "record", "records") << " from " << remote << ": "
              << m.added << " new\n";
}

int push(Parsed& p, const std::string& remote) {
  journal::Journal j = journal::Journal::open(journal_path(p.ctx));
  journal::PushResult r = journal::push(j, p.ctx.root, remote);
  const journal::MeasuredShare m = journal::push_measured(measured_store(p.ctx), p.ctx.root, remote);
  p.ctx.trace().append(trace::event::kJournalPush,
                       {{"remote", remote}, {"pushed", r.pushed}, {"commit", r.commit}, {"entries", r.entries}});
  if (p.ctx.json) {
    print_json(p.ctx, {{"remote", remote},
                       {"pushed", r.pushed},
                       {"commit", r.commit.empty() ? json(nullptr) : json(r.commit)},
                       {"entries", r.entries},
                       {"from_remote", r.from_remote},
                       {"measured", measured_json(m)}});
  } else if (!r.pushed && r.commit.empty()) {
    std::cout << "nothing to push: the journal has no verified fix yet\n";
  } else if (!r.pushed) {
    std::cout << remote << "'s journal is up to date (" << r.entries << (r.entries == 1 ? " fix)" : " fixes)") << "\n";
  } else {
    std::cout << "pushed " << r.entries << (r.entries == 1 ? " fix" : " fixes") << " to " << remote << " ("
              << layout::kJournalRef << " " << util::sha12(r.commit) << ")";
    if (r.from_remote > 0)
      std::cout << ", " << r.from_remote << " of them only on " << remote
                << " (kept; 'phoenix journal pull' brings them here)";
    std::cout << "\n";
  }
  if (!p.ctx.json) print_measured(m, remote, true);
  return kExitOk;
}

int pull(Parsed& p, const std::string& remote) {
  journal::Journal j = journal::Journal::open(journal_path(p.ctx));
  journal::PullResult r = journal::pull(j, p.ctx.root, remote);
  const journal::MeasuredShare m = journal::pull_measured(measured_store(p.ctx), p.ctx.root, remote);
  p.ctx.trace().append(trace::event::kJournalPull, {{"remote", remote},
                                                    {"found", r.found},
                                                    {"commit", r.commit},
                                                    {"added", r.merged.added},
                                                    {"updated", r.merged.updated}});
  if (p.ctx.json) {
    print_json(p.ctx, {{"remote", remote},
                       {"found", r.found},
                       {"commit", r.commit.empty() ? json(nullptr) : json(r.commit)},
                       {"entries", r.entries},
                       {"added", r.merged.added},
                       {"updated", r.merged.updated},
                       {"unchanged", r.merged.unchanged},
                       {"skipped", r.merged.skipped},
                       {"measured", measured_json(m)}});
  } else if (!r.found) {
    std::cout << remote << " has no journal yet (" << layout::kJournalRef << "): nothing to pull\n";
  } else {
    std::cout << "pulled " << r.entries << (r.entries == 1 ? " fix" : " fixes") << " from " << remote << ": "
              << r.merged.added << " new, " << r.merged.updated << " updated, " << r.merged.unchanged << " unchanged";
    if (r.merged.skipped > 0) std::cout << ", " << r.merged.skipped << " skipped (demoted there, or forgotten here)";
    std::cout << "\n";
  }
  if (!p.ctx.json) print_measured(m, remote, false);
  return kExitOk;
}

}  // namespace

int cmd_journal(const std::vector<std::string>& args) {
  po::options_description desc("journal options");
  desc.add_options()("forget", po::value<std::string>(),
                     "forget every fix of the one signature starting with PREFIX (as listed; must be unambiguous)");
  Parsed p;
  if (!parse_command("journal", desc, args, p)) return kExitOk;
  const std::vector<std::string> subs{"stats", "flaky", "push", "pull"};
  std::string sub = p.positional.empty() ? "" : p.positional[0];
  if (!sub.empty() && std::find(subs.begin(), subs.end(), sub) == subs.end()) {
    std::string near = util::nearest(sub, subs);
    throw UsageError("journal: unknown subcommand '" + sub + "'" +
                     (near.empty() ? " (stats, flaky, push or pull)" : " (did you mean '" + near + "'?)"));
  }
  size_t max_args = sub == "push" || sub == "pull" ? 2 : (sub.empty() ? 0 : 1);
  if (p.positional.size() > max_args)
    throw UsageError("journal" + (sub.empty() ? std::string() : " " + sub) + ": unexpected argument '" +
                     p.positional[max_args] + "'");
  if (p.vm.count("forget") && !sub.empty())
    throw UsageError("journal " + sub + ": --forget only goes with 'phoenix journal'");
  if (!p.ctx.in_repo) throw UsageError("journal: not inside a git repository (" + p.ctx.cwd + ")");
  if (sub == "stats") return stats(p);
  if (sub == "flaky") return flaky(p);
  if (sub == "push" || sub == "pull") {
    std::string remote = p.positional.size() > 1 ? p.positional[1] : "origin";
    return sub == "push" ? push(p, remote) : pull(p, remote);
  }
  if (p.vm.count("forget")) return forget(p, p.vm["forget"].as<std::string>());
  return list(p);
}

}  // namespace phoenix::cli
