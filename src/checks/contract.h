// Contracts: the shape of a JSON response with every value discarded, and
// the drift between a recorded shape and a fresh response.
//
// A shape maps paths to types:
//   "$": "object", "$.orders": "array", "$.orders[]": "object",
//   "$.orders[].total": "number", "$.orders[].note": "string|null (optional)"
// Array elements are folded into one "[]" path. Types are object, array,
// string, number, boolean and null; a path seen with several types lists
// them sorted and joined with '|' ("null" among them: nullable). A key
// missing from some of the elements seen is "(optional)". Keys that are not
// plain identifiers are written $["a key"].
//
// Everything here is pure (no I/O) so fuzzers and unit tests can call it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "util/json.h"

namespace phoenix::checks::contract {

struct PathType {
  std::set<std::string> types;
  bool optional = false;
  bool operator==(const PathType&) const = default;
};

using Shape = std::map<std::string, PathType>;

// The shape of one JSON value.
Shape infer(const util::Json& value);

// "number", "string|null (optional)".
std::string render(const PathType& t);
// Inverse of render(); throws ConfigError naming `where` on anything else.
PathType parse_type(const std::string& text, const std::string& where);

// The recorded file: {"version":1, "request":{method,url}, "status":N, "shape":{path: type}}.
struct Contract {
  std::string method = "GET";
  std::string url;
  int status = 200;
  Shape shape;
};
util::Json to_json(const Contract& c);
// Throws ConfigError naming `where` (the file) and the field.
Contract from_json(const util::Json& j, const std::string& where);

struct Drift {
  std::string kind;      // field-missing | type-changed | field-added | status-changed | body-not-json | unreachable
  std::string path;      // "$.orders[].total"; "" for status/body/unreachable
  std::string expected;  // rendered type, status or ""
  std::string actual;
  bool operator==(const Drift&) const = default;
};

// Drifts of `actual` against `expected`, sorted by (path, kind). Only the
// topmost of a missing or added subtree is reported; fields under an array
// that is empty now are not missing (there is nothing to see); an optional
// field may be absent; a nullable field may be null. field-added only when
// `strict`.
std::vector<Drift> diff(const Shape& expected, const Shape& actual, bool strict);

// "drift: $.orders[].total removed", "drift: $.id number → string",
// "drift: status 200 → 500" (+ " (+N more)").
std::string signal(const std::vector<Drift>& drifts);

// For the evidence: expected vs actual type of every drifting path.
std::string explain(const std::vector<Drift>& drifts, const Shape& expected, const Shape& actual);

}  // namespace phoenix::checks::contract

namespace phoenix::checks {

struct CheckSpec;
struct SenseResult;

std::string contract_path(const CheckSpec& spec);  // ".phoenix/contracts/<id>.json"

// Boots the server (if any), sends the request, and compares the response
// with the recorded contract (recording it on first sight).
SenseResult sense_contract(const CheckSpec& spec, const std::string& root);

}  // namespace phoenix::checks
