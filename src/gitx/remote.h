// Talking to remotes: through the git program, not libgit2. Push and fetch
// run `git` so that what the user set up for their own pushes applies:
// credential helpers, the ssh agent and its config, insteadOf rules,
// actions/checkout's http.extraheader. libgit2 reads none of those.
#pragma once

#include <string>
#include <vector>

#include "util/subprocess.h"

namespace phoenix::gitx {

// Runs `git args...` in `cwd`, stdin /dev/null and GIT_TERMINAL_PROMPT=0: a
// password prompt could never be answered, so git fails at once instead
// of waiting for one. Throws Error when git is not installed ("git is not
// installed: <who_needs_it>"), when Phoenix is interrupted (exit 130) and
// when git does not finish within `timeout_s`. Any exit code is returned.
util::ProcessResult run_git(const std::string& cwd, const std::vector<std::string>& args, double timeout_s,
                            const std::string& who_needs_it);

// The end of git's output on one line (800 bytes at most), for an error
// message; "no output" when it printed nothing.
std::string git_output_tail(const std::string& output);

// A name or URL a remote argument may be: not empty, not an option.
bool is_remote_name(const std::string& remote);

}  // namespace phoenix::gitx
