#include "setup/guard.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "gitx/confine.h"
#include "gitx/guard.h"
#include "gitx/repo.h"
#include "layout/paths.h"
#include "trace/events.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/json.h"
#include "util/overlay.h"
#include "util/subprocess.h"

namespace phoenix::setup {

// One fingerprint per repository (and exemptions) while any guard of this
// process is alive on it, shared by them all (see guard.h).
struct Guard::Shared {
  gitx::RepoGuard fingerprint = gitx::RepoGuard::none();
  std::mutex restoring;
};

// The confinement of one tree while the guard is alive: the plan, the
// registration that puts every program started there under it, and the
// layers of the programs that ended, to be read back. A program that ends
// after the guard is gone (a server left running) removes its own layers.
struct Guard::Confined {
  struct Ended {
    std::mutex mu;
    bool guard_gone = false;
    std::vector<std::string> layers;  // folders of programs that ended
    std::vector<std::string> failed;  // programs that ran unconfined, and why
  };
  gitx::TreeConfinement plan;
  std::vector<std::string> exempt;
  std::shared_ptr<Ended> ended = std::make_shared<Ended>();
  std::unique_ptr<util::ConfinedFolder> folder;

  Confined(gitx::TreeConfinement p, std::vector<std::string> ex) : plan(std::move(p)), exempt(std::move(ex)) {}

  std::optional<util::ConfinedChild> make() {
    std::string layers;
    try {
      util::ConfinedChild c;
      c.ns = plan.child(layers);
      c.ended = [e = ended, layers] {
        std::lock_guard<std::mutex> lock(e->mu);
        if (!e->guard_gone) {
          e->layers.push_back(layers);
          return;
        }
        util::make_tree_writable(layers);
        std::error_code ec;
        std::filesystem::remove_all(layers, ec);
      };
      return c;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(ended->mu);
      if (!layers.empty()) ended->layers.push_back(layers);
      ended->failed.push_back(e.what());
      return std::nullopt;
    }
  }

  // Reads back every program that ended since the last call.
  gitx::TreeConfinement::Found take(const std::string& who) const {
    std::vector<std::string> layers, why;
    {
      std::lock_guard<std::mutex> lock(ended->mu);
      layers.swap(ended->layers);
      why.swap(ended->failed);
    }
    gitx::TreeConfinement::Found all;
    for (const std::string& w : why)
      all.repository.push_back(who + " ran unconfined in " + plan.tree() + " (" + w + ")");
    for (const std::string& l : layers) {
      gitx::TreeConfinement::Found f = plan.read_back(l, who, exempt);
      all.repository.insert(all.repository.end(), f.repository.begin(), f.repository.end());
      all.checkouts.insert(all.checkouts.end(), f.checkouts.begin(), f.checkouts.end());
    }
    return all;
  }

  ~Confined() {
    folder.reset();  // no program starts under it any more
    std::vector<std::string> left;
    {
      std::lock_guard<std::mutex> lock(ended->mu);
      ended->guard_gone = true;
      left.swap(ended->layers);
    }
    for (const std::string& l : left) {
      util::make_tree_writable(l);
      std::error_code ec;
      std::filesystem::remove_all(l, ec);
    }
  }
};

namespace {

const std::string kLeft = ": left as it is";

std::mutex registry_mu;
std::map<std::string, std::weak_ptr<Guard::Shared>>& registry() {
  static std::map<std::string, std::weak_ptr<Guard::Shared>> r;
  return r;
}

std::vector<std::string> exemptions(const std::vector<std::string>& also_exempt) {
  std::vector<std::string> exempt = layout::own_ref_prefixes();
  exempt.insert(exempt.end(), also_exempt.begin(), also_exempt.end());
  return exempt;
}

std::shared_ptr<Guard::Shared> take_shared(const std::string& tree, const std::vector<std::string>& exempt) {
  auto shared = std::make_shared<Guard::Shared>();
  std::string common;
  try {
    common = gitx::Repo::open(tree).common_dir();
  } catch (const std::exception&) {
    return shared;  // not a repository: nothing to guard
  }
  std::string key = common;
  for (const std::string& e : exempt) key += '\n' + e;
  std::lock_guard<std::mutex> lock(registry_mu);
  auto& slot = registry()[key];
  if (auto alive = slot.lock()) return alive;
  try {
    shared->fingerprint = gitx::RepoGuard::take(tree, exempt);
  } catch (const std::exception& e) {
    std::cerr << "phoenix: warning: the repository of " << tree << " cannot be fingerprinted, so what runs there is "
              << "not guarded: " << e.what() << "\n";
  }
  slot = shared;
  return shared;
}

bool confinement_off() {
  const char* v = std::getenv("PHOENIX_CONFINE");
  return v && std::string(v) == "0";
}

// Said once per process: the kernel's reason is the same for every tree.
void say_unconfined_once(const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "phoenix: warning: what Phoenix runs in its own trees cannot be confined here (" << why
              << "): a change it makes to the repository's config or hooks is put back afterwards, and one to refs "
                 "or another checkout is only said\n";
  });
}

// The plan for what runs in `tree` (or `runs_in`) when it can be
// confined; nothing (and the reason said once when it is the system's)
// otherwise. A tree that is not a linked worktree (the user's own
// checkout) is not confined, nor a folder that is not a repository.
std::optional<gitx::TreeConfinement> plan_for(const std::string& tree, const std::string& runs_in) {
  if (confinement_off()) return std::nullopt;
  try {
    const gitx::Repo r = gitx::Repo::open(tree);
    if (runs_in.empty() && r.git_dir() == r.common_dir()) return std::nullopt;
  } catch (const std::exception&) { return std::nullopt; }
  try {
    return gitx::TreeConfinement::plan(tree, runs_in);
  } catch (const std::exception& e) {
    say_unconfined_once(e.what());
    return std::nullopt;
  }
}

}  // namespace

Guard::Guard(const std::string& tree, const std::vector<std::string>& also_exempt, const std::string& runs_in) {
  const std::vector<std::string> exempt = exemptions(also_exempt);
  if (std::optional<gitx::TreeConfinement> plan = plan_for(tree, runs_in)) {
    confined_ = std::make_unique<Confined>(std::move(*plan), exempt);
    // Taken before any program starts: what moves meanwhile is said.
    shared_ = std::make_shared<Shared>();
    shared_->fingerprint = gitx::RepoGuard::take(tree, exempt);
    Confined* c = confined_.get();
    c->folder = std::make_unique<util::ConfinedFolder>(runs_in.empty() ? tree : runs_in, [c] { return c->make(); });
    return;
  }
  shared_ = take_shared(tree, exempt);
}

Guard::~Guard() = default;

bool Guard::confined() const { return confined_ != nullptr; }

std::vector<std::string> Guard::restore(const std::string& who, trace::Trace* trace,
                                        std::vector<std::string>* wrote_elsewhere) const {
  std::vector<std::string> lines;
  if (confined_) {
    gitx::TreeConfinement::Found f = confined_->take(who);
    lines = std::move(f.repository);
    lines.insert(lines.end(), f.checkouts.begin(), f.checkouts.end());
    if (wrote_elsewhere) wrote_elsewhere->insert(wrote_elsewhere->end(), f.checkouts.begin(), f.checkouts.end());
  }
  {
    std::lock_guard<std::mutex> lock(shared_->restoring);
    for (std::string& l : shared_->fingerprint.restore(who, confined_ != nullptr)) {
      // What is left as it is stays different from the fingerprint: said
      // once, not after every step.
      const bool left = left_as_it_is(l);
      if (left && !said_.insert(l.substr(0, l.find(" while "))).second) continue;
      lines.push_back(std::move(l));
    }
  }
  tell_put_back(lines, trace);
  return lines;
}

bool left_as_it_is(const std::string& line) {
  return line.size() >= kLeft.size() && line.compare(line.size() - kLeft.size(), kLeft.size(), kLeft) == 0;
}

void tell_put_back(const std::vector<std::string>& lines, trace::Trace* trace) {
  for (const std::string& line : lines) {
    std::cerr << "phoenix: " << line << "\n";
    if (!trace) continue;
    try {
      trace->append(trace::event::kGuardPutBack, {{"line", line}});
    } catch (const Error& e) { std::cerr << "phoenix: warning: the trace was not written: " << e.what() << "\n"; }
  }
  std::cerr.flush();
}

}  // namespace phoenix::setup
