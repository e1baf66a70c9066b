#include "layout/paths.h"

#include <filesystem>
#include <system_error>

#include "util/atomic_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace phoenix::layout {

const std::vector<std::string>& keep_prefixes() {
  static const std::vector<std::string> k{kStateDirPrefix, "incidents/"};
  return k;
}

const std::vector<std::string>& state_prefixes() {
  static const std::vector<std::string> k{kStateDirPrefix};
  return k;
}

const std::vector<std::string>& own_ref_prefixes() {
  static const std::vector<std::string> k{"refs/phoenix/", "refs/heads/phoenix/"};
  return k;
}

std::string state_dir(const std::string& root) { return root + "/" + kStateDirName; }
std::string lock_file(const std::string& root) { return state_dir(root) + "/lock"; }
std::string loop_lock_file(const std::string& root) { return state_dir(root) + "/loop.lock"; }
std::string trace_file(const std::string& root) { return state_dir(root) + "/trace.jsonl"; }
std::string journal_file(const std::string& root) { return state_dir(root) + "/journal.sqlite"; }
std::string escalated_flag(const std::string& root) { return state_dir(root) + "/ESCALATED"; }
std::string incidents_dir(const std::string& root) { return root + "/incidents"; }
std::string measured_dir(const std::string& root) { return state_dir(root) + "/measured"; }

const std::string& state_gitignore() {
  // '*' also matches the folders contracts/ and baselines/; each is let back
  // in, then everything below it (git cannot re-include a file whose
  // folder is excluded, so both lines are needed). The file ignores itself
  // too: git still reads it, and `git status` shows nothing of Phoenix's.
  static const std::string text =
      "# Written by Phoenix: its run files (journal, trace, locks, loop state) and this file\n"
      "# stay out of your commits. Approved contracts and baselines are yours to commit.\n"
      "*\n"
      "!contracts/\n"
      "!contracts/**\n"
      "!baselines/\n"
      "!baselines/**\n";
  return text;
}

std::string ensure_state_dir(const std::string& root) {
  const std::string dir = state_dir(root);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  const std::string gi = dir + "/.gitignore";
  if (!fs::exists(gi, ec)) util::write_file_atomic(gi, state_gitignore());
  return dir;
}

}  // namespace phoenix::layout
