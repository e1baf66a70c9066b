// What both kinds of sandbox share as a Sandbox: picking the kind, the
// folder and its cleanup, scratch files, read_patch(). The kinds themselves
// are in copy.cc and overlay.cc, what they share below that in common.cc,
// fingerprints (invariant 12) in fingerprint.cc.
#include "sandbox/sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <system_error>
#include <utility>

#include "gitx/libgit2.h"
#include "gitx/repo.h"
#include "layout/paths.h"
#include "sandbox/common.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {

using namespace detail;

namespace {

// One line on stderr, the first time only (a loop makes many sandboxes).
void say_once(const std::string& line) {
  static std::once_flag once;
  std::call_once(once, [&] { std::cerr << line << "\n"; });
}

}  // namespace

Kind parse_kind(const std::string& value, const std::string& what) {
  if (value == "auto") return Kind::kAuto;
  if (value == "copy") return Kind::kCopy;
  if (value == "overlay") return Kind::kOverlay;
  throw ConfigError(what + ": '" + value + "' is not one of auto, copy, overlay");
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kCopy: return "copy";
    case Kind::kOverlay: return "overlay";
    default: return "auto";
  }
}

Kind effective_kind(Kind configured) {
  const char* env = std::getenv("PHOENIX_SANDBOX");
  if (!env || !*env || std::string_view(env) == "1") return configured;
  return parse_kind(env, "PHOENIX_SANDBOX");
}

Sandbox Sandbox::create(const std::string& repo_root, const std::string& base_dir,
                        const std::vector<std::string>& carry_globs, Kind kind) {
  const Kind wanted = effective_kind(kind);
  gitx::lg2::RepositoryPtr real = open_repo(repo_root);
  if (git_repository_is_bare(real.get())) throw Error("sandbox: " + repo_root + " is a bare repository");
  std::string top = git_repository_workdir(real.get());
  while (top.size() > 1 && top.back() == '/') top.pop_back();

  std::error_code ec;
  fs::create_directories(base_dir, ec);
  if (ec) throw Error("sandbox: cannot create " + base_dir + ": " + ec.message());
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) throw Error("sandbox: cannot resolve " + base_dir + ": " + ec.message());
  std::string tmpl = (base / "sandbox-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw_errno("sandbox: cannot create a folder in " + base.string());

  // From here on the destructor cleans up whatever a failure leaves.
  Sandbox sb;
  sb.dir_ = tmpl;
  sb.work_ = sb.dir_ + "/work";
  sb.meta_ = sb.dir_ + "/meta.git";
  sb.top_ = top;
  fs::create_directory(sb.work_, ec);
  if (ec) throw Error("sandbox: cannot create " + sb.work_ + ": " + ec.message());
  PHOENIX_FAULT_IO("sandbox-write", sb.work_);
  // The sandboxes' own folder, when it lies inside the repository somewhere
  // other than .phoenix/, is never part of what the agent sees.
  std::string base_rel;
  if (util::starts_with(base.string(), top + "/")) base_rel = fs::relative(base, top).generic_string() + "/";

  if (wanted != Kind::kCopy) {
    std::string why = why_no_overlay(top, sb.dir_);
    if (why.empty()) {
      try {
        create_overlay(sb, top, base_rel, carry_globs, real.get());
        return sb;
      } catch (const Error& e) {
        // E.g. an index libgit2 cannot read (a split index): start again
        // with the copying sandbox, in a clean folder.
        why = e.what();
        sb.drop_overlay_attempt();
      }
    }
    say_once("phoenix: sandbox: no overlay (" + why + "); using the copying sandbox");
  }
  create_copy(sb, top, base_rel, carry_globs, real.get());
  return sb;
}

// A moved-from sandbox owns no folder: removing it removes nothing.
Sandbox::Sandbox(Sandbox&& other) noexcept { *this = std::move(other); }

Sandbox& Sandbox::operator=(Sandbox&& other) noexcept {
  if (this != &other) {
    remove();
    kind_ = other.kind_;
    top_ = std::move(other.top_);
    layers_ = std::move(other.layers_);
    upper_ = std::move(other.upper_);
    hide_ = std::move(other.hide_);
    ovl_work_ = std::move(other.ovl_work_);
    scratch_ = std::move(other.scratch_);
    dir_ = std::move(other.dir_);
    work_ = std::move(other.work_);
    meta_ = std::move(other.meta_);
    baseline_ = std::move(other.baseline_);
    files_ = std::move(other.files_);
    skipped_ = std::move(other.skipped_);
    other.dir_.clear();
    other.layers_.clear();
  }
  return *this;
}

Sandbox::~Sandbox() { remove(); }

void Sandbox::remove() noexcept {
  if (!layers_.empty()) {
    try {
      make_writable(layers_);
      std::error_code ec;
      fs::remove_all(layers_, ec);
    } catch (...) {}
    layers_.clear();
  }
  if (dir_.empty()) return;
  try {
    make_writable(dir_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  } catch (...) {
    // A destructor must not throw; a leftover folder under layout::sandboxes_dir
    // is harmless and the next `phoenix recover` can remove it.
  }
  dir_.clear();
}

std::string Sandbox::write_scratch_file(const std::string& name, std::string_view content) {
  std::string file;
  struct stat st;
  for (int n = 1;; ++n) {
    file = layout::kScratchPrefix + (n == 1 ? std::string() : std::to_string(n) + "-") + name;
    if (kind_ == Kind::kOverlay) {
      // Taken in the agent's view when the upper layer or the real tree
      // (hidden or not: a number more costs nothing) has it.
      if (::lstat((upper_ + "/" + file).c_str(), &st) != 0 && ::lstat((top_ + "/" + file).c_str(), &st) != 0) break;
    } else if (::lstat((work_ + "/" + file).c_str(), &st) != 0) {
      break;
    }
  }
  if (kind_ == Kind::kOverlay) {
    // Written into the upper layer while nothing has it mounted (mounts
    // live only as long as a confined process does).
    scratch_.push_back(file);
    util::write_file_atomic(upper_ + "/" + file, content, 0644);
    return work_ + "/" + file;
  }
  // Excluded first, so no reader of the patch can ever see it half made.
  const std::string exclude = meta_ + "/info/exclude";
  std::string rules = util::path_exists(exclude) ? util::read_file(exclude) : std::string();
  if (!rules.empty() && rules.back() != '\n') rules += '\n';
  rules += "/" + file + "\n";
  std::error_code ec;
  fs::create_directories(meta_ + "/info", ec);
  util::write_file_atomic(exclude, rules);
  const std::string path = work_ + "/" + file;
  util::write_file_atomic(path, content, 0644);
  return path;
}

std::string Sandbox::read_patch() const {
  if (kind_ == Kind::kOverlay) return read_overlay_patch();
  return gitx::Repo::open(meta_).diff_workdir_patch(baseline_);
}

}  // namespace phoenix::sandbox
