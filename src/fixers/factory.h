// Builds the fixer chain a run uses, from names ("journal", "bisect",
// "harness", "noop") in the order given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fixers/fixer.h"

namespace phoenix::fixers {

// Throws UsageError naming an unknown fixer (with "did you mean").
std::vector<std::unique_ptr<Fixer>> make_fixers(const std::vector<std::string>& names);

// Parses "journal,bisect" into names, validating each.
std::vector<std::string> parse_fixer_list(const std::string& list);

}  // namespace phoenix::fixers
