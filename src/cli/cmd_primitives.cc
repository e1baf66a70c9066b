// The primitives: sense, snapshot, heal, trace, recover.
#include <iostream>

#include "cli/app.h"
#include "cli/check_args.h"
#include "engine/measure.h"
#include "engine/recover.h"
#include "engine/retry.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "layout/paths.h"
#include "snapshot/snapshot.h"
#include "trace/events.h"
#include "util/atomic_file.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::cli {

using nlohmann::json;

int cmd_sense(const std::vector<std::string>& args) {
  po::options_description desc("sense options");
  desc.add_options()("check", po::value<std::vector<std::string>>()->composing(),
                     "a check: an id from phoenix.json or a JSON check object (repeatable)")(
      "no-cache", "measure every check fresh, never from the measurement store (also PHOENIX_NO_CACHE=1)");
  Parsed p;
  if (!parse_command("sense", desc, args, p)) return kExitOk;
  config::Config cfg = config::load(p.ctx.root, false);
  std::vector<checks::CheckSpec> specs;
  for (const auto& id : p.positional) specs.push_back(resolve_check(cfg, id));
  if (p.vm.count("check"))
    for (const auto& c : p.vm["check"].as<std::vector<std::string>>()) specs.push_back(resolve_check(cfg, c));
  if (specs.empty()) {
    if (cfg.checks.empty())
      throw UsageError("sense: no checks given and none in phoenix.json (give a check id or --check '{\"kind\":...}')");
    specs = cfg.checks;
  }
  bool all_ok = true;
  json arr = json::array();
  std::optional<gitx::Repo> repo;
  if (p.ctx.in_repo) repo.emplace(gitx::Repo::open(p.ctx.root));
  std::optional<engine::StoreUse> store;
  if (repo) {
    trace::Trace* tr = nullptr;
    try {
      tr = &p.ctx.trace();
    } catch (const Error&) {}  // a read-only checkout: records carry no trace line
    store.emplace(*repo, p.ctx.root, cfg, "sense", !engine::no_cache(p.vm.count("no-cache") > 0), tr);
  }
  for (const auto& spec : specs) {
    checks::SenseResult r = [&] {
      util::term::Progress progress("phoenix: sensing " + spec.id);  // drawn on a TTY only
      auto fresh = [&] { return checks::sense(spec, p.ctx.root); };
      return store ? store->sense(spec, fresh) : fresh();
    }();
    trace_sense(p.ctx, spec, r, /*durable=*/false);
    all_ok = all_ok && r.ok;
    if (p.ctx.json) arr.push_back(r.to_json());
    else print_sense(p.ctx, r);
    if (r.interrupted) return kExitInterrupted;
  }
  if (p.ctx.json) print_json(p.ctx, arr.size() == 1 ? arr[0] : arr);
  return all_ok ? kExitOk : kExitRed;
}

int cmd_snapshot(const std::vector<std::string>& args) {
  po::options_description desc("snapshot options");
  desc.add_options()("check", po::value<std::string>(), "the check that must pass: an id or a JSON check object");
  Parsed p;
  if (!parse_command("snapshot", desc, args, p)) return kExitOk;
  if (p.positional.size() != 1) throw UsageError("snapshot: give exactly one PATH");
  if (!p.vm.count("check"))
    throw UsageError("snapshot: --check is required (a snapshot is blessed only while a check passes)");
  config::Config cfg = config::load(p.ctx.root, false);
  if (p.ctx.in_repo) layout::require_writable(gitx::Repo::open(p.ctx.root));
  checks::CheckSpec spec = resolve_check(cfg, p.vm["check"].as<std::string>());
  std::string rel = snapshot::relative_to_root(p.ctx.root, p.ctx.cwd, p.positional[0]);
  checks::SenseResult r = checks::sense(spec, p.ctx.root);
  trace_sense(p.ctx, spec, r);
  json out = {{"blessed", false}, {"snap_id", nullptr}, {"path", rel}, {"check", r.to_json()}};
  if (!r.ok) {
    p.ctx.trace().append(trace::event::kSnapshot,
                         {{"path", rel}, {"check", spec.id}, {"blessed", false}, {"signal", r.signal}});
    if (p.ctx.json) {
      print_json(p.ctx, out);
    } else {
      print_sense(p.ctx, r);
      std::cout << "not blessed: " << rel << " (check " << spec.id << " is red)\n";
    }
    return r.interrupted ? kExitInterrupted : kExitRed;
  }
  snapshot::Snapshot s = snapshot::take(p.ctx.root, rel, layout::snapshots_dir(p.ctx.root), spec.id);
  // Keep the check itself beside the snapshot so a later heal can recheck it.
  util::write_file_atomic(layout::snapshots_dir(p.ctx.root) + "/" + s.id + "/check.json", spec.raw.dump(2) + "\n");
  p.ctx.trace().append(trace::event::kSnapshot, {{"path", rel},
                                                 {"check", spec.id},
                                                 {"blessed", true},
                                                 {"snap_id", s.id},
                                                 {"files", s.files},
                                                 {"bytes", s.bytes}});
  out["blessed"] = true;
  out["snap_id"] = s.id;
  if (p.ctx.json) print_json(p.ctx, out);
  else
    std::cout << green(p.ctx, "blessed") << " " << rel << " as " << bold(p.ctx, s.id) << " (" << s.files
              << (s.files == 1 ? " file" : " files") << "; check " << spec.id << ": " << r.signal << ")\n";
  return kExitOk;
}

namespace {

checks::CheckSpec recheck_for(const Parsed& p, const config::Config& cfg, const std::string& snap_id) {
  if (p.vm.count("recheck")) return resolve_check(cfg, p.vm["recheck"].as<std::string>());
  std::string stored = layout::snapshots_dir(p.ctx.root) + "/" + snap_id + "/check.json";
  if (util::path_exists(stored)) {
    auto spec = checks::parse_check(util::parse_json(util::read_file(stored), stored), stored, false);
    return spec;
  }
  throw UsageError("heal: --recheck is required (snapshot " + snap_id + " does not record its check)");
}

// heal --strategy rollback: restore a snapshot, then its check decides.
int heal_by_rollback(Parsed& p, const config::Config& cfg, json& out) {
  if (!p.vm.count("snap")) throw UsageError("heal: --strategy rollback needs --snap ID");
  std::string id = p.vm["snap"].as<std::string>();
  std::string snaps = layout::snapshots_dir(p.ctx.root);
  snapshot::Snapshot s = snapshot::load(snaps, id);  // unknown id: UsageError naming the known ones
  checks::CheckSpec recheck = recheck_for(p, cfg, id);
  snapshot::restore(p.ctx.root, snaps, id);
  checks::SenseResult r = checks::sense(recheck, p.ctx.root);
  trace_sense(p.ctx, recheck, r);
  p.ctx.trace().append(trace::event::kHeal, {{"strategy", "rollback"},
                                             {"snap_id", id},
                                             {"path", s.path},
                                             {"recheck", recheck.id},
                                             {"healed", r.ok},
                                             {"signal", r.signal}});
  out["snap_id"] = id;
  out["path"] = s.path;
  out["healed"] = r.ok;
  out["recheck"] = r.to_json();
  if (p.ctx.json) print_json(p.ctx, out);
  else {
    std::cout << "restored " << s.path << " from " << id << "\n";
    print_sense(p.ctx, r);
    std::cout << (r.ok ? green(p.ctx, "healed") : red(p.ctx, "not healed")) << ": recheck " << recheck.id << " "
              << (r.ok ? "passes" : "is still red") << "\n";
  }
  return r.ok ? kExitOk : (r.interrupted ? kExitInterrupted : kExitRed);
}

// What heal --strategy retry re-runs: --target's command or --check's check.
checks::CheckSpec retry_target(Parsed& p, const config::Config& cfg) {
  if (p.vm.count("target") && p.vm.count("check")) throw UsageError("heal: give --target or --check, not both");
  if (p.vm.count("target")) {
    std::string t = util::trim(p.vm["target"].as<std::string>());
    util::Json target = !t.empty() && t[0] == '[' ? util::parse_json(t, "--target") : util::Json(t);
    return checks::parse_check({{"kind", "command_exit"}, {"id", "retry"}, {"target", target}}, "--target", false);
  }
  if (p.vm.count("check")) return resolve_check(cfg, p.vm["check"].as<std::string>());
  throw UsageError("heal: --strategy retry needs --target CMD or --check ID");
}

// heal --strategy retry: run it again with backoff, then --recheck decides.
int heal_by_retry(Parsed& p, const config::Config& cfg, json& out) {
  checks::CheckSpec spec = retry_target(p, cfg);
  int attempts = p.vm["attempts"].as<int>();
  if (attempts < 1 || attempts > engine::kMaxRetryAttempts)
    throw UsageError("heal: --attempts " + std::to_string(attempts) + " is outside 1-" +
                     std::to_string(engine::kMaxRetryAttempts));
  long long backoff = p.vm["backoff-ms"].as<long long>();
  if (backoff < 0) throw UsageError("heal: --backoff-ms must be >= 0");
  engine::RetryResult rr = engine::retry_check(spec, p.ctx.root, attempts, backoff);
  for (const auto& run : rr.runs) trace_sense(p.ctx, spec, run);
  bool healed = rr.healed;
  json recheck_json = nullptr;
  if (healed && p.vm.count("recheck")) {
    checks::CheckSpec recheck = resolve_check(cfg, p.vm["recheck"].as<std::string>());
    checks::SenseResult r = checks::sense(recheck, p.ctx.root);
    trace_sense(p.ctx, recheck, r);
    healed = r.ok;
    recheck_json = r.to_json();
  }
  p.ctx.trace().append(trace::event::kHeal, {{"strategy", "retry"},
                                             {"check", spec.id},
                                             {"attempts", rr.attempts},
                                             {"delays_ms", rr.delays_ms},
                                             {"healed", healed}});
  out["healed"] = healed;
  out["attempts"] = rr.attempts;
  out["delays_ms"] = rr.delays_ms;
  json runs = json::array();
  for (const auto& r : rr.runs) runs.push_back(r.to_json());
  out["runs"] = runs;
  out["recheck"] = recheck_json;
  if (p.ctx.json) print_json(p.ctx, out);
  else {
    for (const auto& r : rr.runs) print_sense(p.ctx, r);
    std::cout << (healed ? green(p.ctx, "healed") : red(p.ctx, "not healed")) << " after " << rr.attempts
              << (rr.attempts == 1 ? " attempt" : " attempts") << "\n";
  }
  if (!healed && !rr.runs.empty() && rr.runs.back().interrupted) return kExitInterrupted;
  return healed ? kExitOk : kExitRed;
}

}  // namespace

int cmd_heal(const std::vector<std::string>& args) {
  po::options_description desc("heal options");
  desc.add_options()("strategy", po::value<std::string>(), "rollback (restore a snapshot) or retry (re-run a command)")(
      "snap", po::value<std::string>(), "rollback: the snapshot id to restore")(
      "recheck", po::value<std::string>(),
      "the check that decides 'healed' (an id or JSON; rollback defaults to the snapshot's check)")(
      "target", po::value<std::string>(), "retry: the command to re-run (a command string or a JSON argv array)")(
      "check", po::value<std::string>(), "retry: re-run this check instead of --target")(
      "attempts", po::value<int>()->default_value(engine::kMaxRetryAttempts), "retry: runs at most (1-3)")(
      "backoff-ms", po::value<long long>()->default_value(500), "retry: first wait; doubles each time, plus jitter");
  Parsed p;
  if (!parse_command("heal", desc, args, p, false)) return kExitOk;
  if (!p.vm.count("strategy")) throw UsageError("heal: --strategy is required (rollback or retry)");
  std::string strategy = p.vm["strategy"].as<std::string>();
  config::Config cfg = config::load(p.ctx.root, false);
  if (p.ctx.in_repo) layout::require_writable(gitx::Repo::open(p.ctx.root));
  json out = {{"strategy", strategy}, {"healed", false}};
  if (strategy == "rollback") return heal_by_rollback(p, cfg, out);
  if (strategy == "retry") return heal_by_retry(p, cfg, out);
  throw UsageError("heal: unknown strategy '" + strategy + "' (rollback or retry)");
}

int cmd_trace(const std::vector<std::string>& args) {
  po::options_description desc("trace options");
  Parsed p;
  if (!parse_command("trace", desc, args, p)) return kExitOk;
  if (p.positional.empty() || p.positional[0] != "verify")
    throw UsageError("trace: the subcommand is 'verify' (phoenix trace verify [FILE])");
  if (p.positional.size() > 2) throw UsageError("trace verify: at most one FILE");
  std::string file = p.positional.size() == 2 ? p.positional[1] : p.ctx.trace_path();
  if (!util::path_exists(file)) throw UsageError("trace verify: " + file + " does not exist");
  trace::VerifyResult v = trace::verify(file);
  if (p.ctx.json) {
    json j = {{"ok", v.ok}, {"entries", v.entries}, {"bytes", v.bytes}, {"file", file}};
    if (!v.ok) j.update({{"kind", v.kind}, {"seq", v.bad_seq}, {"line", v.bad_line}, {"why", v.why}});
    print_json(p.ctx, j);
  } else if (v.ok) {
    std::cout << "trace ok: " << v.entries << (v.entries == 1 ? " entry" : " entries") << " (" << v.bytes
              << " bytes) in " << file << "\n";
  } else {
    std::cout << red(p.ctx, v.kind == "torn" ? "torn" : "tampered") << ": " << file << " line " << v.bad_line
              << ", seq " << v.bad_seq << ": " << v.kind << ": " << v.why << "\n"
              << v.entries << " entries before it verify.\n";
  }
  return v.ok ? kExitOk : kExitRed;
}

int cmd_recover(const std::vector<std::string>& args) {
  po::options_description desc("recover options");
  Parsed p;
  if (!parse_command("recover", desc, args, p, false)) return kExitOk;
  json actions = json::array();
  if (p.ctx.in_repo) layout::require_writable(gitx::Repo::open(p.ctx.root));
  if (util::path_exists(p.ctx.trace_path()) && trace::repair_torn_tail(p.ctx.trace_path()))
    actions.push_back("moved a torn last trace line into a trace.torn_repaired entry");
  if (p.ctx.in_repo)
    for (const auto& a : engine::recover(p.ctx.root, p.ctx.trace())) actions.push_back(a);
  if (p.ctx.json) print_json(p.ctx, {{"actions", actions}});
  else if (actions.empty()) std::cout << "nothing to recover\n";
  else
    for (const auto& a : actions) std::cout << "recovered: " << a.get<std::string>() << "\n";
  return kExitOk;
}

}  // namespace phoenix::cli
