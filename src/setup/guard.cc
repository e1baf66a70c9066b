#include "setup/guard.h"

#include <iostream>

#include "layout/paths.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::setup {
namespace {

gitx::RepoGuard take(const std::string& tree, const std::vector<std::string>& also_exempt) {
  std::vector<std::string> exempt = layout::own_ref_prefixes();
  exempt.insert(exempt.end(), also_exempt.begin(), also_exempt.end());
  try {
    return gitx::RepoGuard::take(tree, exempt);
  } catch (const std::exception& e) {
    std::cerr << "phoenix: warning: the repository of " << tree << " cannot be fingerprinted, so what runs there is "
              << "not guarded: " << e.what() << "\n";
    return gitx::RepoGuard::none();
  }
}

}  // namespace

Guard::Guard(const std::string& tree, const std::vector<std::string>& also_exempt)
    : guard_(take(tree, also_exempt)) {}

std::vector<std::string> Guard::restore(const std::string& who, trace::Trace* trace) const {
  std::vector<std::string> lines = guard_.restore(who);
  tell_put_back(lines, trace);
  return lines;
}

void tell_put_back(const std::vector<std::string>& lines, trace::Trace* trace) {
  for (const std::string& line : lines) {
    std::cerr << "phoenix: " << line << "\n";
    if (!trace) continue;
    try {
      trace->append("guard.put_back", {{"line", line}});
    } catch (const Error& e) {
      std::cerr << "phoenix: warning: the trace was not written: " << e.what() << "\n";
    }
  }
  std::cerr.flush();
}

}  // namespace phoenix::setup
