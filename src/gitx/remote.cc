#include "gitx/remote.h"

#include "util/error.h"
#include "util/text.h"

namespace phoenix::gitx {

std::string git_output_tail(const std::string& output) {
  std::string t = util::trim(util::to_valid_utf8(output));
  if (t.size() > 800) t = "..." + std::string(util::utf8_tail(t, 800));
  for (char& c : t)
    if (c == '\n') c = ' ';
  return t.empty() ? "no output" : t;
}

util::ProcessResult run_git(const std::string& cwd, const std::vector<std::string>& args, double timeout_s,
                            const std::string& who_needs_it) {
  util::ProcessOptions o;
  o.argv = {"git"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = cwd;
  o.timeout_s = timeout_s;
  o.env["GIT_TERMINAL_PROMPT"] = "0";
  util::ProcessResult r = util::run_process(o);
  const std::string what = args.empty() ? "git" : "git " + args[0];
  if (r.not_found) throw Error("git is not installed: " + who_needs_it);
  if (r.interrupted) throw Error("interrupted while running " + what, kExitInterrupted);
  if (r.timed_out) throw Error(what + " did not finish within " + std::to_string(static_cast<int>(timeout_s)) + " s");
  return r;
}

bool is_remote_name(const std::string& remote) { return !remote.empty() && remote[0] != '-'; }

}  // namespace phoenix::gitx
