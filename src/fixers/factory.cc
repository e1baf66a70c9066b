#include "fixers/factory.h"

#include "fixers/bisect.h"
#include "fixers/harness.h"
#include "fixers/noop.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::fixers {

namespace {

const std::vector<std::string>& fixer_names() {
  static const std::vector<std::string> n{kJournal, "bisect", "harness", "noop"};
  return n;
}

}  // namespace

std::vector<std::string> parse_fixer_list(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string name = util::trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!name.empty()) {
      bool known = false;
      for (const auto& n : fixer_names()) known = known || n == name;
      if (!known) {
        std::string near = util::nearest(name, fixer_names());
        throw UsageError("unknown fixer '" + name + "'" +
                         (near.empty() ? " (journal, bisect, harness, noop)" : " (did you mean '" + near + "'?)"));
      }
      out.push_back(name);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw UsageError("--fixer: give at least one of journal, bisect, harness, noop");
  return out;
}

std::vector<std::unique_ptr<Fixer>> make_fixers(const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<Fixer>> out;
  for (const auto& n : names) {
    if (n == "bisect") out.push_back(std::make_unique<BisectFixer>());
    else if (n == "harness") out.push_back(std::make_unique<HarnessFixer>());
    else if (n == "noop") out.push_back(std::make_unique<NoopFixer>());
    else if (n == kJournal) continue;  // the journal fixer is added by the caller that owns the journal
    else parse_fixer_list(n);          // throws the usage error
  }
  return out;
}

}  // namespace phoenix::fixers
