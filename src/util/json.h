// JSON helpers: parsing with comments and line:col errors, and field access
// that names the field path when a value is missing or of the wrong type.
#pragma once

#include <map>
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

// Byte offsets of every key / array element of a JSON-with-comments text,
// by path ("checks[1].target"), so errors found after parsing can still
// point at file:line:col.
std::map<std::string, size_t> json_paths(const std::string& text);
// "line:col" of a byte offset.
std::string line_col(const std::string& text, size_t offset);

// An array of strings, or ConfigError "<where>: must be an array of
// strings" / "<where>[i]: must be a string".
std::vector<std::string> string_array(const Json& j, const std::string& where);

// The strings of an array as read back from Phoenix's own records (the
// trace, state files): anything else in it is skipped, and a value that
// is not an array gives none. strings_in(j, key): those of j[key], none
// when `j` is not an object or lacks the key.
std::vector<std::string> strings_of(const Json& array);
std::vector<std::string> strings_in(const Json& j, const std::string& key);

// A line of JSON with keys sorted, no spaces: what hashes are computed over.
std::string canonical(const Json& j);

}  // namespace phoenix::util
