// "A push that fixes one is said too" (docs/hook.md): the checks green in a
// pushed commit that the measurement store knows red on the remote's tip.
// The tip's tree is the one Phoenix noted when it measured that commit
// (checks::known_tree): no git is asked, so the thin binary phoenix-hook
// says it on its green path too. Part of phoenix_lite.
#pragma once

#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "hook/pushed_refs.h"

namespace phoenix::hook {

// One line per check of `green` (each green in the pushed commit `where`
// names) that the store at `store_dir` holds red on the remote end of a
// ref of `refs`: "phoenix: main@3f2c1a9b7d10 also fixes unit on
// origin/main: tests/test_net.py::test_fetch". None without a remote.
std::vector<std::string> also_fixed_lines(const std::string& store_dir, const std::vector<PushedRef>& refs,
                                          const std::string& remote, const std::vector<checks::CheckSpec>& green,
                                          const std::string& where);

}  // namespace phoenix::hook
