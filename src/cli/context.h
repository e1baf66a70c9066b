// What every command knows: where it runs, the repository, output style.
#pragma once

#include <memory>
#include <string>

#include "layout/paths.h"
#include "trace/trace.h"

namespace phoenix::cli {

struct Context {
  std::string cwd;   // where the user is (after -C)
  std::string root;  // the repository's work tree (cwd when not in a repository)
  bool in_repo = false;
  bool json = false;       // --json
  bool color_out = false;  // colour on stdout
  bool color_err = false;  // colour on stderr
  bool explain = false;

  std::string trace_path() const { return layout::trace_file(root); }
  trace::Trace& trace();

 private:
  std::unique_ptr<trace::Trace> trace_;
};

// Finds the repository that contains `dir` (via libgit2).
Context make_context(const std::string& dir);

// Colour helpers: only when enabled (a TTY, no NO_COLOR; CLICOLOR_FORCE forces).
std::string green(const Context& c, const std::string& s, bool err = false);
std::string red(const Context& c, const std::string& s, bool err = false);
std::string dim(const Context& c, const std::string& s, bool err = false);
std::string bold(const Context& c, const std::string& s, bool err = false);

}  // namespace phoenix::cli
