#include "checks/contract.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "layout/paths.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::checks::contract {

using util::Json;

namespace {

const std::set<std::string> kTypes{"array", "boolean", "null", "number", "object", "string"};
const std::string kOptional = " (optional)";

std::string type_of(const Json& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_null()) return "null";
  return "number";
}

bool identifier(const std::string& k) {
  if (k.empty() || !(std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_')) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string key_segment(const std::string& k) { return identifier(k) ? "." + k : "[" + Json(k).dump() + "]"; }

void add(Shape& into, const Shape& from) {
  for (const auto& [p, t] : from) {
    auto& d = into[p];
    d.types.insert(t.types.begin(), t.types.end());
    d.optional = d.optional || t.optional;
  }
}

// Two observations of the same element: a path seen in only one is optional.
Shape fold(const Shape& a, const Shape& b) {
  Shape out = a;
  for (auto& [p, t] : out)
    if (!b.count(p)) t.optional = true;
  for (const auto& [p, t] : b) {
    auto it = out.find(p);
    if (it == out.end()) {
      PathType o = t;
      o.optional = true;
      out[p] = o;
    } else {
      it->second.types.insert(t.types.begin(), t.types.end());
      it->second.optional = it->second.optional || t.optional;
    }
  }
  return out;
}

void walk(const Json& v, const std::string& path, Shape& out) {
  out[path].types.insert(type_of(v));
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) walk(it.value(), path + key_segment(it.key()), out);
  } else if (v.is_array()) {
    Shape folded;
    bool first = true;
    for (const auto& e : v) {
      Shape one;
      walk(e, path + "[]", one);
      folded = first ? one : fold(folded, one);
      first = false;
    }
    add(out, folded);
  }
}

// The path without its last segment ("$.a[].b" -> "$.a[]", "$.a[]" -> "$.a",
// "$[\"x y\"]" -> "$"), and what that parent must be to hold it.
std::pair<std::string, std::string> parent(const std::string& path) {
  if (util::ends_with(path, "[]")) return {path.substr(0, path.size() - 2), "array"};
  if (util::ends_with(path, "\"]")) {
    // Scan backwards for the opening ["  that is not escaped.
    for (size_t i = path.size() - 2; i-- > 1;) {
      if (path[i] == '"' && path[i - 1] == '[') {
        size_t bs = 0;
        for (size_t j = i; j-- > 0 && path[j] == '\\';) ++bs;
        if (bs % 2 == 0) return {path.substr(0, i - 1), "object"};
      }
    }
  }
  size_t dot = path.rfind('.');
  if (dot == std::string::npos) return {"", ""};
  return {path.substr(0, dot), "object"};
}

std::string join_types(const std::set<std::string>& t) {
  std::string s;
  for (const auto& x : t) s += (s.empty() ? "" : "|") + x;
  return s;
}

}  // namespace

Shape infer(const Json& value) {
  Shape out;
  walk(value, "$", out);
  return out;
}

std::string render(const PathType& t) { return join_types(t.types) + (t.optional ? kOptional : ""); }

PathType parse_type(const std::string& text, const std::string& where) {
  PathType t;
  std::string s = text;
  if (util::ends_with(s, kOptional)) {
    t.optional = true;
    s = s.substr(0, s.size() - kOptional.size());
  }
  size_t start = 0;
  while (true) {
    size_t bar = s.find('|', start);
    std::string one = s.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!kTypes.count(one))
      throw ConfigError(
          where + ": unknown type '" + one + "' in '" + text +
          "' (types: array, boolean, null, number, object, string; '|' between them, ' (optional)' after)");
    t.types.insert(one);
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return t;
}

Json to_json(const Contract& c) {
  Json shape = Json::object();
  for (const auto& [p, t] : c.shape) shape[p] = render(t);
  return Json{
      {"version", 1}, {"request", {{"method", c.method}, {"url", c.url}}}, {"status", c.status}, {"shape", shape}};
}

Contract from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": a contract must be a JSON object");
  if (!j.contains("version") || j["version"] != 1)
    throw ConfigError(where + ".version: must be 1 (a contract written by this Phoenix)");
  Contract c;
  if (j.contains("request") && j["request"].is_object()) {
    const Json& r = j["request"];
    if (r.contains("method") && r["method"].is_string()) c.method = r["method"].get<std::string>();
    if (r.contains("url") && r["url"].is_string()) c.url = r["url"].get<std::string>();
  }
  if (!j.contains("status") || !j["status"].is_number_integer())
    throw ConfigError(where + ".status: missing or not an integer HTTP status");
  c.status = j["status"].get<int>();
  if (!j.contains("shape") || !j["shape"].is_object() || j["shape"].empty())
    throw ConfigError(where + ".shape: missing or not a non-empty object of path -> type");
  for (auto it = j["shape"].begin(); it != j["shape"].end(); ++it) {
    if (!util::starts_with(it.key(), "$"))
      throw ConfigError(where + ".shape: path '" + it.key() + "' does not start with '$'");
    if (!it.value().is_string()) throw ConfigError(where + ".shape[\"" + it.key() + "\"]: must be a type string");
    c.shape[it.key()] = parse_type(it.value().get<std::string>(), where + ".shape[\"" + it.key() + "\"]");
  }
  return c;
}

std::vector<Drift> diff(const Shape& expected, const Shape& actual, bool strict) {
  std::vector<Drift> out;
  auto holds = [](const Shape& s, const std::string& path, const std::string& container) {
    auto it = s.find(path);
    return it != s.end() && it->second.types.count(container) > 0;
  };
  for (const auto& [p, t] : expected) {
    auto it = actual.find(p);
    if (it == actual.end()) {
      if (t.optional) continue;
      auto [par, container] = parent(p);
      // Only the top of a missing subtree; nothing under an array that is empty now.
      if (par.empty() || !holds(actual, par, container)) continue;
      if (container == "array") continue;
      out.push_back({"field-missing", p, render(t), "(absent)"});
      continue;
    }
    const auto& at = it->second.types;
    if (!std::includes(t.types.begin(), t.types.end(), at.begin(), at.end()))
      out.push_back({"type-changed", p, join_types(t.types), join_types(at)});
  }
  if (strict) {
    for (const auto& [p, t] : actual) {
      if (expected.count(p)) continue;
      auto [par, container] = parent(p);
      if (par.empty() || !holds(expected, par, container)) continue;
      if (container == "array") continue;  // elements of an array recorded empty
      out.push_back({"field-added", p, "(absent)", render(t)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Drift& a, const Drift& b) { return std::tie(a.path, a.kind) < std::tie(b.path, b.kind); });
  return out;
}

std::string signal(const std::vector<Drift>& drifts) {
  if (drifts.empty()) return "contract holds";
  const Drift& d = drifts.front();
  std::string s;
  if (d.kind == "field-missing") s = "drift: " + d.path + " removed";
  else if (d.kind == "type-changed") s = "drift: " + d.path + " " + d.expected + " → " + d.actual;
  else if (d.kind == "field-added") s = "drift: " + d.path + " added";
  else if (d.kind == "status-changed") s = "drift: status " + d.expected + " → " + d.actual;
  else if (d.kind == "body-not-json") s = "drift: body is not JSON";
  else s = d.kind + (d.actual.empty() ? "" : ": " + d.actual);
  if (drifts.size() > 1) s += " (+" + std::to_string(drifts.size() - 1) + " more)";
  return s;
}

std::string explain(const std::vector<Drift>& drifts, const Shape& expected, const Shape& actual) {
  std::string s = std::to_string(drifts.size()) + (drifts.size() == 1 ? " drift" : " drifts") + ":\n";
  size_t shown = 0;
  for (const auto& d : drifts) {
    if (++shown > 50) {
      s += "(" + std::to_string(drifts.size() - 50) + " more)\n";
      break;
    }
    s += "  " + d.kind + (d.path.empty() ? "" : "  " + d.path) + "\n";
    if (!d.expected.empty() || !d.actual.empty())
      s += "    expected: " + d.expected + "\n    actual:   " + d.actual + "\n";
  }
  // The neighbourhood: expected vs actual shape of the drifting paths' parents.
  std::set<std::string> parents;
  for (const auto& d : drifts)
    if (!d.path.empty()) parents.insert(parent(d.path).first);
  if (!parents.empty()) {
    auto section = [&](const char* title, const Shape& sh) {
      std::string out = std::string(title) + ":\n";
      size_t n = 0;
      for (const auto& [p, t] : sh) {
        bool near = parents.count(p) > 0 || parents.count(parent(p).first) > 0;
        if (near && ++n <= 40) out += "  " + p + ": " + render(t) + "\n";
      }
      return out;
    };
    s += "\n" + section("expected shape", expected) + "\n" + section("actual shape", actual);
  }
  return s;
}

}  // namespace phoenix::checks::contract

// ---- sensing (I/O) ----

#include <filesystem>

#include "checks/check.h"
#include "checks/http.h"
#include "util/atomic_file.h"

namespace phoenix::checks {

std::string contract_path(const CheckSpec& spec) { return layout::contract_file(spec.id); }

namespace {

// The answer the check got, as the evidence names it.
struct Answer {
  HttpResponse res;
  util::Json body;
  bool is_json = false;
  std::string request_line;

  Answer(const CheckSpec& c, HttpResponse r) : res(std::move(r)) {
    body = util::Json::parse(res.body, nullptr, false);
    is_json = !body.is_discarded();
    request_line = c.method + " " + c.url + " -> " + std::to_string(res.status) +
                   (res.content_type.empty() ? "" : " (" + res.content_type + ")") + ", " +
                   std::to_string(res.body.size()) + " bytes";
  }

  std::string body_head() const {
    std::string h = util::to_valid_utf8(util::utf8_head(res.body, 1024));
    return "--- body (first " + std::to_string(std::min<size_t>(1024, res.body.size())) + " bytes) ---\n" + h +
           (h.empty() || h.back() == '\n' ? "" : "\n");
  }
};

// No contract in the work tree: record the first answer's shape, unless
// the contract was deleted, the check never records, or the answer is no
// 2xx JSON body.
SenseResult record_contract(const CheckSpec& c, const std::string& root, const std::string& rel, const Answer& a) {
  SenseResult r;
  const std::string abs = root + "/" + rel;
  std::string where;
  Missing m = missing_recording(c, root, rel, &where);
  if (m == Missing::kDeleted) {
    r.signal = "contract deleted: " + rel;
    r.evidence = rel + " is in git (" + where + ") but missing from the work tree: restore it (git checkout -- " + rel +
                 "), or commit a new contract to approve a new shape.\n" + a.request_line + "\n";
    return r;
  }
  if (m == Missing::kRecordNever) {
    r.signal = "no contract: " + rel;
    r.evidence = rel + " does not exist and the check says \"record\": \"never\".\n" + a.request_line + "\n";
    return r;
  }
  if (a.res.status < 200 || a.res.status > 299 || !a.is_json) {
    r.signal = !a.is_json ? "drift: body is not JSON" : "status " + std::to_string(a.res.status);
    r.evidence = "not recording " + rel + ": the first response must be a 2xx JSON body.\n" + a.request_line + "\n" +
                 a.body_head();
    return r;
  }
  contract::Contract k;
  k.method = c.method;
  k.url = c.url;
  k.status = a.res.status;
  k.shape = contract::infer(a.body);
  std::filesystem::create_directories(std::filesystem::path(abs).parent_path());
  util::write_file_atomic(abs, contract::to_json(k).dump(2) + "\n");
  r.ok = true;
  r.signal = "recorded " + rel + " (" + std::to_string(k.shape.size()) + " paths)";
  r.evidence = a.request_line + "\nrecorded its shape to " + rel + " (commit it to approve it)\n";
  return r;
}

// The answer held against the recorded contract.
SenseResult hold_to_contract(const CheckSpec& c, const std::string& root, const std::string& rel, const Answer& a) {
  SenseResult r;
  contract::Contract k = contract::from_json(util::parse_json(util::read_file(root + "/" + rel), rel), rel);
  std::vector<contract::Drift> drifts;
  contract::Shape actual;
  if (a.res.status != k.status)
    drifts.push_back({"status-changed", "", std::to_string(k.status), std::to_string(a.res.status)});
  if (!a.is_json) {
    drifts.push_back({"body-not-json", "", "JSON", a.res.content_type.empty() ? "not JSON" : a.res.content_type});
  } else {
    actual = contract::infer(a.body);
    for (auto& d : contract::diff(k.shape, actual, c.strict)) drifts.push_back(d);
  }
  std::stable_sort(drifts.begin(), drifts.end(), [](const contract::Drift& x, const contract::Drift& y) {
    return std::tie(x.path, x.kind) < std::tie(y.path, y.kind);
  });
  r.ok = drifts.empty();
  r.signal = r.ok ? "contract holds (" + std::to_string(k.shape.size()) + " paths)" : contract::signal(drifts);
  r.evidence = a.request_line + "\ncontract " + rel + (c.strict ? " (strict)" : "") + "\n";
  if (!r.ok) {
    r.evidence += contract::explain(drifts, k.shape, actual);
    if (!a.is_json || a.res.status != k.status) r.evidence += a.body_head();
  }
  return r;
}

}  // namespace

SenseResult sense_contract(const CheckSpec& c, const std::string& root) {
  SenseResult r;
  std::unique_ptr<Server> server;
  if (!boot_server(c, root, server, r)) return r;

  HttpRequest rq;
  rq.url = c.url;
  rq.method = c.method;
  rq.headers = c.headers;
  rq.body = c.body;
  rq.read_timeout_s = c.timeout_s;
  rq.max_body_bytes = 64u << 20;
  HttpResponse res;
  try {
    res = http_request(rq);
  } catch (const HttpError& e) {
    r.signal = "unreachable: " + c.method + " " + c.url;
    r.evidence = std::string(e.what()) + "\n" +
                 (server ? "--- server log (tail) ---\n" + util::to_valid_utf8(server->log_tail()) : "");
    return r;
  }
  if (server) server->stop();
  const Answer a(c, std::move(res));
  const std::string rel = contract_path(c);
  if (!util::path_exists(root + "/" + rel)) return record_contract(c, root, rel, a);
  return hold_to_contract(c, root, rel, a);
}

}  // namespace phoenix::checks
