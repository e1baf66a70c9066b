#include "util/overlay.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;

namespace phoenix::util {

std::string overlay_options(const std::string& lowers, const std::string& upper, const std::string& work) {
  return "lowerdir=" + lowers + ",upperdir=" + upper + ",workdir=" + work + ",userxattr";
}

std::string unmountable_path(const std::string& path) {
  if (path.find_first_of(",:\\") != std::string::npos) return "the path " + path + " holds ',', ':' or '\\'";
  return "";
}

void make_whiteout(const std::string& path) {
  if (::mknod(path.c_str(), S_IFCHR | 0600, 0) != 0) throw_errno("cannot make the whiteout " + path);
}

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == 0; }

bool is_opaque(const std::string& dir) {
  for (const char* name : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
    char v[4] = {0};
    ssize_t n = ::lgetxattr(dir.c_str(), name, v, sizeof v);
    if (n >= 1 && (v[0] == 'y' || v[0] == 'x')) return true;
  }
  return false;
}

void make_tree_writable(const std::string& dir) {
  std::error_code ec;
  ::chmod(dir.c_str(), 0700);
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2)) continue;
    if (it->is_directory(e2)) ::chmod(it->path().c_str(), 0700);
    else ::chmod(it->path().c_str(), 0600);
  }
}

namespace {

std::string probe_overlay() {
  if (::access("/proc/self/ns/user", F_OK) != 0) return "this system has no user namespaces";
  std::error_code ec;
  const fs::path tmpdir = fs::temp_directory_path(ec);
  if (ec) return "no temporary folder: " + ec.message();
  std::string tmpl = (tmpdir / "phoenix-overlay-probe-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return std::string("cannot create a probe folder: ") + std::strerror(errno);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      make_tree_writable(dir);
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{tmpl};
  if (!unmountable_path(tmpl).empty()) return unmountable_path(tmpl);
  // As the fixers' sandbox has it: the mount point inside the bottom
  // layer, the other layers beside it, a whiteout in the top lower layer.
  for (const char* d : {"lower", "lower/hidden", "lower/hidden/merged", "hide", "upper", "ovl"})
    fs::create_directory(tmpl + "/" + d, ec);
  write_file_atomic(tmpl + "/lower/seen", "x\n");
  try {
    make_whiteout(tmpl + "/hide/hidden");
  } catch (const Error& e) { return std::string("cannot make overlay whiteouts: ") + e.what(); }
  const std::string sh = find_executable("sh");
  if (sh.empty()) return "no sh on PATH to probe with";
  ProcessOptions o;
  o.argv = {sh, "-c", "test -f seen && ! test -e hidden && echo new > made && test -f made"};
  o.cwd = tmpl + "/lower/hidden/merged";
  o.timeout_s = 20;
  ChildNamespace ns;
  ns.mounts.push_back({"overlay", tmpl + "/lower/hidden/merged", "overlay",
                       overlay_options(tmpl + "/hide:" + tmpl + "/lower", tmpl + "/upper", tmpl + "/ovl"), false});
  ns.mounts.push_back({tmpl + "/lower", tmpl + "/lower", "", "", true});
  o.mount_namespace = ns;
  ProcessResult r = run_process(o);
  if (r.exit_code != 0) {
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (out.empty()) out = "exit " + std::to_string(r.exit_code);
    return "the kernel refused: " + out;
  }
  if (!path_exists(tmpl + "/upper/made")) return "the overlay's upper layer did not take a write";
  return "";
}

}  // namespace

std::string overlay_unavailable_reason() {
  static const std::string reason = probe_overlay();
  return reason;
}

}  // namespace phoenix::util
