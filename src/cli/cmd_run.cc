// phoenix run: one run of the engine over the checks (docs/architecture.md,
// "One `phoenix run`"); templates_dir(), which the loop uses too.
#include <filesystem>
#include <iostream>

#include "cli/app.h"
#include "cli/check_args.h"
#include "engine/session.h"
#include "engine/state.h"
#include "engine/timeline.h"
#include "fixers/factory.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::cli {

namespace fs = std::filesystem;
using nlohmann::json;

std::string templates_dir() {
  // An installed phoenix finds its templates beside itself; a build tree
  // uses the source tree's.
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = self.parent_path().parent_path() / "share/phoenix/templates";
    if (fs::exists(installed / "prompt.md", ec)) return installed.string();
  }
  if (fs::exists(std::string(PHOENIX_TEMPLATES_DIR) + "/prompt.md", ec)) return PHOENIX_TEMPLATES_DIR;
  return PHOENIX_SOURCE_TEMPLATES_DIR;
}

namespace {

std::vector<std::string> split_ids(const std::vector<std::string>& raw) {
  std::vector<std::string> out;
  for (const auto& r : raw) {
    size_t start = 0;
    while (start <= r.size()) {
      size_t comma = r.find(',', start);
      std::string id = util::trim(r.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!id.empty()) out.push_back(id);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// The engine's options from the command line.
engine::RunOptions run_options(Parsed& p, const config::Config& cfg) {
  engine::RunOptions opt;
  opt.dry_run = p.vm.count("dry-run") > 0;
  opt.allow_dirty = p.vm.count("allow-dirty") > 0;
  opt.no_cache = p.vm.count("no-cache") > 0;
  opt.explain = p.vm.count("explain") > 0;
  if (p.vm.count("debug")) {
    if (p.vm["debug"].as<std::string>() != "explain") throw UsageError("run: -d takes 'explain'");
    opt.explain = true;
  }
  if (p.vm.count("rollback")) {
    if (engine::parse_rollback(p.vm["rollback"].as<std::string>()) != engine::Rollback::kKnownGood)
      throw UsageError("run: --rollback takes 'known-good'");
    opt.rollback = engine::Rollback::kKnownGood;
  }
  opt.templates_dir = templates_dir();
  opt.max_wait_s = cfg.harness.max_wait_s.value_or(config::kDefaultMaxWaitS);
  if (p.vm.count("only")) {
    opt.only = split_ids(p.vm["only"].as<std::vector<std::string>>());
    if (opt.only.empty()) throw UsageError("run: --only needs at least one check id");
    for (const auto& id : opt.only)
      if (!cfg.find(id)) {
        std::string near = util::nearest(id, cfg.check_ids());
        throw UsageError("run: --only " + id + ": no such check in phoenix.json" +
                         (near.empty() ? "" : " (did you mean '" + near + "'?)"));
      }
  }
  return opt;
}

// The run's end: a summary object (--json) or a line per issue.
int print_result(const Context& ctx, const engine::RunResult& r, bool dry_run) {
  json summary = {{"event", "summary"},
                  {"exit_code", r.exit_code},
                  {"known_good", r.known_good},
                  {"incident", r.incident.empty() ? json(nullptr) : json(r.incident)}};
  json issues = json::array();
  for (const auto& i : r.issues) {
    issues.push_back({{"check", i.check},
                      {"state", i.state},
                      {"attempts", i.attempts},
                      {"fixer", i.fixer},
                      {"commit", i.fix_commit},
                      {"signature", i.issue_signature},
                      {"model_calls", i.model_calls ? json(*i.model_calls) : json(nullptr)}});
    if (dry_run && i.state == engine::State::kProposed && !ctx.json)
      std::cout << "proposed by " << i.fixer << " for " << i.check << " (not applied: --dry-run):\n" << i.patch;
  }
  summary["issues"] = issues;
  if (!r.model_unusable.empty()) summary["model_unusable"] = r.model_unusable;
  if (ctx.json) {
    std::cout << summary.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return r.exit_code;
  }
  if (r.issues.empty())
    std::cerr << "phoenix: every check is green"
              << (r.known_good.empty() ? "" : "; known-good " + util::sha12(r.known_good)) << "\n";
  // The model could not be used: one line with the cause.
  if (!r.model_unusable.empty()) {
    std::cerr << "phoenix: " << r.model_unusable << "\n";
    return r.exit_code;
  }
  for (const auto& i : r.issues) {
    std::string line = i.check + ": " + engine::state_name(i.state);
    if (i.state == engine::State::kHealed)
      line +=
          " by " + i.fixer + (i.fix_commit.empty() ? " (fix left uncommitted)" : " in " + util::sha12(i.fix_commit));
    if (i.state == engine::State::kEscalated)
      line += " — see " + r.incident + " (rolled back to " + util::sha12(r.rolled_back_to) + ")";
    std::cerr << "phoenix: " << line << "\n";
  }
  return r.exit_code;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc("run options");
  desc.add_options()("dry-run", "stop at PROPOSED: write nothing to the repository, spend nothing on a model")(
      "only", po::value<std::vector<std::string>>()->composing(),
      "run only these check ids (comma-separated, repeatable)")(
      "fixer", po::value<std::string>(), "fixers to use, in order (journal,bisect,harness,noop)")(
      "allow-dirty", "heal even though the work tree has uncommitted changes (they are left alone)")(
      "rollback", po::value<std::string>(), "on escalation roll back to 'known-good' instead of the pre-run state")(
      "no-journal", "do not replay remembered fixes (full price)")(
      "no-cache", "measure every check fresh, never from the measurement store (also PHOENIX_NO_CACHE=1)")(
      "explain", "say why each decision was taken (budget, guard, signature)")("debug,d", po::value<std::string>(),
                                                                               "'-d explain' is the same as --explain");
  Parsed p;
  if (!parse_command("run", desc, args, p, false)) return kExitOk;
  config::Config cfg = config::load(p.ctx.root, true);
  if (!p.ctx.in_repo) throw UsageError("run: " + p.ctx.root + " is not inside a git repository");
  engine::SessionOptions so;
  so.run = run_options(p, cfg);
  if (p.vm.count("fixer")) so.fixers = fixers::parse_fixer_list(p.vm["fixer"].as<std::string>());
  so.no_journal = p.vm.count("no-journal") > 0;
  Context& ctx = p.ctx;
  layout::require_writable(gitx::Repo::open(ctx.root));
  engine::RunResult r = engine::run_session(ctx.root, cfg, so, ctx.trace(), [&](const json& ev) {
    if (ctx.json) std::cout << ev.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
    const std::string line = engine::timeline_line(ev, engine::TimelineForm::kRun, ctx.color_err);
    if (!line.empty()) std::cerr << line << "\n";
  });
  return print_result(ctx, r, so.run.dry_run);
}

}  // namespace phoenix::cli
