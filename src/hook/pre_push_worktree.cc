// The hook's worktrees, where a pushed commit that is not a clean HEAD is
// measured with the phoenix.json it carries (hook/pre_push.h).
#include "hook/pre_push.h"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "gitx/worktree.h"
#include "setup/setup.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::hook::pre_push {

namespace fs = std::filesystem;

namespace {

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

}  // namespace

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
  dir = gitx::prepare_worktree(repo(), layout::worktree_git_name(name), layout::worktree_path(repo(), name), t.commit,
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

}  // namespace phoenix::hook::pre_push
