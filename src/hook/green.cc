// The green path: see hook/green.h. Nothing here may need libgit2, OpenSSL
// or SQLite: this file is part of phoenix_lite.
#include "hook/green.h"

#include "hook/fixed.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <ostream>

#include "checks/measured.h"
#include "config/config.h"
#include "hook/git_objects.h"
#include "hook/owner.h"
#include "hook/runs.h"
#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/signals.h"
#include "util/subprocess.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// The parts both hooks use

namespace {

using util::term::paint;

}  // namespace

std::optional<std::string> find_work_tree(const std::string& cwd) {
  std::error_code ec;
  if (const char* wt = std::getenv("GIT_WORK_TREE"); wt && *wt && fs::is_directory(wt, ec))
    return fs::canonical(wt).string();
  for (fs::path p = cwd;; p = p.parent_path()) {
    if (fs::exists(fs::symlink_status(p / ".git", ec))) return p.string();
    if (p == p.root_path() || p.empty()) return std::nullopt;
  }
}

namespace {

// How head_state_from_git's `git status` runs, and what its result says
// (the green path starts it early and waits for it later).
util::ProcessOptions head_state_options(const std::string& root) {
  util::ProcessOptions o;
  o.argv = {"git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"};
  o.cwd = root;
  o.timeout_s = 600;
  o.head_bytes = 1 << 20;
  o.tail_bytes = 0;
  return o;
}

std::optional<HeadState> head_state_of(const util::ProcessResult& r) {
  if (r.exit_code != 0 || r.output_truncated) return std::nullopt;
  HeadState st;
  st.clean = true;
  bool saw_oid = false;
  const std::string& out = r.output;
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\0', pos);
    if (end == std::string::npos) end = out.size();
    const std::string_view rec(out.data() + pos, end - pos);
    pos = end + 1;
    if (rec.empty()) continue;
    if (util::starts_with(rec, "# branch.oid ")) {
      std::string oid(rec.substr(13));
      st.head = oid == "(initial)" ? "" : oid;
      saw_oid = true;
    } else if (util::starts_with(rec, "# branch.head ")) {
      std::string name(rec.substr(14));
      st.branch = name == "(detached)" ? "" : name;
    } else if (rec[0] == '#') {
      continue;
    } else {
      // A change. Untracked files under keep_prefixes() do not count
      // (Phoenix's own state); anything else, or anything not understood,
      // is for libgit2 to judge.
      const auto& keep = layout::keep_prefixes();
      const bool kept = rec.size() > 2 && rec[0] == '?' &&
                        std::any_of(keep.begin(), keep.end(),
                                    [&](const std::string& k) { return util::starts_with(rec.substr(2), k); });
      if (!kept) st.clean = false;
      if (rec[0] == '2')
        pos = out.find('\0', pos) == std::string::npos ? out.size() : out.find('\0', pos) + 1;  // the old path
    }
  }
  if (!saw_oid || (!st.head.empty() && st.head.size() != 40 && st.head.size() != 64)) return std::nullopt;
  return st;
}

}  // namespace

std::optional<HeadState> head_state_from_git(const std::string& root) {
  return head_state_of(util::run_process(head_state_options(root)));
}

const std::vector<const char*>& git_location_env() {
  static const std::vector<const char*> names{
      "GIT_DIR",        "GIT_WORK_TREE",         "GIT_INDEX_FILE",
      "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
      "GIT_PREFIX",     "GIT_IMPLICIT_WORK_TREE"};
  return names;
}

void forget_git_location_env() {
  for (const char* v : git_location_env()) ::unsetenv(v);
}

std::vector<checks::CheckSpec> hook_checks(const config::Config& cfg) {
  if (cfg.hook.checks.empty()) return cfg.checks;
  std::vector<checks::CheckSpec> selected;
  for (const auto& id : cfg.hook.checks) selected.push_back(*cfg.find(id));  // ids validated by config::load
  return selected;
}

std::unique_ptr<util::FileLock> lock_repository(const std::string& root) {
  return std::make_unique<util::FileLock>(layout::lock_file(root), 0, "this repository");
}

Deadline::Deadline(std::chrono::steady_clock::time_point start, double timeout_s)
    : timeout_s_(timeout_s), at_(start + std::chrono::duration<double>(timeout_s)) {}

double Deadline::left_s() const {
  return std::chrono::duration<double>(at_ - std::chrono::steady_clock::now()).count();
}

std::optional<checks::CheckSpec> Deadline::cap(const checks::CheckSpec& spec) const {
  const double left = left_s();
  if (left <= 0) return std::nullopt;
  checks::CheckSpec capped = spec;
  capped.timeout_s = std::min(spec.timeout_s, left);
  return capped;
}

std::string result_text(bool color, const checks::SenseResult& r, const std::string& where) {
  const std::string took = r.cached.empty() ? std::to_string(r.duration_ms) + " ms" : "cached: " + r.cached;
  std::string out = "phoenix: " + (r.ok ? paint(color, "32", "ok ") : paint(color, "31;1", "RED")) + "  " + r.id +
                    "  " + r.signal + paint(color, "2", "  (" + took + ")  " + where) + "\n";
  if (r.ok || r.evidence.empty()) return out;
  auto lines = util::split_lines(r.evidence);
  size_t from = lines.size() > 30 ? lines.size() - 30 : 0;
  if (from > 0) out += paint(color, "2", "     | ... (" + std::to_string(from) + " lines above)") + "\n";
  for (size_t i = from; i < lines.size(); ++i) out += paint(color, "2", "     | ") + lines[i] + "\n";
  return out;
}

void print_result(std::ostream& err, bool color, const checks::SenseResult& r, const std::string& where) {
  err << result_text(color, r, where);
}

std::string out_of_time_text(double timeout_s, const std::string& check, const std::string& where) {
  return "phoenix: hook.timeout_s (" + util::secs(timeout_s) + " s) ran out before " + check + " in " + where +
         "; push blocked\n";
}

void print_out_of_time(std::ostream& err, double timeout_s, const std::string& check, const std::string& where) {
  err << out_of_time_text(timeout_s, check, where);
}

void print_interrupted(std::ostream& err) { err << kInterruptedLine; }

const checks::SenseResult* Measured::find(const std::string& id) const {
  for (const auto& r : results)
    if (r.id == id) return &r;
  return nullptr;
}

void hand_lock(std::unique_ptr<util::FileLock> lock) {
  if (!lock) return;
  ::setenv(kLockEnv, std::to_string(lock->keep_across_exec()).c_str(), 1);
}

std::unique_ptr<util::FileLock> take_handed_lock(const std::string& root) {
  const char* named = std::getenv(kLockEnv);
  const std::string fd = named ? named : "";
  ::unsetenv(kLockEnv);  // the checks run from here on do not inherit it
  if (!fd.empty() && fd.size() < 10 && fd.find_first_not_of("0123456789") == std::string::npos)
    if (std::unique_ptr<util::FileLock> lock = util::FileLock::adopt(layout::lock_file(root), std::stoi(fd)))
      return lock;
  return nullptr;
}

void hand_measured(const std::string& root, const Measured& m) {
  util::Json results = util::Json::array();
  for (const auto& r : m.results)
    results.push_back({{"id", r.id},
                       {"ok", r.ok},
                       {"signal", r.signal},
                       {"evidence", r.evidence},
                       {"output", r.output},
                       {"duration_ms", r.duration_ms}});
  const util::Json doc{
      {"pid", static_cast<long long>(::getpid())}, {"commit", m.commit}, {"clean", true}, {"results", results}};
  const std::string path = layout::hook_measured_file(root);
  try {
    util::write_file_atomic(path, doc.dump(-1, ' ', false, util::Json::error_handler_t::replace) + "\n", 0600,
                            util::Sync::kAtomic);
  } catch (const std::exception&) { return; }
  ::setenv(kMeasuredEnv, path.c_str(), 1);
}

std::optional<Measured> take_measured() {
  const char* named = std::getenv(kMeasuredEnv);
  if (!named) return std::nullopt;
  const std::string path = named;
  ::unsetenv(kMeasuredEnv);  // the checks run from here on do not inherit it
  std::optional<Measured> m;
  try {
    const util::Json doc = util::Json::parse(util::read_file(path));
    if (doc.at("pid").get<long long>() == static_cast<long long>(::getpid()) && doc.at("clean").get<bool>()) {
      Measured got;
      got.commit = doc.at("commit").get<std::string>();
      for (const auto& j : doc.at("results")) {
        checks::SenseResult r;
        r.id = j.at("id").get<std::string>();
        r.ok = j.at("ok").get<bool>();
        r.signal = j.at("signal").get<std::string>();
        r.evidence = j.at("evidence").get<std::string>();
        r.output = j.at("output").get<std::string>();
        r.duration_ms = j.at("duration_ms").get<long long>();
        got.results.push_back(std::move(r));
      }
      if (!got.commit.empty()) m = std::move(got);
    }
  } catch (const std::exception&) {
    m.reset();  // unreadable, torn or not ours: measured again
  }
  if (util::ends_with(path, std::string("/") + layout::kHookMeasuredName))
    ::unlink(path.c_str());  // only ever a file of ours
  return m;
}

// ---------------------------------------------------------------------------
// phoenix-hook's run

namespace {

// What `git status` says of the push.
struct HeadWatch {
  std::optional<HeadState> st;
  std::vector<const PushedRef*> pushing;
  bool green = false;  // every pushed commit is HEAD, on a clean tree
  // Who git runs on push (said only on phoenix-hook's own verdict).
  std::optional<HookOwner> owner;

  // Who runs on push, then git's answer (`status`, started earlier: the
  // owner is read while git works).
  void judge(const std::vector<PushedRef>& refs, const std::string& root, util::Subprocess& status) {
    try {
      owner = hook_owner_of(root);
    } catch (const std::exception&) {}
    try {
      st = head_state_of(status.wait());
      green = st && st->clean && !st->head.empty();
      for (const auto& r : refs) {
        if (r.deletion()) continue;
        if (!green || r.local_sha != st->head) {
          green = false;
          break;
        }
        pushing.push_back(&r);
      }
    } catch (const std::exception&) { green = false; }
  }
};

// The checks run in place until the first red one.
struct InPlace {
  std::vector<checks::SenseResult> results;
  std::optional<std::string> out_of_time;  // the check hook.timeout_s ran out before
};

// The measurement store as the thin binary sees it (checks/measured.h):
// the pushed commit's tree read from git's objects (hook/git_objects.h),
// else as Phoenix noted it when it measured that commit
// (checks::known_tree), else — a commit stored as a delta in a pack — from
// one `git rev-parse` (noted once the push is judged green); trusted only
// once `git status` says the push is that commit, a clean HEAD. Without
// setup steps only: their fingerprint hashes files, which is the full
// binary's (setup/). Used from the first push on, store empty or not: a
// green measurement here is what a later push of the same tree is
// answered from.
struct ThinStore {
  std::string dir;
  std::string head;  // the pushed commit; "" when the store is not used
  std::string tree;
  bool asked_git = false;  // the tree came from git, not from its objects or the store's note

  ThinStore(const std::string& root, const config::Config& cfg, const std::vector<PushedRef>& refs)
      : dir(layout::measured_dir(root)) {
    if (!cfg.setup.empty() || checks::cache_disabled_by_env()) return;
    std::string commit;
    for (const auto& r : refs) {
      if (r.deletion()) continue;
      if (!commit.empty() && r.local_sha != commit) return;  // not one commit: not the green path's
      commit = r.local_sha;
    }
    if (!checks::is_tree_id(commit)) return;
    if (const auto dirs = git_dirs(root))
      if (std::optional<std::string> read = commit_tree((dirs->second / "objects").string(), commit)) {
        head = commit;
        tree = *read;
        return;
      }
    if (std::string noted = checks::known_tree(dir, commit); !noted.empty()) {
      head = commit;
      tree = noted;
      return;
    }
    util::ProcessOptions o;
    o.argv = {"git", "rev-parse", "-q", "--verify", commit + "^{tree}"};
    o.cwd = root;
    o.timeout_s = 60;
    util::ProcessResult r = util::run_process(o);
    const std::vector<std::string> lines = util::split_lines(r.output);
    if (r.exit_code != 0 || lines.size() != 1 || !checks::is_tree_id(lines[0])) return;
    head = commit;
    tree = lines[0];
    asked_git = true;
  }

  std::optional<checks::SenseResult> find(const checks::CheckSpec& spec) const {
    if (tree.empty() || !checks::cache_wanted(spec)) return std::nullopt;
    auto m = checks::find_measurement(dir, checks::measure_key(spec, tree, ""), spec.cache_max_age_h);
    if (!m) return std::nullopt;
    checks::SenseResult r = checks::served(*m);
    r.id = spec.id;
    return r;
  }

  void record(const checks::CheckSpec& spec, const checks::SenseResult& r) const {
    if (tree.empty() || !checks::cache_wanted(spec)) return;
    checks::record_measurement(dir, {checks::measure_key(spec, tree, ""), r, util::now_ms(), "hook", -1, "", {}, ""});
  }
};

// `served[i]`: the store's answer for `selected[i]`, when it has one;
// `first`: the first of the others, already started (it ran beside git).
InPlace sense_until_red(const std::vector<checks::CheckSpec>& selected,
                        std::vector<std::optional<checks::SenseResult>> served, const std::string& root,
                        const Deadline& deadline, std::unique_ptr<checks::StartedCheck> first) {
  InPlace ran;
  for (size_t i = 0; i < selected.size(); ++i) {
    const auto& spec = selected[i];
    if (served[i]) {
      ran.results.push_back(std::move(*served[i]));
      continue;
    }
    checks::SenseResult r;
    if (first) {
      r = first->wait();
      first.reset();
    } else {
      std::optional<checks::CheckSpec> capped = deadline.cap(spec);
      if (!capped) {
        ran.out_of_time = spec.id;
        break;
      }
      r = checks::sense_command_exit(*capped, root);
    }
    const bool red = !r.ok;
    ran.results.push_back(std::move(r));
    if (red) break;
  }
  return ran;
}

// The verdict once git has said green and the checks have stopped.
std::optional<int> conclude(const HeadWatch& git, const InPlace& ran, double timeout_s, std::string& err) {
  // Ctrl-C blocks the push: handing over would run the checks again.
  const bool interrupted = util::interrupted_signal() != 0 || std::any_of(ran.results.begin(), ran.results.end(),
                                                                          [](const auto& r) { return r.interrupted; });
  // The green lines before the first red (or interrupted) check, as the
  // full hook would have printed them before stopping there.
  const std::string where = push_label(git.pushing, git.st->head);
  const bool color = util::term::color_enabled(2);
  std::string out;
  for (const auto& r : ran.results) {
    if (!r.ok) break;
    out += result_text(color, r, where);
  }
  if (interrupted) {
    err += out + kInterruptedLine;
    return kExitInterrupted;
  }
  if (!ran.results.empty() && !ran.results.back().ok) return std::nullopt;  // red: the full hook blocks or heals
  err += out;
  if (ran.out_of_time) {
    err += out_of_time_text(timeout_s, *ran.out_of_time, where);
    return kExitRed;
  }
  return kExitOk;
}

}  // namespace

namespace {

// Every way to the full hook: the lock goes with the exec that follows.
std::nullopt_t handing(std::unique_ptr<util::FileLock> lock) {
  hand_lock(std::move(lock));
  return std::nullopt;
}

}  // namespace

std::optional<int> run_green(const std::vector<PushedRef>& refs, const std::string& root, const std::string& remote,
                             std::string& err) {
  const auto start = std::chrono::steady_clock::now();
  if (commits_to_measure(refs).empty()) return std::nullopt;
  forget_git_location_env();  // before git starts
  // `git status` starts the moment phoenix-hook knows what is pushed: its
  // answer, which every green push waits for, overlaps everything else. A
  // push that turns out not to be the green path's stops it (destroyed).
  const std::unique_ptr<util::Subprocess> status = util::Subprocess::start_unread(head_state_options(root));
  if (!status->started()) return std::nullopt;
  config::Config cfg;
  try {
    cfg = config::load(root, false);
  } catch (const Error&) {
    return std::nullopt;  // the full hook says why, the same way
  }
  if (cfg.path.empty()) return std::nullopt;
  const std::vector<checks::CheckSpec> selected = hook_checks(cfg);
  if (selected.empty()) return std::nullopt;
  for (const auto& spec : selected)
    if (spec.kind != checks::Kind::kCommandExit) return std::nullopt;

  std::unique_ptr<util::FileLock> lock;
  try {
    lock = lock_repository(root);
  } catch (const Error&) { return std::nullopt; }
  // A remote end no earlier run explains: the full hook asks git about it.
  if (!unexplained_remote_ends(root, remote, refs).empty()) return handing(std::move(lock));

  // The first check the store does not answer runs beside git; its result
  // counts only once git has said yes, and it is stopped when git says no.
  const ThinStore store(root, cfg, refs);
  std::vector<std::optional<checks::SenseResult>> served;
  for (const auto& spec : selected) served.push_back(store.find(spec));
  const Deadline deadline(start, cfg.hook.timeout_s);
  std::unique_ptr<checks::StartedCheck> first;
  const auto unserved = std::find(served.begin(), served.end(), std::nullopt);
  if (unserved != served.end())
    if (std::optional<checks::CheckSpec> capped = deadline.cap(selected[unserved - served.begin()]))
      first = std::make_unique<checks::StartedCheck>(*capped, root);
  HeadWatch git;
  git.judge(refs, root, *status);
  if (!git.green) {
    if (first) first->stop();
    if (util::interrupted_signal() == 0)
      return handing(std::move(lock));  // another commit, a dirty tree, git could not say
    err += kInterruptedLine;            // Ctrl-C blocks the push: handing over would run the checks again
    log_run(root, "phoenix-hook", remote, refs, RunOutcome::kInterrupted, {});
    return kExitInterrupted;
  }
  const InPlace ran = sense_until_red(selected, std::move(served), root, deadline, std::move(first));
  // The store's answers hold for the tree git status judged, and only then.
  if (!store.head.empty() && git.st->head != store.head) return handing(std::move(lock));
  const std::optional<int> code = conclude(git, ran, cfg.hook.timeout_s, err);
  if (code == kExitOk) {
    for (size_t i = 0; i < ran.results.size(); ++i)
      if (ran.results[i].cached.empty()) store.record(selected[i], ran.results[i]);
    if (store.asked_git) checks::remember_tree(store.dir, store.head, store.tree);
    for (const std::string& line :
         also_fixed_lines(store.dir, refs, remote, selected, push_label(git.pushing, git.st->head)))
      err += line + "\n";
  }
  if (code) {
    const bool green = *code == kExitOk;
    log_run(root, "phoenix-hook", remote, refs, run_outcome(*code),
            green ? std::vector<std::string>{git.st->head} : std::vector<std::string>{});
  }
  // Red on a clean HEAD: the full hook takes these results rather than
  // running the checks again (it runs only those after the red one).
  if (!code && !ran.results.empty() && !ran.results.back().ok) hand_measured(root, Measured{git.st->head, ran.results});
  // What the full hook says last, said here too when this is the verdict.
  if (code && git.owner && !git.owner->calls_phoenix) err += "phoenix: warning: " + git.owner->warning + "\n";
  if (!code) hand_lock(std::move(lock));
  return code;
}

}  // namespace phoenix::hook
