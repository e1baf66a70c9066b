#include "setup/guard.h"

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "gitx/repo.h"
#include "layout/paths.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::setup {

// One fingerprint per repository (and exemptions) while any guard of this
// process is alive on it, shared by them all: a guard taken while another
// thread's program has changed the config (two workers' `npm ci` at once)
// would otherwise hold that change as the state to put back.
struct Guard::Shared {
  gitx::RepoGuard fingerprint = gitx::RepoGuard::none();
  std::mutex restoring;
  std::chrono::steady_clock::time_point taken = std::chrono::steady_clock::now();
};

namespace {
// A fingerprint older than this may miss what the user did in their
// checkout meanwhile (a commit, a `git add`): only a program's kind of
// change is put back then.
constexpr std::chrono::seconds kUserWorksAfter{30};
}  // namespace

namespace {

std::mutex registry_mu;
std::map<std::string, std::weak_ptr<Guard::Shared>>& registry() {
  static std::map<std::string, std::weak_ptr<Guard::Shared>> r;
  return r;
}

std::shared_ptr<Guard::Shared> take(const std::string& tree, const std::vector<std::string>& also_exempt,
                                     bool long_run) {
  std::vector<std::string> exempt = layout::own_ref_prefixes();
  exempt.insert(exempt.end(), also_exempt.begin(), also_exempt.end());
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
    shared->fingerprint = gitx::RepoGuard::take(tree, exempt, /*with_index=*/!long_run);
  } catch (const std::exception& e) {
    std::cerr << "phoenix: warning: the repository of " << tree << " cannot be fingerprinted, so what runs there is "
              << "not guarded: " << e.what() << "\n";
  }
  slot = shared;
  return shared;
}

}  // namespace

Guard::Guard(const std::string& tree, const std::vector<std::string>& also_exempt, bool long_run)
    : shared_(take(tree, also_exempt, long_run)), long_run_(long_run) {}

Guard::~Guard() = default;

std::vector<std::string> Guard::restore(const std::string& who, trace::Trace* trace) const {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(shared_->restoring);
    const bool user_works = long_run_ || std::chrono::steady_clock::now() - shared_->taken > kUserWorksAfter;
    lines = shared_->fingerprint.restore(who, user_works);
  }
  tell_put_back(lines, trace);
  return lines;
}

void tell_put_back(const std::vector<std::string>& lines, trace::Trace* trace) {
  for (const std::string& line : lines) {
    std::cerr << "phoenix: " << line << "\n";
    if (!trace) continue;
    try {
      trace->append("guard.put_back", {{"line", line}});
    } catch (const Error& e) {
      std::cerr << "phoenix: warning: the trace was not written: " << e.what() << "\n";
    }
  }
  std::cerr.flush();
}

}  // namespace phoenix::setup
