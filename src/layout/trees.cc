#include "layout/trees.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "layout/layout.h"

namespace phoenix::layout {

std::string numbered_tree(const std::string& base, size_t i) {
  return i == 0 ? base : base + "-" + std::to_string(i + 1);
}

void take_free_trees(const gitx::Repo& repo, const TreeFamily& family, size_t want, std::vector<HeldTree>& held,
                     const SayFn& say) {
  for (size_t i = 0; i < family.max && held.size() < want; ++i) {
    if (std::any_of(held.begin(), held.end(), [i](const HeldTree& h) { return h.index == i; })) continue;
    const std::string name = family.name(i);
    std::unique_ptr<util::FileLock> lock = util::FileLock::try_take(tree_lock(repo, name));
    if (!lock) continue;
    if (!lock->taken_over().empty() && say) say("warning: " + lock->taken_over());
    held.push_back({i, name, std::move(lock)});
  }
}

std::string tree_holders(const gitx::Repo& repo, const TreeFamily& family) {
  std::vector<std::pair<std::string, std::string>> by;  // holder, its trees
  for (size_t i = 0; i < family.max; ++i) {
    const std::string name = family.name(i);
    std::string who = util::FileLock::holder(tree_lock(repo, name));
    if (who.empty()) who = "a process that names itself nowhere";
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& b) { return b.first == who; });
    if (it == by.end()) by.emplace_back(who, name);
    else it->second += ", " + name;
  }
  std::string out;
  for (const auto& [who, trees] : by) out += (out.empty() ? "" : "; ") + trees + " by " + who;
  return out;
}

TakenTrees take_trees(const gitx::Repo& repo, const TreeFamily& family, size_t want,
                      std::chrono::steady_clock::time_point until, const SayFn& say,
                      const std::function<void()>& keep_waiting) {
  using Clock = std::chrono::steady_clock;
  TakenTrees out;
  take_free_trees(repo, family, want, out.held, say);
  if (!out.held.empty()) return out;
  const long long left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  out.wait_s = std::max<long long>(0, (left_ms + 500) / 1000);
  out.holders = tree_holders(repo, family);
  if (say)
    say(family.what + ": all " + std::to_string(family.max) + " " + family.what +
        " trees of this repository are in use (" + out.holders + "); waiting up to " + std::to_string(out.wait_s) +
        " s for one to be free");
  while (out.held.empty() && Clock::now() < until) {
    if (keep_waiting) keep_waiting();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    take_free_trees(repo, family, want, out.held, say);
  }
  if (!out.held.empty() && say) say(family.what + ": " + out.held.front().name + " is free now");
  return out;
}

}  // namespace phoenix::layout
