// util::ConfinedFolder (subprocess.h): the folders whose children start
// in a namespace of their own, and the innermost one holding a working
// directory.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>

#include "util/subprocess.h"

namespace phoenix::util {

namespace {

// The folders whose children are confined (ConfinedFolder), and the
// innermost one holding a working directory. Most processes register none:
// then a child costs one atomic load here.
struct Confinements {
  struct Entry {
    unsigned long id;
    std::string root, resolved;
    std::function<std::optional<ConfinedChild>()> make;
  };
  std::mutex mu;
  std::vector<Entry> entries;
  unsigned long next_id = 1;
  std::atomic<size_t> count{0};

  static Confinements& get() {
    static Confinements c;
    return c;
  }

  static bool holds(const std::string& root, const std::string& dir) {
    return !root.empty() && (dir == root || (dir.size() > root.size() && dir.compare(0, root.size(), root) == 0 &&
                                             (root.back() == '/' || dir[root.size()] == '/')));
  }

  std::optional<ConfinedChild> for_dir(const std::string& cwd) {
    if (count.load(std::memory_order_acquire) == 0) return std::nullopt;
    std::error_code ec;
    const std::string given = std::filesystem::absolute(cwd.empty() ? "." : cwd, ec).lexically_normal().string();
    const std::string resolved = std::filesystem::weakly_canonical(given, ec).string();
    std::function<std::optional<ConfinedChild>()> make;
    {
      std::lock_guard<std::mutex> lock(mu);
      size_t best = 0;
      for (const Entry& e : entries) {
        const size_t len = holds(e.resolved, resolved) ? e.resolved.size() : holds(e.root, given) ? e.root.size() : 0;
        if (len != 0 && len >= best) {
          best = len;
          make = e.make;
        }
      }
    }
    if (!make) return std::nullopt;
    return make();
  }
};

}  // namespace

std::optional<ConfinedChild> confined_child_for(const std::string& cwd) { return Confinements::get().for_dir(cwd); }

ConfinedFolder::ConfinedFolder(std::string root, std::function<std::optional<ConfinedChild>()> make) {
  Confinements& c = Confinements::get();
  std::error_code ec;
  std::string given = std::filesystem::absolute(root, ec).lexically_normal().string();
  while (given.size() > 1 && given.back() == '/') given.pop_back();
  std::string resolved = std::filesystem::weakly_canonical(given, ec).string();
  std::lock_guard<std::mutex> lock(c.mu);
  id_ = c.next_id++;
  c.entries.push_back({id_, std::move(given), std::move(resolved), std::move(make)});
  c.count.store(c.entries.size(), std::memory_order_release);
}

ConfinedFolder::~ConfinedFolder() {
  Confinements& c = Confinements::get();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.erase(std::remove_if(c.entries.begin(), c.entries.end(), [&](const auto& e) { return e.id == id_; }),
                  c.entries.end());
  c.count.store(c.entries.size(), std::memory_order_release);
}

}  // namespace phoenix::util
