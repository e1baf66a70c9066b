// What a push fixes: see hook/fixed.h. Part of phoenix_lite.
#include "hook/fixed.h"

#include "checks/measured.h"
#include "util/text.h"

namespace phoenix::hook {

std::vector<std::string> also_fixed_lines(const std::string& store_dir, const std::vector<PushedRef>& refs,
                                          const std::string& remote, const std::vector<checks::CheckSpec>& green,
                                          const std::string& where) {
  std::vector<std::string> lines;
  if (remote.empty()) return lines;
  for (const PushedRef& r : refs) {
    if (r.deletion() || r.creation()) continue;
    const std::string tree = checks::known_tree(store_dir, r.remote_sha);
    if (tree.empty()) continue;
    const std::string name = util::starts_with(r.remote_ref, "refs/heads/") ? r.remote_ref.substr(11) : r.remote_ref;
    for (const checks::CheckSpec& spec : green) {
      const auto m = checks::find_reference(store_dir, tree, spec.raw.dump());
      if (!m || m->result.ok) continue;
      lines.push_back("phoenix: " + where + " also fixes " + spec.id + " on " + remote + "/" + name + ": " +
                      (m->failing.empty() ? std::string("the whole check") : util::join_argv(m->failing)));
    }
    break;  // one remote end says it
  }
  return lines;
}

}  // namespace phoenix::hook
