// Loop: an agent writes only its own tree (setup/guard.h; loop/internal.h).
//
// The agent runs confined to the loop's (or its worker's) tree: what it
// writes in the user's checkout or another worktree lands in a layer of its
// own and is thrown away, each such write told on one line ("the agent
// wrote README.md in the checkout /x, not its own tree; kept out"). An
// attempt that did so fails, whatever its checks say: the work it meant for
// the user's checkout is not in its tree, and the next iteration is told
// where it wrote.
#include "loop/internal.h"

#include "util/text.h"

namespace phoenix::loop::internal {

RedFacts Loop::elsewhere_facts(const std::vector<std::string>& lines) const {
  RedFacts f;
  f.check = "own-tree";
  f.failure_type = cfg.checks.empty() ? "unit" : cfg.checks.front().type;
  f.description = "the agent writes only in its working directory";
  f.signal = "wrote outside its tree";
  for (const std::string& l : lines) f.evidence += l + "\n";
  f.signature = "own-tree\n" + f.evidence;
  return f;
}

std::string Loop::elsewhere_told(const std::vector<std::string>& lines) {
  std::string told =
      "you wrote files outside your working directory, in another checkout of the repository; those "
      "writes were thrown away:";
  for (const std::string& l : lines) told += "\n  " + l;
  told += "\n  make every change inside your working directory (the current directory), nowhere else";
  return told;
}

Loop::Ending Loop::wrote_elsewhere_attempt(const TaskRef& t, const std::vector<std::string>& lines) {
  return refused_attempt(t, elsewhere_facts(lines), elsewhere_told(lines), "phoenix-loop: wrote outside its tree",
                         {{"wrote_elsewhere", lines}});
}

}  // namespace phoenix::loop::internal
