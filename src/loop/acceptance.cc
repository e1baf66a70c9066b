#include "loop/acceptance.h"

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::loop {

namespace fs = std::filesystem;

config::Config with_acceptance(const config::Config& cfg, const Task* task) {
  config::Config out = cfg;
  if (!task || !task->check) return out;
  if (cfg.find(task->check->id))
    throw ConfigError("task " + task->id() + ": its acceptance check's id '" + task->check->id +
                      "' is also the id of a check in phoenix.json");
  out.checks.push_back(*task->check);
  return out;
}

std::vector<std::string> acceptance_scripts(const Task& task, const std::string& root) {
  std::vector<std::string> out;
  if (!task.check) return out;
  for (std::string a : task.check->argv) {
    if (util::starts_with(a, "./")) a = a.substr(2);
    if (a.empty() || a[0] == '/' || a[0] == '-' || a.find("..") != std::string::npos) continue;
    std::error_code ec;
    if (fs::is_regular_file(fs::path(root) / a, ec)) out.push_back(a);
  }
  return out;
}

PinnedFiles::PinnedFiles(std::string root, const std::vector<std::string>& rel_paths) : root_(std::move(root)) {
  for (const auto& rel : rel_paths) {
    Pin p;
    p.rel = rel;
    const fs::path path = fs::path(root_) / rel;
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      p.content = util::read_file(path.string());
      p.mode = fs::status(path, ec).permissions();
    }
    pins_.push_back(std::move(p));
  }
}

std::vector<std::string> PinnedFiles::restore() const {
  std::vector<std::string> changed;
  for (const auto& p : pins_) {
    const fs::path path = fs::path(root_) / p.rel;
    std::error_code ec;
    const bool is_file = fs::is_regular_file(path, ec);
    if (!p.content) {
      if (fs::exists(fs::symlink_status(path, ec))) {
        fs::remove_all(path, ec);
        changed.push_back(p.rel);
      }
      continue;
    }
    const bool same = is_file && util::read_file(path.string()) == *p.content &&
                      fs::status(path, ec).permissions() == p.mode && !fs::is_symlink(fs::symlink_status(path, ec));
    if (same) continue;
    if (!is_file || fs::is_symlink(fs::symlink_status(path, ec))) fs::remove_all(path, ec);
    fs::create_directories(path.parent_path(), ec);
    util::write_file_atomic(path.string(), *p.content);
    fs::permissions(path, p.mode, ec);
    changed.push_back(p.rel);
  }
  return changed;
}

}  // namespace phoenix::loop
