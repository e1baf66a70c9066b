#include "cli/context.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "hook/hook.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/term.h"

namespace phoenix::cli {

namespace fs = std::filesystem;

trace::Trace& Context::trace() {
  if (!trace_) {
    layout::ensure_state_dir(root);
    trace_ = std::make_unique<trace::Trace>(trace_path());
  }
  return *trace_;
}

namespace {

bool want_color(int fd) { return util::term::color_enabled(fd); }

using util::term::paint;

}  // namespace

Context make_context(const std::string& dir) {
  Context c;
  std::error_code ec;
  fs::path d = fs::absolute(dir.empty() ? "." : dir, ec);
  if (!fs::is_directory(d, ec)) throw UsageError("-C " + dir + ": no such directory");
  c.cwd = fs::canonical(d).string();
  c.root = c.cwd;
  // The work tree: GIT_WORK_TREE when git set it (as it may for hooks), else
  // the nearest folder with a .git entry. A walk up the tree rather than
  // libgit2's discovery on purpose: initialising libgit2 parses the system's
  // CA bundle (~15 ms), which the commands that only run checks should not
  // pay. phoenix-hook finds it with the same function.
  if (std::optional<std::string> wt = hook::find_work_tree(c.cwd)) {
    c.root = *wt;
    c.in_repo = true;
  }
  c.color_out = want_color(1);
  c.color_err = want_color(2);
  return c;
}

std::string green(const Context& c, const std::string& s, bool err) {
  return paint(err ? c.color_err : c.color_out, "32", s);
}
std::string red(const Context& c, const std::string& s, bool err) {
  return paint(err ? c.color_err : c.color_out, "31;1", s);
}
std::string dim(const Context& c, const std::string& s, bool err) {
  return paint(err ? c.color_err : c.color_out, "2", s);
}
std::string bold(const Context& c, const std::string& s, bool err) {
  return paint(err ? c.color_err : c.color_out, "1", s);
}

}  // namespace phoenix::cli
