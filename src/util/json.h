// JSON helpers: parsing with comments and line:col errors, and field access
// that names the field path when a value is missing or of the wrong type.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace phoenix::util {

using Json = nlohmann::json;

// Parses JSON that may carry // and /* */ comments. On error throws
// ConfigError "<where>:<line>:<col>: <what>".
Json parse_json(const std::string& text, const std::string& where);

// Rejects keys of `obj` not in `known`, suggesting the nearest known key:
// "<where>: unknown key 'tagret' (did you mean 'target'?)".
void reject_unknown_keys(const Json& obj, const std::vector<std::string>& known, const std::string& where);

// A line of JSON with keys sorted, no spaces: what hashes are computed over.
std::string canonical(const Json& j);

}  // namespace phoenix::util
