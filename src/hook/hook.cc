#include "hook/hook.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "checks/check.h"
#include "config/config.h"
#include "engine/cycle.h"
#include "engine/measure.h"
#include "engine/selection.h"
#include "engine/verdict.h"
#include "hook/fixed.h"
#include "engine/session.h"
#include "engine/timeline.h"
#include "gitx/repo.h"
#include "gitx/worktree.h"
#include "hook/runs.h"
#include "layout/layout.h"
#include "layout/trees.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/lock.h"
#include "util/signals.h"
#include "util/term.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::hook {

namespace fs = std::filesystem;
using util::Json;

// ---------------------------------------------------------------------------
// The shim

namespace {

constexpr std::string_view kPhoenixPlaceholder = "@PHOENIX@";
constexpr std::string_view kSuffixPlaceholder = "@CHAINED_SUFFIX@";

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

using util::replace_all;

// The inverse of sh_quote for one word as sh_quote writes it.
std::string sh_unquote(std::string_view s) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'') {
      quoted = !quoted;
    } else if (c == '\\' && !quoted && i + 1 < s.size()) {
      out += s[++i];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_shim(std::string_view tmpl, const std::string& phoenix_bin) {
  if (!is_shim(tmpl)) throw Error("the pre-push template lacks its marker line '" + std::string(kShimMarker) + "'");
  if (tmpl.find(kPhoenixPlaceholder) == std::string_view::npos ||
      tmpl.find(kSuffixPlaceholder) == std::string_view::npos)
    throw Error("the pre-push template lacks " + std::string(kPhoenixPlaceholder) + " or " +
                std::string(kSuffixPlaceholder));
  std::string text = replace_all(std::string(tmpl), kPhoenixPlaceholder, sh_quote(phoenix_bin));
  return replace_all(std::move(text), kSuffixPlaceholder, layout::kChainedHookSuffix);
}

bool shebang_safe(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.size() > kMaxShebangPath) return false;
  return std::none_of(path.begin(), path.end(),
                      [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == '\x7f'; });
}

std::string program_copy_path(const std::string& hooks_dir) {
  return (fs::path(hooks_dir) / "pre-push.phoenix-hook").string();
}

std::string render_direct_shim(std::string_view tmpl, const std::string& program, const std::string& source) {
  if (!is_shim(tmpl)) throw Error("the pre-push template lacks its marker line '" + std::string(kShimMarker) + "'");
  if (!util::starts_with(tmpl, "#!@PHOENIX_HOOK@\n") || tmpl.find("@PHOENIX_HOOK_SOURCE@") == std::string_view::npos ||
      tmpl.find(kPhoenixPlaceholder) == std::string_view::npos)
    throw Error("the direct pre-push template lacks #!@PHOENIX_HOOK@ on its first line, @PHOENIX_HOOK_SOURCE@ or " +
                std::string(kPhoenixPlaceholder));
  if (!shebang_safe(program))
    throw Error("cannot name " + program + " on a hook's #! line (it needs an absolute path of at most " +
                std::to_string(kMaxShebangPath) + " bytes without blanks)");
  std::string text = replace_all(std::string(tmpl), "@PHOENIX_HOOK_SOURCE@", source);
  text = replace_all(std::move(text), "@PHOENIX_HOOK@", program);
  text = replace_all(std::move(text), kPhoenixPlaceholder, (fs::path(source).parent_path() / "phoenix").string());
  return replace_all(std::move(text), kSuffixPlaceholder, layout::kChainedHookSuffix);
}

std::string shim_binary(std::string_view content) {
  if (!is_shim(content)) return "";
  if (!shim_interpreter(content).empty()) {
    const std::string source = shim_program_source(content);
    return source.empty() ? "" : (fs::path(source).parent_path() / "phoenix").string();
  }
  for (const auto& line : util::split_lines(content))
    if (util::starts_with(line, "PHOENIX=")) return sh_unquote(std::string_view(line).substr(8));
  return "";
}

// ---------------------------------------------------------------------------
// Install / uninstall

namespace {

bool exists_no_follow(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// A regular file (not a symlink) holding a shim.
bool holds_shim(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec))) return false;
  try {
    return is_shim(util::read_file(p.string()));
  } catch (const Error&) { return false; }
}

// The copy of phoenix-hook a direct shim ran, once nothing names it.
void remove_program_copy(const std::string& hooks_dir) {
  const std::string copy = program_copy_path(hooks_dir);
  if (std::remove(copy.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove " + copy);
}

void rename_durably(const fs::path& from, const fs::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) throw_errno("cannot rename " + from.string() + " to " + to.string());
  util::fsync_dir(to.parent_path().string());
}

}  // namespace

bool refresh_program(const std::string& source, const std::string& program) {
  if (program_is_current(program, source)) return false;
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) throw_errno("cannot read " + source);
  // A hard link where the kernel allows one (same file system, and a file
  // of the user's own: protected_hardlinks) costs no space and keeps the
  // file alive when the source's name goes; a file replaced under that name
  // (an upgrade, a rebuild) is a new one, so the link is then stale as a
  // copy would be. Elsewhere, a copy.
  const std::string tmp = program + ".tmp." + std::to_string(::getpid());
  std::remove(tmp.c_str());
  if (::link(source.c_str(), tmp.c_str()) == 0) {
    try {
      rename_durably(tmp, program);
    } catch (const Error&) {
      std::remove(tmp.c_str());
      throw;
    }
    return true;
  }
  util::write_file_atomic(program, util::read_file(source), 0755);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::utimensat(AT_FDCWD, program.c_str(), times, 0) != 0) throw_errno("cannot set the time of " + program);
  return true;
}

bool chains(const std::string& hooks_dir) {
  const fs::path hook = fs::path(hooks_dir) / "pre-push";
  const fs::path chained = fs::path(hooks_dir) / ("pre-push" + std::string(layout::kChainedHookSuffix));
  return exists_no_follow(chained) || (exists_no_follow(hook) && !holds_shim(hook));
}

InstallResult install(const std::string& hooks_dir, const std::string& shim) {
  std::error_code ec;
  fs::create_directories(hooks_dir, ec);
  if (ec) throw Error("cannot create the hooks folder " + hooks_dir + ": " + ec.message());
  const fs::path hook = fs::path(hooks_dir) / "pre-push";
  const fs::path chained = fs::path(hooks_dir) / ("pre-push" + std::string(layout::kChainedHookSuffix));
  InstallResult out;
  out.hook = hook.string();
  // A direct shim's program is there before the shim names it; only the
  // shell shim runs a chained hook.
  const std::string program = shim_interpreter(shim);
  if (!program.empty() && chains(hooks_dir))
    throw Error("a pre-push hook that is not Phoenix's is in " + hooks_dir + ": only the shell shim runs it first");
  const bool copied = !program.empty() && refresh_program(shim_program_source(shim), program);
  if (holds_shim(hook)) {
    struct stat st {};
    bool executable = ::stat(hook.c_str(), &st) == 0 && (st.st_mode & 0111) == 0111;
    out.action = util::read_file(hook.string()) == shim && executable && !copied ? "unchanged" : "updated";
    if (out.action == "updated") util::write_file_atomic(hook.string(), shim, 0755);
  } else {
    if (exists_no_follow(hook)) {
      if (fs::is_directory(fs::symlink_status(hook, ec)))
        throw Error(hook.string() + " is a folder, not a hook; move it away and install again");
      if (exists_no_follow(chained))
        throw Error(hook.string() + " is not Phoenix's hook, and " + chained.string() +
                    " (the hook kept when Phoenix was installed) is there too; keeping one of them is a person's "
                    "choice: remove or rename one, then install again");
      // A rename keeps the earlier hook exactly: bytes, mode, owner, and a
      // symlink stays a symlink (pointing where it pointed).
      rename_durably(hook, chained);
    }
    util::write_file_atomic(hook.string(), shim, 0755);
    out.action = "installed";
  }
  // A shell shim replacing a direct one leaves no copy behind.
  if (program.empty()) remove_program_copy(hooks_dir);
  if (exists_no_follow(chained)) out.chained = chained.string();
  return out;
}

UninstallResult uninstall(const std::string& hooks_dir) {
  const fs::path hook = fs::path(hooks_dir) / "pre-push";
  const fs::path chained = fs::path(hooks_dir) / ("pre-push" + std::string(layout::kChainedHookSuffix));
  UninstallResult out;
  out.hook = hook.string();
  if (!holds_shim(hook)) {
    out.action = "absent";
    return out;
  }
  if (exists_no_follow(chained)) {
    rename_durably(chained, hook);  // replaces the shim in one step
    out.action = "restored";
  } else {
    if (std::remove(hook.c_str()) != 0) throw_errno("cannot remove " + hook.string());
    util::fsync_dir(hooks_dir);
    out.action = "removed";
  }
  remove_program_copy(hooks_dir);
  return out;
}

// ---------------------------------------------------------------------------
// The run

namespace {

using Clock = std::chrono::steady_clock;

// One commit being pushed: the sha git gave (a tag object for an annotated
// tag), the commit it names, and the local refs that push it.
struct Target {
  std::string commit;
  std::vector<const PushedRef*> refs;
  std::string label() const { return push_label(refs, commit); }
};

// The hook's own persistent worktrees, outside the work tree
// (layout::worktree_path): "hook", "hook-2" ... (kMaxHookTrees; git names
// "phoenix-hook" ...), where a pushed commit that is not a clean HEAD is
// measured: moved to that commit by an incremental checkout (only files
// that differ are written), cleaned before use, recreated when found
// damaged (gitx/worktree.h). A hook run holds the lock of the one it uses
// (layout/trees.h) until it ends, so hooks of two checkouts of one
// repository pushing at once never share one.
std::string hook_tree_name(size_t i) { return layout::numbered_tree("hook", i); }
layout::TreeFamily hook_trees() { return {"hook", kMaxHookTrees, hook_tree_name}; }

// Earlier versions kept one tree per checkout, "phoenix-hook-<8 hex>",
// never locked: removed once the new trees are in use.
std::vector<std::string> remove_old_hook_trees(gitx::Repo& repo) {
  std::vector<std::string> done;
  for (const gitx::WorktreeInfo& w : repo.worktree_list()) {
    if (!util::starts_with(w.name, "phoenix-hook-") || w.name.size() != 21 || w.locked) continue;
    if (w.name.find_first_not_of("0123456789abcdef", 13) != std::string::npos) continue;
    repo.worktree_remove(w.name);
    std::error_code ec;
    fs::remove(layout::setup_stamp(repo, w.name), ec);
    done.push_back("removed the old hook worktree " + w.path);
  }
  return done;
}

// A red check of a pushed commit, and its verdict (engine/verdict.h): the
// push is blocked only by failures it brings, judged against the remote's
// tip (`reference`, "" when there is none to judge against).
struct Red {
  const Target* target;
  checks::SenseResult result;
  checks::CheckSpec spec;
  engine::Verdict verdict;
  std::string reference;         // the commit the push is judged against
  std::string reference_label;   // "origin/main", "where it forks from origin/main"
  bool reference_known = false;  // the store said what failed there
};

// One `phoenix hook run pre-push`: its steps, and what they hand each other.
// A step that ends the run returns its exit code; nullopt goes on.
class PrePush {
 public:
  PrePush(const PrePushOptions& opt, const std::vector<PushedRef>& refs, std::ostream& err)
      : opt_(opt), refs_(refs), err_(err), start_(Clock::now()) {}

  int run() {
    handed_ = take_measured();
    if (auto code = load_config()) return *code;
    if (auto code = take_lock()) return *code;
    forget_git_location_env();
    read_head();
    notice_skipped();
    find_targets();
    for (const auto& t : targets_)
      if (auto code = measure(t)) return *code;
    if (auto code = verify_skipped()) return *code;
    if (auto code = judge_against_references()) return *code;
    let_by();
    if (reds_.empty()) {
      // The common case stays cheap: a green push of HEAD in place leaves no
      // trace entry (an fsynced append on every push); a worktree run does.
      if (used_worktree_) trace_outcome("green");
      return kExitOk;
    }
    if (cfg_.hook.mode != "heal") return block();
    return heal();
  }

 private:
  std::optional<int> load_config();
  std::optional<int> take_lock();
  void notice_skipped();
  std::optional<int> verify_skipped();

 public:
  // This run's line in .phoenix/hook-runs.jsonl (hook/runs.h), once it ended
  // with `code`; an allowed push of a ref clears what was noticed on it.
  void log_run(int code);

 private:
  void read_head();
  void find_targets();
  std::optional<int> measure(const Target& t);
  std::optional<int> commit_config(const Target& t, std::optional<config::Config>& out);
  std::optional<int> enter_worktree(const Target& t, const config::Config& cfg, std::string& dir);
  std::optional<int> take_tree();
  Red judged(const Target& t, const checks::CheckSpec& spec, const checks::SenseResult& r, const std::string& dir);
  void reference_of(const Target& t, Red& red);
  void note_measured(const Target& t, const checks::SenseResult& r, bool in_place, bool by_thin);
  void say_fixed(const Target& t, const std::vector<checks::CheckSpec>& selected, const engine::StoreUse& store);
  std::optional<int> judge_against_references();
  void let_by();
  int block();
  int heal();
  int heal_head(int code);
  void judged_for_heal(engine::RunOptions& run) const;
  std::string why_not_healable(const Target& t);
  void trace_outcome(const std::string& outcome);
  void trace_put_back(const std::vector<std::string>& lines);

  gitx::Repo& repo() {
    if (!repo_) repo_.emplace(gitx::Repo::open(opt_.root));
    return *repo_;
  }
  // Asked only when a pushed commit is HEAD.
  bool is_clean() {
    if (!clean_) clean_ = repo().is_clean(layout::keep_prefixes());
    return *clean_;
  }
  std::string blocked_line(const Red& r) const {
    std::string line = r.result.id + " is red in " + r.target->label();
    const engine::Verdict& v = r.verdict;
    if (!v.whole && !v.new_failures.empty())
      line += ": " +
              util::plural(static_cast<long long>(v.new_failures.size()), "new failing test", "new failing tests") +
              " (" + util::join_argv(v.new_failures) + ")";
    if (!v.let_by().empty()) line += "; let by: " + v.let_by() + " on " + r.reference_label;
    return line;
  }

  const PrePushOptions& opt_;
  const std::vector<PushedRef>& refs_;
  std::ostream& err_;
  const Clock::time_point start_;
  config::Config cfg_;
  std::vector<checks::CheckSpec> selected_;
  std::optional<Deadline> deadline_;
  std::unique_ptr<util::FileLock> lock_;
  std::optional<gitx::Repo> repo_;
  std::string head_;
  std::string head_branch_;
  std::optional<bool> clean_;
  std::vector<Target> targets_;
  std::vector<std::string> skipped_;  // remote ends a skipped push left unmeasured, for hook.verify_skipped
  std::vector<Red> reds_;             // the red checks whose failures the push brings
  std::vector<Red> let_by_;           // red checks whose failures were there before, or are flaky
  Json measured_ = Json::array();
  bool used_worktree_ = false;
  std::optional<layout::HeldTree> tree_;  // the hook tree this run holds, once it needs one
  // phoenix-hook's results for a clean HEAD, when it handed over at a red
  // check (take_measured): taken instead of running those checks again.
  std::optional<Measured> handed_;
  // Every result for HEAD measured in place: a heal starts from them.
  std::vector<checks::SenseResult> head_results_;
};

std::optional<int> PrePush::load_config() {
  try {
    cfg_ = config::load(opt_.root, false);
  } catch (const ConfigError& e) {
    err_ << "phoenix: error: " << e.what() << "\n"
         << "phoenix: push blocked until phoenix.json loads ('PHOENIX_SKIP=1 git push' skips the check once)\n";
    return kExitConfig;
  }
  if (cfg_.path.empty()) {
    err_ << "phoenix: warning: no phoenix.json in " << opt_.root
         << ": nothing measured, push allowed (run 'phoenix init')\n";
    return kExitOk;
  }
  if (commits_to_measure(refs_).empty()) return kExitOk;  // only deletions
  selected_ = hook_checks(cfg_);
  if (selected_.empty()) {
    err_ << "phoenix: warning: phoenix.json has no checks: nothing measured, push allowed\n";
    return kExitOk;
  }
  deadline_.emplace(start_, cfg_.hook.timeout_s);
  return std::nullopt;
}

std::optional<int> PrePush::take_lock() {
  layout::ensure_state_dir(opt_.root);
  try {
    lock_ = lock_repository(opt_.root);
  } catch (const Error&) {
    long pid = util::FileLock::holder_pid(layout::lock_file(opt_.root));
    if (pid <= 0) throw;  // not a holder: the lock file itself is the problem, and the error says why
    err_ << "phoenix: another Phoenix run (pid " << pid << ") holds this repository; push blocked (try again when it "
         << "ends, or skip once with PHOENIX_SKIP=1)\n";
    return kExitRed;
  }
  return std::nullopt;
}

// The green path — every pushed commit is HEAD, the tree is clean — is
// decided by one `git status`, the scan git itself would make, and libgit2
// (whose start-up alone parses the system's CA bundle) is opened only when
// something else is needed.
void PrePush::read_head() {
  const std::optional<HeadState> fast = head_state_from_git(opt_.root);
  head_ = fast ? fast->head : repo().head_sha();
  head_branch_ = head_.empty() ? "" : fast ? fast->branch : repo().head_branch();
  if (fast && fast->clean) clean_ = true;  // a dirty verdict is left to libgit2, which knows keep_prefixes' exact rules
}

// Annotated tags name tag objects: measure the commit they point to, once.
void PrePush::find_targets() {
  for (const auto& r : refs_) {
    if (r.deletion()) continue;
    std::string commit;
    try {
      commit = !head_.empty() && r.local_sha == head_ ? head_ : repo().resolve(r.local_sha);
    } catch (const Error&) {
      err_ << "phoenix: " << r.local_ref << " (" << util::sha12(r.local_sha)
           << ") does not name a commit: not measured\n";
      continue;
    }
    auto it = std::find_if(targets_.begin(), targets_.end(), [&](const Target& t) { return t.commit == commit; });
    if (it == targets_.end()) targets_.push_back({commit, {&r}});
    else it->refs.push_back(&r);
  }
}

// Every selected check on one commit: in place when it is a clean HEAD,
// else in the hook's worktree.
std::optional<int> PrePush::measure(const Target& t) {
  const bool in_place = t.commit == head_ && is_clean();
  std::string dir = opt_.root;
  // In place, the work tree's phoenix.json is HEAD's; elsewhere the commit
  // is measured by the phoenix.json it carries.
  std::optional<config::Config> own;
  if (!in_place)
    if (auto code = commit_config(t, own)) return code;
  const config::Config& cfg = own ? *own : cfg_;
  const std::vector<checks::CheckSpec> selected = own ? hook_checks(*own) : selected_;
  if (selected.empty()) {
    err_ << "phoenix: warning: the phoenix.json of " << t.label() << " has no checks: nothing measured there\n";
    return std::nullopt;
  }
  if (!in_place)
    if (auto code = enter_worktree(t, cfg, dir)) return code;
  const std::string where = t.label() + (in_place ? "" : " (in the hook's worktree)");
  std::optional<gitx::Repo> tree_repo;
  if (!in_place) tree_repo.emplace(gitx::Repo::open(dir));
  engine::StoreUse store(in_place ? repo() : *tree_repo, dir, cfg, "hook", !engine::no_cache(opt_.no_cache),
                         &opt_.trace());
  for (const auto& spec : selected) {
    std::optional<checks::CheckSpec> capped = deadline_->cap(spec);
    if (!capped) {
      print_out_of_time(err_, cfg_.hook.timeout_s, spec.id, t.label());
      return kExitRed;
    }
    // The hook's worktree shares the user's config, hooks and refs: what a
    // check changes there is put back (setup/guard.h).
    const checks::SenseResult* given =
        in_place && handed_ && handed_->commit == t.commit ? handed_->find(spec.id) : nullptr;
    checks::SenseResult r;
    if (given) {
      r = *given;
      if (!r.ok) store.record(spec, r);  // the tree's failing set, for the pushes that follow
    } else {
      std::optional<setup::Guard> guard;
      if (!in_place) guard.emplace(dir);
      r = store.sense(spec, [&] { return checks::sense(*capped, dir); });
      if (guard) trace_put_back(guard->restore("the check " + spec.id));
    }
    if (r.interrupted || util::interrupted_signal() != 0) {
      print_interrupted(err_);
      return kExitInterrupted;
    }
    print_result(err_, opt_.color, r, where);
    note_measured(t, r, in_place, given != nullptr);
    if (in_place && t.commit == head_) head_results_.push_back(r);
    if (!r.ok) {
      reds_.push_back(judged(t, *capped, r, dir));
      store.judged(spec, reds_.back().verdict);
    }
  }
  say_fixed(t, selected, store);
  return std::nullopt;
}

// One measurement of `t` for the trace and hook-runs.jsonl (`by_thin`:
// phoenix-hook measured it and handed it over).
void PrePush::note_measured(const Target& t, const checks::SenseResult& r, bool in_place, bool by_thin) {
  measured_.push_back({{"commit", t.commit},
                       {"check", r.id},
                       {"ok", r.ok},
                       {"signal", r.signal},
                       {"in_place", in_place},
                       {"duration_ms", r.duration_ms}});
  if (by_thin) measured_.back()["by"] = "phoenix-hook";
}

// A red check of `t` measured in `dir`: its new failing tests run again
// there (alone where its runner can select them); a pass makes one flaky.
Red PrePush::judged(const Target& t, const checks::CheckSpec& spec, const checks::SenseResult& r,
                    const std::string& dir) {
  Red red{&t, r, spec, engine::first_verdict(spec, r), "", "", false};
  if (t.refs.empty()) return red;  // a commit measured to be named (hook.verify_skipped), not pushed
  reference_of(t, red);
  if (!red.reference.empty()) {
    // What the store knows of the remote's tip costs nothing: first.
    try {
      engine::StoreUse store(repo(), opt_.root, cfg_, "hook", false, nullptr);
      if (auto f = store.reference(spec, repo().tree_of(red.reference))) {
        engine::against(red.verdict, *f, red.reference_label);
        red.reference_known = true;
      }
    } catch (const Error&) {}  // the tip is not here (not fetched): nothing known of it
  }
  std::optional<setup::Guard> guard;
  if (dir != opt_.root) guard.emplace(dir);
  engine::rerun(red.verdict, spec, r, cfg_.flaky_reruns, [&](const checks::CheckSpec& c) {
    std::optional<checks::CheckSpec> capped = deadline_->cap(c);
    return capped ? checks::sense(*capped, dir) : checks::SenseResult{};
  });
  if (guard) trace_put_back(guard->restore("a re-run of " + spec.id));
  return red;
}

// The checks of `selected` green in `t` that the store knows red on the
// remote's tip: the push fixes them, and says so (hook/fixed.h).
void PrePush::say_fixed(const Target& t, const std::vector<checks::CheckSpec>& selected,
                        const engine::StoreUse& store) {
  std::vector<checks::CheckSpec> green;
  for (const auto& spec : selected)
    if (std::none_of(reds_.begin(), reds_.end(),
                     [&](const Red& r) { return r.target == &t && r.result.id == spec.id; }))
      green.push_back(spec);
  std::vector<PushedRef> refs;
  for (const PushedRef* r : t.refs) refs.push_back(*r);
  for (const std::string& line : also_fixed_lines(store.dir(), refs, opt_.remote, green, t.label())) {
    err_ << line << "\n";
    if (opt_.trace) opt_.trace().append("hook.also_fixed", {{"commit", t.commit}, {"line", line}});
  }
}

// The commit a push of `t` is judged against: the remote end of the ref it
// updates; for a new branch, where it forks from the remote's default
// branch. None when run by hand (no remote) or when git cannot say.
void PrePush::reference_of(const Target& t, Red& red) {
  if (opt_.remote.empty()) return;
  for (const PushedRef* r : t.refs) {
    if (!r->creation()) {
      red.reference = r->remote_sha;
      const bool branch = util::starts_with(r->remote_ref, "refs/heads/");
      red.reference_label = opt_.remote + "/" + (branch ? r->remote_ref.substr(11) : r->remote_ref);
      return;
    }
  }
  for (const std::string name : {"HEAD", "main", "master"}) {
    try {
      const std::optional<std::string> tip = repo().read_ref("refs/remotes/" + opt_.remote + "/" + name);
      if (!tip) continue;
      const std::string base = repo().merge_base(t.commit, *tip);
      if (base.empty()) return;
      red.reference = base;
      red.reference_label = "where it forks from " + opt_.remote + (name == "HEAD" ? "" : "/" + name);
      return;
    } catch (const Error&) {}
  }
}

// The new failures the store could not place are measured at the
// reference, in the hook's worktree, those tests alone (where the runner
// cannot select them, they stay the push's): what fails there too was
// there before the push.
std::optional<int> PrePush::judge_against_references() {
  for (Red& red : reds_) {
    engine::Verdict& v = red.verdict;
    if (!v.counts() || red.reference.empty() || red.reference_known) continue;
    // Only the failing tests, alone: a check whose failures cannot be named
    // or selected would cost a whole run at the tip (its store record, when
    // there is one, said what it could).
    if (v.whole || !engine::select_tests(red.spec, v.new_failures, red.result.output).ok()) continue;
    try {
      repo().tree_of(red.reference);  // the commit is here (fetched)
    } catch (const Error&) { continue; }
    const Target ref{red.reference, {}};
    std::string dir;
    if (auto code = enter_worktree(ref, cfg_, dir)) return code;
    err_ << "phoenix: measuring " << red.spec.id << "'s failing tests on " << red.reference_label << " ("
         << util::sha12(red.reference) << ")\n";
    std::optional<setup::Guard> guard;
    guard.emplace(dir);
    engine::measure_reference(v, red.spec, red.result, [&](const checks::CheckSpec& c) {
      std::optional<checks::CheckSpec> capped = deadline_->cap(c);
      return capped ? checks::sense(*capped, dir) : checks::SenseResult{};
    });
    trace_put_back(guard->restore("the check " + red.spec.id + " on " + red.reference_label));
    if (util::interrupted_signal() != 0) {
      print_interrupted(err_);
      return kExitInterrupted;
    }
  }
  return std::nullopt;
}

// Red checks whose failures the push did not bring are let by, and said;
// what the push fixed is said too.
void PrePush::let_by() {
  std::vector<Red> counting;
  for (Red& red : reds_) {
    engine::sign(red.verdict, red.result);
    const engine::Verdict& v = red.verdict;
    if (opt_.trace) {
      Json ev = v.to_json();
      ev["commit"] = red.target->commit;
      ev["reference"] = red.reference;
      opt_.trace().append("hook.verdict", ev);
    }
    if (!v.flaky.empty()) {
      std::string tree;
      try {
        tree = repo().tree_of(red.target->commit);
      } catch (const Error&) {}
      engine::note_flakes(layout::journal_file(opt_.root), v, tree,
                          [&](const std::string& line) { err_ << "phoenix: warning: " << line << "\n"; });
    }
    if (!v.fixed.empty())
      err_ << "phoenix: " << red.target->label() << " also fixes " << v.check << " on " << red.reference_label << ": "
           << util::join_argv(v.fixed) << "\n";
    if (v.counts()) {
      counting.push_back(red);
      continue;
    }
    err_ << "phoenix: let by: " << v.check << " in " << red.target->label() << ": " << v.let_by()
         << (v.pre_existing.empty() ? "" : " (pre-existing: failing on " + red.reference_label + " too)")
         << "; not this push's failures\n";
    let_by_.push_back(red);
  }
  reds_ = counting;
}

// Moves the hook's worktree to `t` and sets `dir` to it. The worktree holds
// tracked files only: the project's setup gives it the environment the
// checks need (again only when its inputs changed).
std::optional<int> PrePush::commit_config(const Target& t, std::optional<config::Config>& out) {
  std::string from = t.label();
  std::optional<std::string> text = repo().read_blob_at(t.commit, "phoenix.json");
  if (!text) {
    // Nothing of its own: HEAD's committed one, or the work tree's.
    if (!head_.empty()) text = repo().read_blob_at(head_, "phoenix.json");
    err_ << "phoenix: " << t.label() << " has no phoenix.json: measured with " << (text ? "HEAD's" : "the work tree's")
         << "\n";
    if (!text) return std::nullopt;
    from = "HEAD";
  }
  try {
    out = config::parse(*text, "phoenix.json in " + from);
  } catch (const ConfigError& e) {
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');
    err_ << "phoenix: push blocked: the phoenix.json of " << from << " does not load: " << why << "\n";
    return kExitConfig;
  }
  return std::nullopt;
}

// A hook tree no other run holds, locked until this run ends; when all
// are held, a wait of at most kHookTreeWaitS (never past the hook's own
// timeout) saying for whom, then the push is blocked.
std::optional<int> PrePush::take_tree() {
  const double wait_s = std::min<double>(kHookTreeWaitS, std::max(0.0, deadline_->left_s()));
  const auto until = Clock::now() + std::chrono::milliseconds(static_cast<long long>(wait_s * 1000));
  layout::TakenTrees got = layout::take_trees(repo(), hook_trees(), 1, until,
                                              [&](const std::string& line) { err_ << "phoenix: " << line << "\n"; });
  if (got.held.empty()) {
    err_ << "phoenix: push blocked: no hook tree of this repository was free within " << got.wait_s << " s ("
         << got.holders << "); try again when they end, or skip once with PHOENIX_SKIP=1\n";
    return kExitRed;
  }
  tree_.emplace(std::move(got.held.front()));
  return std::nullopt;
}

std::optional<int> PrePush::enter_worktree(const Target& t, const config::Config& cfg, std::string& dir) {
  if (!tree_) {
    for (const std::string& line : layout::migrate_legacy_trees(repo())) err_ << "phoenix: " << line << "\n";
    if (auto code = take_tree()) return code;
    for (const std::string& line : remove_old_hook_trees(repo())) err_ << "phoenix: " << line << "\n";
  }
  const std::string& name = tree_->name;
  dir = gitx::prepare_worktree(repo(), "phoenix-" + name, layout::worktree_path(repo(), name), t.commit,
                               layout::state_prefixes())
            .path;
  used_worktree_ = true;
  setup::Result su =
      setup::ensure(cfg.setup, dir, layout::setup_stamp(repo(), name), {}, [&](const config::SetupStep& step) {
        err_ << "phoenix: setup in the hook's worktree: " << util::join_argv(step.run) << "\n";
      });
  trace_put_back(su.put_back);
  if (su.interrupted || util::interrupted_signal() != 0) {
    print_interrupted(err_);
    return kExitInterrupted;
  }
  if (!su.ok) {
    err_ << "phoenix: push blocked: " << su.signal << " (in the worktree of " << t.label() << ")\n";
    // Shown as a check's evidence is: the step's own error lines and its end.
    for (const std::string& line : util::split_lines(util::trim(su.evidence)))
      err_ << util::term::paint(opt_.color, "2", "     | ") << line << "\n";
    err_ << "phoenix: fix the setup steps in phoenix.json, or skip once with PHOENIX_SKIP=1\n";
    return kExitRed;
  }
  return std::nullopt;
}

// A remote end no measurement of Phoenix's covers (neither measured green
// nor an ancestor of one), put there by a push from here after the hook was
// installed or had pushed that ref (unexplained_remote_ends: the
// remote-tracking ref's reflog says "update by push"): a push made with
// --no-verify or PHOENIX_SKIP=1. Said on stderr and kept for `phoenix
// status`. A commit a teammate pushed arrives by a fetch and is not named.
void PrePush::notice_skipped() {
  const std::vector<const PushedRef*> odd = unexplained_remote_ends(opt_.root, opt_.remote, refs_);
  if (odd.empty()) return;
  const RunLog log = read_runs(opt_.root);
  for (const PushedRef* r : odd) {
    bool covered = false;
    for (const std::string& g : log.green) {
      try {
        covered = repo().is_ancestor(r->remote_sha, g);
      } catch (const Error&) {}
      if (covered) break;
    }
    if (covered) continue;
    const std::string branch = r->remote_ref.substr(std::string("refs/heads/").size());
    err_ << "phoenix: warning: " << opt_.remote << "/" << branch << " is at " << util::sha12(r->remote_sha)
         << ", pushed from here without Phoenix measuring it (git push --no-verify or PHOENIX_SKIP=1); "
         << "'phoenix run' on that commit measures it\n";
    note_unmeasured_push(opt_.root, opt_.remote, r->remote_ref, r->remote_sha);
    if (std::find(skipped_.begin(), skipped_.end(), r->remote_sha) == skipped_.end()) skipped_.push_back(r->remote_sha);
    if (opt_.trace)
      opt_.trace().append("hook.unmeasured_push",
                          {{"remote", opt_.remote}, {"remote_ref", r->remote_ref}, {"commit", r->remote_sha}});
  }
}

// hook.verify_skipped: each commit a skipped push left on the remote is
// measured now (with its own phoenix.json, in the hook's worktree unless
// it is a clean HEAD), after this push's own commits; a red one is named.
// It is on the remote already, so it does not block this push: this push's
// own commits decide. A green one counts as measured from now on.
std::optional<int> PrePush::verify_skipped() {
  if (!cfg_.hook.verify_skipped) return std::nullopt;
  for (const std::string& commit : skipped_) {
    if (std::any_of(targets_.begin(), targets_.end(), [&](const Target& t) { return t.commit == commit; })) continue;
    err_ << "phoenix: hook.verify_skipped: measuring " << util::sha12(commit) << ", pushed without Phoenix\n";
    const Target skipped{commit, {}};
    const size_t reds_before = reds_.size(), head_before = head_results_.size();
    const std::optional<int> code = measure(skipped);
    std::string red;
    for (size_t i = reds_before; i < reds_.size(); ++i) red += (red.empty() ? "" : ", ") + reds_[i].result.id;
    reds_.resize(reds_before);
    head_results_.resize(head_before);
    if (code == kExitInterrupted) return code;
    if (code) err_ << "phoenix: warning: " << util::sha12(commit) << " (pushed without Phoenix) was not measured\n";
    else if (!red.empty())
      err_ << "phoenix: warning: " << util::sha12(commit) << ", pushed without Phoenix, is red: " << red
           << " ('phoenix run' on that commit heals it)\n";
    if (opt_.trace)
      opt_.trace().append("hook.skipped_push_measured",
                          {{"commit", commit}, {"red", red}, {"measured", !code.has_value()}});
    if (code) break;  // out of time or unloadable: the rest waits for the next run
  }
  return std::nullopt;
}

void PrePush::log_run(int code) {
  std::error_code ec;
  if (!fs::is_directory(layout::state_dir(opt_.root), ec)) return;
  // A commit is measured green when every check measured on it passed, or
  // failed only on what was let by (pre-existing, flaky).
  std::vector<std::string> green, red;
  for (const auto& m : measured_) {
    const std::string c = m.value("commit", "");
    const bool let_by = std::any_of(let_by_.begin(), let_by_.end(), [&](const Red& r) {
      return r.target->commit == c && r.result.id == m.value("check", "");
    });
    if (!m.value("ok", false) && !let_by) red.push_back(c);
    else if (std::find(green.begin(), green.end(), c) == green.end()) green.push_back(c);
  }
  green.erase(std::remove_if(green.begin(), green.end(),
                             [&](const std::string& c) { return std::find(red.begin(), red.end(), c) != red.end(); }),
              green.end());
  hook::log_run(opt_.root, "phoenix", opt_.remote, refs_,
                code == kExitOk            ? "allowed"
                : code == kExitInterrupted ? "interrupted"
                                           : "blocked",
                green);
  if (code == kExitOk)
    for (const auto& r : refs_)
      if (!r.deletion()) clear_unmeasured_pushes(opt_.root, opt_.remote, r.remote_ref);
}

// What setup or a check changed in the user's repository and was put back
// (already said on stderr) goes into the trace too.
void PrePush::trace_put_back(const std::vector<std::string>& lines) {
  if (lines.empty() || !opt_.trace) return;
  for (const std::string& line : lines) opt_.trace().append("guard.put_back", {{"line", line}});
}

void PrePush::trace_outcome(const std::string& outcome) {
  if (!opt_.trace) return;
  Json pushed = Json::array();
  for (const auto& r : refs_)
    pushed.push_back({{"local_ref", r.local_ref}, {"local_sha", r.local_sha}, {"remote_ref", r.remote_ref}});
  opt_.trace().append("hook.pre-push", {{"remote", opt_.remote},
                                        {"refs", pushed},
                                        {"measured", measured_},
                                        {"mode", cfg_.hook.mode},
                                        {"outcome", outcome}});
}

// hook.mode "verify": every red check blocks the push.
int PrePush::block() {
  for (const auto& r : reds_) err_ << "phoenix: push blocked: " << blocked_line(r) << "\n";
  err_ << "phoenix: fix it and push again ('PHOENIX_SKIP=1 git push' skips the check once)\n";
  trace_outcome("blocked");
  return kExitRed;
}

// heal: only in place, on the branch that is checked out (or a detached
// HEAD pushed as HEAD), with no uncommitted change to a tracked file: that
// is where a fix commit lands for the next push. Untracked files do not
// block, as they do not block `phoenix run`. Returns "" when `t` can be
// healed, else why not and what to do.
std::string PrePush::why_not_healable(const Target& t) {
  if (t.commit != head_)
    return "it is not the checked-out commit (check it out and push again, or run 'phoenix run' there)";
  const bool from_head = std::any_of(t.refs.begin(), t.refs.end(), [&](const PushedRef* r) {
    return r->local_ref == "HEAD" || (!head_branch_.empty() && r->local_ref == "refs/heads/" + head_branch_);
  });
  if (!from_head)
    return "it is not pushed from the checked-out branch (push " +
           (head_branch_.empty() ? std::string("HEAD") : head_branch_) + " itself, or run 'phoenix run' there)";
  if (is_clean()) return "";
  std::vector<std::string> dirty;
  for (const gitx::StatusEntry& e : repo().status()) {
    if (e.code == '?') continue;
    const auto& keep = layout::keep_prefixes();
    if (std::any_of(keep.begin(), keep.end(), [&](const std::string& k) { return util::starts_with(e.path, k); }))
      continue;
    dirty.push_back(e.path);
  }
  if (dirty.empty()) return "";  // untracked files only
  std::string named;
  for (size_t i = 0; i < dirty.size() && i < 5; ++i) named += (i ? ", " : "") + dirty[i];
  if (dirty.size() > 5) named += " and " + std::to_string(dirty.size() - 5) + " more";
  return "the work tree has uncommitted changes (" + named + "): commit or stash them, then push again";
}

// hook.mode "heal": a red commit that cannot be healed in place blocks;
// the checked-out one is healed.
int PrePush::heal() {
  bool heal_head_commit = false;
  int code = kExitOk;
  for (const auto& r : reds_) {
    const std::string why = why_not_healable(*r.target);
    if (why.empty()) {
      heal_head_commit = true;
      continue;
    }
    err_ << "phoenix: push blocked: " << blocked_line(r) << "; it cannot be healed in place: " << why << "\n";
    code = kExitRed;
  }
  if (!heal_head_commit) {
    trace_outcome("blocked");
    return code;
  }
  return heal_head(code);
}

// What a heal of HEAD takes from this run's verdicts: the failing sets of
// the remote's tip (what failed there too is not the push's to heal), and
// the verdicts themselves (no test is run again twice).
void PrePush::judged_for_heal(engine::RunOptions& run) const {
  std::map<std::string, engine::FailingSet> reference;
  bool referenced = false;
  for (const std::vector<Red>* list : {&reds_, &let_by_})
    for (const Red& red : *list) {
      if (red.target->commit != head_) continue;
      run.measured_verdicts.push_back(red.verdict);
      if (red.reference.empty()) continue;
      referenced = true;
      const engine::Verdict& v = red.verdict;
      if (v.pre_existing.empty()) continue;
      reference[v.check] = engine::FailingSet{false, v.whole ? std::vector<std::string>{} : v.pre_existing,
                                              v.whole ? v.whole_signature : std::string()};
    }
  if (!referenced) return;
  run.reference = reference;
  run.reference_name = "the remote's tip";
}

// Heals the checked-out commit with the repository's own session. The
// engine takes the repository lock itself (flock is per open file, so
// holding ours would lock it out): ours goes first.
int PrePush::heal_head(int code) {
  lock_.reset();
  tree_.reset();  // measured: another checkout's hook may have it
  config::Config session_cfg = cfg_;
  double left = std::max(1.0, deadline_->left_s());
  for (auto& c : session_cfg.checks) c.timeout_s = std::min(c.timeout_s, left);
  session_cfg.harness.timeout_s = std::min(session_cfg.harness.timeout_s, left);
  engine::SessionOptions so;
  so.run.templates_dir = opt_.templates_dir;
  so.run.max_wait_s = std::min(cfg_.harness.max_wait_s.value_or(config::kDefaultMaxWaitS), left);
  if (!cfg_.hook.checks.empty()) so.run.only = cfg_.hook.checks;
  // The session starts from what was just measured here, not from a
  // measurement of its own: each check runs once before any fixer.
  so.run.measured = head_results_;
  so.run.measured_head = head_;
  so.run.measured_by = "hook";
  so.run.no_cache = opt_.no_cache;
  so.run.tests_must_bite = false;  // a push waits: only checks that ask for it
  judged_for_heal(so.run);
  err_ << "phoenix: hook.mode is heal: healing " << util::sha12(head_) << " on "
       << (head_branch_.empty() ? "HEAD" : head_branch_) << "\n";
  engine::RunResult result = engine::run_session(opt_.root, session_cfg, so, opt_.trace(), [&](const Json& ev) {
    const std::string line = engine::timeline_line(ev, engine::TimelineForm::kHook, false);
    if (!line.empty()) err_ << line << "\n";
  });

  bool healed_any = false;
  for (const auto& i : result.issues) {
    if (i.state == engine::State::kHealed && !i.fix_commit.empty()) {
      err_ << "phoenix: healed " << i.check << " in " << util::sha12(i.fix_commit) << " — push again\n";
      healed_any = true;
    } else if (i.state == engine::State::kEscalated) {
      err_ << "phoenix: " << i.check << " escalated: see " << result.incident << "; push blocked\n";
      if (result.known_good.empty())
        err_ << "phoenix: no known-good commit yet: run `phoenix run` once while green (bisect starts from it)\n";
    } else if (engine::model_unusable(i.state)) {
      err_ << "phoenix: " << result.model_unusable << "; push blocked\n";
    } else if (i.state != engine::State::kHealed) {
      err_ << "phoenix: " << i.check << ": " << i.state << "; push blocked\n";
    }
  }
  if (result.exit_code != kExitOk) code = std::max(code, result.exit_code);
  else if (healed_any) code = std::max(code, static_cast<int>(kExitRed));  // the fix is not in what is being pushed
  else if (result.issues.empty())
    err_ << "phoenix: a fresh run of every check passes at " << util::sha12(head_)
         << " (flaky?); push allowed for it\n";
  trace_outcome(healed_any ? "healed" : code == kExitOk ? "green on re-run" : "blocked");
  return code;
}

}  // namespace

int run_pre_push(const PrePushOptions& opt, const std::vector<PushedRef>& refs, std::ostream& err) {
  PrePush pre_push(opt, refs, err);
  const int code = pre_push.run();
  pre_push.log_run(code);
  // Last, so it is the line people see: checks that silently stopped
  // running are worse than a blocked push.
  if (std::optional<HookOwner> owner = hook_owner_of(opt.root); owner && !owner->calls_phoenix)
    err << "phoenix: warning: " << owner->warning << "\n";
  return code;
}

}  // namespace phoenix::hook
