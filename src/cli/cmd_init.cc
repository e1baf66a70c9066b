// phoenix init: detect the project (cli/init_detect.h), write phoenix.json
// and the root .gitignore entries, then prove what was written: every check
// is measured twice, in the work tree as it is and in a fresh tree of HEAD
// (Phoenix's own "init" worktree, outside the work tree) after the setup
// steps — the situation of every tree Phoenix makes later (the loop's,
// bisect's, the hook's, a fixer's sandbox). Green in both is the only
// answer that says the checks will mean something there.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "checks/check.h"
#include "cli/app.h"
#include "cli/init_detect.h"
#include "cli/init_python.h"
#include "config/config.h"
#include "gitx/repo.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/lock.h"
#include "util/term.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The last `max_lines` lines of `evidence`, each behind "       | ".
void print_tail(const Context& ctx, const std::string& evidence, size_t max_lines) {
  auto lines = util::split_lines(evidence);
  while (!lines.empty() && util::trim(lines.back()).empty()) lines.pop_back();
  size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
  if (from > 0) std::cout << dim(ctx, "       | ... (" + std::to_string(from) + " lines above)") << "\n";
  for (size_t i = from; i < lines.size(); ++i)
    std::cout << dim(ctx, util::trim(lines[i]).empty() ? "       |" : "       | ") << lines[i] << "\n";
}

json sense_json(const checks::SenseResult& r) {
  return {{"ok", r.ok}, {"signal", r.signal}, {"evidence", r.evidence}, {"duration_ms", r.duration_ms}};
}

struct FreshTree {
  std::string name;  // its name among Phoenix's trees: "init", or "init-2"... when another init holds that one
  std::unique_ptr<util::FileLock> lock;  // held while init uses the tree, as bisect holds its trees
  std::string path;
  std::string head;
  bool dirty = false;   // the work tree's tracked files differ from HEAD (besides what init wrote)
  std::string skipped;  // why there is no fresh-tree measurement ("" when there is)
  bool failed = false;  // skipped because making it failed (not merely no commit yet)
  bool setup_failed = false;
  setup::Result setup;
};

constexpr int kInitTrees = 3;

// The first of init's trees ("init", "init-2", "init-3") no other run
// holds, locked for this one; nullptr when every one is held. `busy` names
// the held ones passed over and their holders (pid and command).
std::unique_ptr<util::FileLock> take_init_tree(const gitx::Repo& repo, std::string& name, std::string& busy) {
  for (int i = 0; i < kInitTrees; ++i) {
    name = i == 0 ? "init" : "init-" + std::to_string(i + 1);
    const std::string lock_file = layout::tree_lock(repo, name);
    if (std::unique_ptr<util::FileLock> lock = util::FileLock::try_take(lock_file)) return lock;
    const std::string who = util::FileLock::holder(lock_file);
    busy += (busy.empty() ? "" : "; ") + name + " is held by " + (who.empty() ? "another process" : who);
  }
  return nullptr;
}

// Phoenix's "init" worktree at HEAD, set up with cfg.setup.
FreshTree prepare_fresh_tree(const Context& ctx, const config::Config& cfg) {
  FreshTree f;
  try {
    gitx::Repo repo = gitx::Repo::open(ctx.root);
    f.head = repo.head_sha();
    if (f.head.empty()) {
      f.skipped = "no commit yet: a fresh tree holds HEAD's files, so it is measured once there is a commit";
      return f;
    }
    f.dirty = !repo.tracked_clean({"phoenix.json", ".gitignore", layout::kStateDirPrefix});
    std::string busy;
    f.lock = take_init_tree(repo, f.name, busy);
    if (!f.lock) {
      f.skipped = "every fresh tree of init is in use (" + busy + "): run 'phoenix init' again once they end";
      f.failed = true;
      return f;
    }
    if (!busy.empty() && !ctx.json) std::cout << "  " << busy << ": this init takes " << f.name << "\n";
    f.path = gitx::prepare_worktree(repo, f.name, layout::worktree_path(repo, f.name), "HEAD", layout::state_prefixes())
                 .path;
    if (!ctx.json) std::cout << "  fresh tree: " << f.path << dim(ctx, " (HEAD " + util::sha12(f.head) + ")") << "\n";
    f.setup = [&] {
      util::term::Progress progress("phoenix: setting up the fresh tree");  // drawn on a TTY only
      return setup::ensure(cfg.setup, f.path, layout::setup_stamp(repo, f.name), {}, [&](const config::SetupStep& s) {
        progress.set_label("phoenix: setup: " + util::join_argv(s.run));
        if (!ctx.json) std::cout << "  setup  " << dim(ctx, "$ " + util::join_argv(s.run)) << "\n" << std::flush;
      });
    }();
  } catch (const Error& e) {
    f.skipped = std::string("the fresh tree could not be made: ") + e.what();
    f.failed = true;
    return f;
  }
  if (!f.setup.ok) f.setup_failed = true;
  return f;
}

std::string setup_commands(const config::Config& cfg) {
  std::string s;
  for (const auto& step : cfg.setup) s += (s.empty() ? "" : "; ") + util::join_argv(step.run);
  return s;
}

// One line of advice for a check that is red somewhere ("" when green).
std::string advice(const config::Config& cfg, const checks::SenseResult& work,
                   const std::optional<checks::SenseResult>& fresh, const FreshTree& f) {
  bool fresh_ok = fresh && fresh->ok;
  if (work.ok && (fresh_ok || !fresh)) return "";
  auto missing = [](const checks::SenseResult& r) { return util::starts_with(r.signal, "not found: "); };
  if (!work.ok && missing(work))
    return "install " + work.signal.substr(11) + ", or change this check's \"target\" in phoenix.json";
  if (fresh && !fresh->ok && missing(*fresh))
    return fresh->signal.substr(11) + " is missing in the fresh tree: add a setup step that makes it to \"setup\"";
  if (!fresh) {
    if (f.setup_failed)
      return "fix the failing setup step in phoenix.json first; the work tree is red too: fix what the evidence shows";
    return "fix what the evidence shows, or this check's \"target\" in phoenix.json when it is the wrong command";
  }
  if (work.ok && !fresh->ok)
    return "the setup steps do not give a fresh tree what this check needs: add them to \"setup\" (a fresh tree holds "
           "HEAD's tracked files only: commit what the check needs, or make it in a setup step)";
  if (!work.ok && fresh->ok) {
    std::string run_setup = "run the setup steps in your work tree (" + setup_commands(cfg) + ")";
    if (f.dirty)
      return "an uncommitted change breaks it: the fresh tree, which is HEAD, is green (see git diff)" +
             (cfg.setup.empty() ? std::string() : "; or " + run_setup);
    if (cfg.setup.empty())
      return "the work tree differs from HEAD in files git does not track (untracked or ignored) that this check reads";
    return run_setup;
  }
  return "red in both trees: fix what the evidence shows, or this check's \"target\" in phoenix.json when it is the "
         "wrong command";
}

// After the proof: a fresh tree that was green everywhere is removed (its
// registration, its folder, its setup stamp), so `git worktree list` does
// not keep it; one that is red stays where the evidence points, and says so.
void finish_fresh_tree(const Context& ctx, const FreshTree& f, bool green, json& out) {
  if (f.path.empty()) return;
  out["fresh_tree"]["kept"] = !green;
  if (!green) {
    if (!ctx.json)
      std::cout << "  fresh tree kept at " << f.path << " to look into what is red there (the next 'phoenix init' "
                << "reuses it; 'git worktree remove --force " << f.path << "' removes it)\n";
    return;
  }
  try {
    gitx::Repo repo = gitx::Repo::open(ctx.root);
    repo.worktree_remove(f.name);
    std::error_code ec;
    fs::remove(layout::setup_stamp(repo, f.name), ec);
    if (!ctx.json) std::cout << "  fresh tree removed: 'git worktree list' does not keep it\n";
  } catch (const Error& e) {
    out["fresh_tree"]["kept"] = true;
    if (!ctx.json) std::cout << "  fresh tree kept at " << f.path << ": it could not be removed: " << e.what() << "\n";
  }
}

// Prints and records how the fresh tree was made and set up; kExitInterrupted
// when its setup was interrupted.
std::optional<int> report_fresh_tree(const Context& ctx, const config::Config& cfg, const FreshTree& f, json& out) {
  json fresh_json = {{"path", f.path.empty() ? json(nullptr) : json(f.path)},
                     {"head", f.head.empty() ? json(nullptr) : json(f.head)},
                     {"skipped", f.skipped.empty() ? json(nullptr) : json(f.skipped)}};
  if (f.skipped.empty())
    fresh_json["setup"] = {
        {"ok", f.setup.ok},     {"ran", f.setup.ran},           {"signal", f.setup.signal},
        {"step", f.setup.step}, {"evidence", f.setup.evidence}, {"duration_ms", f.setup.duration_ms}};
  out["fresh_tree"] = fresh_json;
  if (!f.skipped.empty()) {
    if (!ctx.json) std::cout << "  fresh tree: not measured: " << f.skipped << "\n";
  } else if (f.setup.interrupted) {
    return kExitInterrupted;
  } else if (!ctx.json && !cfg.setup.empty()) {
    if (!f.setup.ok) {
      std::cout << "  setup  " << red(ctx, "failed") << ": " << f.setup.signal << " ("
                << util::seconds_tenths(f.setup.duration_ms) << ")\n";
      print_tail(ctx, f.setup.evidence, 15);
      std::cout << "         -> fix this step in phoenix.json's \"setup\": it runs in a fresh checkout of HEAD, so "
                   "what it needs must be committed\n";
    } else {
      std::cout << "  setup  "
                << (f.setup.ran ? "done (" + util::seconds_tenths(f.setup.duration_ms) + ")"
                                : std::string("up to date: its inputs did not change (nothing ran)"))
                << "\n";
    }
  }
  return std::nullopt;
}

// Measures every check in the work tree and in a fresh tree; prints and
// fills `out`. Returns the exit code.
int measure(const Context& ctx, const config::Config& cfg, json& out) {
  if (!ctx.json)
    std::cout << "\nmeasuring every check twice: in the work tree, and in a fresh tree of HEAD after the setup steps\n";
  FreshTree f = prepare_fresh_tree(ctx, cfg);
  if (auto code = report_fresh_tree(ctx, cfg, f, out)) return *code;
  size_t width = 5;
  for (const auto& c : cfg.checks) width = std::max(width, c.id.size());
  // No commit yet is no failure: there is nothing a fresh tree could hold.
  bool all_ok = !f.failed && !f.setup_failed;
  bool fresh_green = f.skipped.empty() && !f.setup_failed;
  json rows = json::array();
  for (const auto& check : cfg.checks) {
    checks::SenseResult work = [&] {
      util::term::Progress progress("phoenix: " + check.id + " in the work tree");
      return checks::sense(check, ctx.root);
    }();
    if (work.interrupted) return kExitInterrupted;
    std::optional<checks::SenseResult> fresh;
    if (f.skipped.empty() && !f.setup_failed) {
      fresh = [&] {
        util::term::Progress progress("phoenix: " + check.id + " in the fresh tree");
        // The fresh tree shares the user's config, hooks and refs.
        const setup::Guard guard(f.path);
        checks::SenseResult r = checks::sense(check, f.path);
        guard.restore("the check " + check.id);
        return r;
      }();
      if (fresh->interrupted) return kExitInterrupted;
    }
    all_ok = all_ok && work.ok && (!fresh || fresh->ok);
    fresh_green = fresh_green && fresh && fresh->ok;
    std::string tip = advice(cfg, work, fresh, f);
    rows.push_back({{"check", check.id},
                    {"work_tree", sense_json(work)},
                    {"fresh_tree", fresh ? sense_json(*fresh) : json(nullptr)},
                    {"advice", tip.empty() ? json(nullptr) : json(tip)}});
    if (ctx.json) continue;
    auto verdict = [&](const checks::SenseResult& r) {
      return (r.ok ? green(ctx, "green") : red(ctx, "red")) + " (" + (r.ok ? "" : r.signal + ", ") +
             util::seconds_tenths(r.duration_ms) + ")";
    };
    std::string id = check.id;
    id.resize(width, ' ');
    std::cout << "  " << bold(ctx, id) << "  work tree: " << verdict(work) << "   fresh tree: "
              << (fresh ? verdict(*fresh)
                        : std::string(f.setup_failed ? "not measured (setup failed)" : "not measured"))
              << "\n";
    if (!work.ok) {
      std::cout << "         work tree: " << work.signal << "\n";
      print_tail(ctx, work.evidence, 15);
    }
    if (fresh && !fresh->ok) {
      std::cout << "         fresh tree: " << fresh->signal << dim(ctx, "  (" + f.path + ")") << "\n";
      print_tail(ctx, fresh->evidence, 15);
    }
    if (!tip.empty()) std::cout << "         -> " << tip << "\n";
  }
  out["measurements"] = rows;
  out["ok"] = all_ok;
  finish_fresh_tree(ctx, f, fresh_green, out);
  if (!ctx.json) {
    if (all_ok && !f.skipped.empty())
      std::cout << green(ctx, "green") << " in the work tree (the fresh tree was not measured: " << f.skipped << ")\n";
    else if (all_ok)
      std::cout << green(ctx, "green")
                << ": every check passes in the work tree and in a fresh tree after the setup steps\n";
    else
      std::cout << red(ctx, "not green") << ": phoenix.json is written and stays; change what the lines above say, "
                << "then measure again with 'phoenix sense' (or 'phoenix init --force', which rewrites phoenix.json)\n";
  }
  return all_ok ? kExitOk : kExitRed;
}

}  // namespace

int cmd_init(const std::vector<std::string>& args) {
  po::options_description desc("init options");
  desc.add_options()("force", "overwrite an existing phoenix.json")(
      "no-measure",
      "write phoenix.json without measuring its checks (by default every check is run in the work tree "
      "and in a fresh tree of HEAD after the setup steps; exit 1 when one is red)");
  Parsed p;
  if (!parse_command("init", desc, args, p, false)) return kExitOk;
  if (!p.ctx.in_repo) throw UsageError("init: " + p.ctx.cwd + " is not inside a git repository");
  std::string file = p.ctx.root + "/phoenix.json";
  if (fs::exists(file) && !p.vm.count("force"))
    throw UsageError("init: " + file + " exists; 'phoenix init --force' overwrites it");
  Detected d = detect_project(p.ctx.root);
  const std::string runner_why = choose_pytest_runner(p.ctx.root, d);
  std::string text = render_phoenix_json(d);
  config::Config cfg = config::parse(text, "phoenix.json");  // what init writes must load
  util::write_file_atomic(file, text);
  // .gitignore: run files stay out of git; contracts and baselines stay tracked.
  std::string gi_path = p.ctx.root + "/.gitignore";
  std::string gi = fs::exists(gi_path) ? util::read_file(gi_path) : "";
  bool gi_changed = false;
  if (gi.find(layout::kRootIgnoreLine) == std::string::npos) {
    if (!gi.empty() && gi.back() != '\n') gi += "\n";
    gi += layout::root_gitignore();
    util::write_file_atomic(gi_path, gi);
    gi_changed = true;
  }
  const DetectedCheck* unit = nullptr;
  for (const auto& c : d.checks)
    if (c.id == "unit") unit = &c;
  json out = {{"config", file},
              {"detected_from", d.why},
              {"setup_detected_from", d.setup_why},
              {"test_command", unit ? json(unit->argv) : json::array()},
              {"editable", d.editable},
              {"test_runner", runner_why.empty() ? json(nullptr) : json(runner_why)},
              {"gitignore_updated", gi_changed}};
  json setup = json::array();
  for (const auto& s : cfg.setup) setup.push_back({{"run", s.run}, {"inputs", s.inputs}, {"timeout_s", s.timeout_s}});
  out["setup"] = setup;
  json checks = json::array();
  for (const auto& c : d.checks) checks.push_back({{"id", c.id}, {"type", c.type}, {"target", c.argv}});
  out["checks"] = checks;
  if (!p.ctx.json) {
    std::cout << "wrote " << file << "\n";
    for (const auto& s : cfg.setup)
      std::cout << "  setup: " << util::join_argv(s.run)
                << (s.inputs.empty() ? std::string("  (once per tree)")
                                     : "  (again when " + util::join_argv(s.inputs) + " change)")
                << "\n";
    if (!cfg.setup.empty()) std::cout << "    detected from " << d.setup_why << "\n";
    if (d.checks.empty()) std::cout << "  no test command detected: add a check to phoenix.json\n";
    for (const auto& c : d.checks)
      std::cout << "  check '" << c.id << "': " << util::join_argv(c.argv) << "  (from " << d.why << ")\n";
    if (!runner_why.empty()) std::cout << "    " << runner_why << "\n";
    if (!d.editable.empty()) std::cout << "  editable: " << util::join_argv(d.editable) << "\n";
    if (gi_changed) std::cout << "updated .gitignore: .phoenix/* (contracts/ and baselines/ stay tracked)\n";
  }
  int code = kExitOk;
  out["measured"] = false;
  if (!p.vm.count("no-measure") && !cfg.checks.empty()) {
    out["measured"] = true;
    code = measure(p.ctx, cfg, out);
  }
  if (p.ctx.json) print_json(p.ctx, out);
  return code;
}

}  // namespace phoenix::cli
