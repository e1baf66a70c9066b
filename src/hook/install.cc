// Installing and removing the pre-push shim in a hooks folder, keeping
// the hook that was there before (hook/hook.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

#include "hook/hook.h"
#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace phoenix::hook {

namespace fs = std::filesystem;

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

}  // namespace phoenix::hook
