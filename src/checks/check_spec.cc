// Parsing a check from phoenix.json or --check: every error names the field.
// In a translation unit of its own, apart from sense(), so that what needs
// only the configuration (config::load, the pre-push hook's thin binary
// phoenix-hook) links no libgit2 and no OpenSSL. Kinds become words and
// words kinds here only.
#include <algorithm>
#include <regex>

#include "checks/check_spec.h"
#include "checks/url.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::checks {

using util::Json;

const std::vector<std::string>& failure_types() {
  static const std::vector<std::string> types{"unit",   "e2e",    "build",    "lint",     "migration",
                                              "deploy", "visual", "contract", kHealthType};
  return types;
}

namespace {

struct KindWord {
  Kind kind;
  const char* word;
};

constexpr KindWord kKindWords[] = {{Kind::kCommandExit, "command_exit"},
                                   {Kind::kFileSha256, "file_sha256"},
                                   {Kind::kRegexInFile, "regex_in_file"},
                                   {Kind::kContract, "contract"},
                                   {Kind::kVisual, "visual"}};

struct RunnerWord {
  Runner runner;
  const char* word;
};

constexpr RunnerWord kRunnerWords[] = {
    {Runner::kPytest, "pytest"}, {Runner::kCTest, "ctest"}, {Runner::kGoogleTest, "gtest"}, {Runner::kVitest, "vitest"},
    {Runner::kJest, "jest"},     {Runner::kGo, "go"},       {Runner::kCargo, "cargo"}};

}  // namespace

const char* runner_name(Runner r) {
  for (const auto& w : kRunnerWords)
    if (w.runner == r) return w.word;
  return "?";
}

std::optional<Runner> parse_runner(std::string_view word) {
  for (const auto& w : kRunnerWords)
    if (word == w.word) return w.runner;
  return std::nullopt;
}

std::string runner_words() {
  std::string out;
  for (const auto& w : kRunnerWords) out += (out.empty() ? "" : ", ") + std::string(w.word);
  return out;
}

const char* kind_name(Kind k) {
  for (const auto& w : kKindWords)
    if (w.kind == k) return w.word;
  return "?";
}

std::optional<Kind> parse_kind(std::string_view word) {
  for (const auto& w : kKindWords)
    if (word == w.word) return w.kind;
  return std::nullopt;
}

namespace {

// Every kind's word, in the order of Kind.
const std::vector<std::string>& kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& w : kKindWords) v.push_back(w.word);
    return v;
  }();
  return names;
}

}  // namespace

void to_json(Json& j, Kind k) { j = kind_name(k); }

namespace {

bool is_http(Kind k) { return k == Kind::kContract || k == Kind::kVisual; }

const std::vector<std::string> kCommonKeys{"id",       "kind",        "target", "expect",         "type",
                                           "editable", "description", "cache",  "tests_must_bite"};

std::vector<std::string> keys_for(Kind kind) {
  std::vector<std::string> k = kCommonKeys;
  if (is_http(kind)) {
    k.erase(std::find(k.begin(), k.end(), "expect"));
    k.insert(k.end(), {"server", "record", "timeout_s"});
  }
  if (kind == Kind::kContract) k.insert(k.end(), {"method", "headers", "body", "strict"});
  if (kind == Kind::kVisual) k.insert(k.end(), {"screenshot", "tolerance", "max_ratio", "ignore_anti_aliasing"});
  if (kind == Kind::kCommandExit)
    k.insert(k.end(), {"timeout_s", "cwd", "tests", "protect_tests", "select", "select_failing"});
  if (kind == Kind::kRegexInFile) k.push_back("pattern");
  return k;
}

std::string type_name(const Json& j) {
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}

std::string default_type(Kind kind) {
  if (is_http(kind)) return kind_name(kind);
  return kind == Kind::kCommandExit ? "unit" : "lint";
}

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

double positive(const Json& j, const std::string& key, const std::string& w, double dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_number() || j[key].get<double>() <= 0)
    throw ConfigError(w + "." + key + ": must be a positive number of seconds, not " +
                      (j[key].is_number() ? j[key].dump() : type_name(j[key])));
  return j[key].get<double>();
}

double unit_interval(const Json& j, const std::string& key, const std::string& w, double dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_number() || j[key].get<double>() < 0 || j[key].get<double>() > 1)
    throw ConfigError(w + "." + key + ": must be a number from 0 to 1, not " +
                      (j[key].is_number() ? j[key].dump() : type_name(j[key])));
  return j[key].get<double>();
}

bool boolean(const Json& j, const std::string& key, const std::string& w, bool dflt) {
  if (!j.contains(key)) return dflt;
  if (!j[key].is_boolean()) throw ConfigError(w + "." + key + ": must be true or false, not " + type_name(j[key]));
  return j[key].get<bool>();
}

// A contract or visual check's server: {run, ready_url, ready_timeout_s}.
ServerSpec parse_server(const Json& s, const std::string& sw) {
  if (!s.is_object())
    throw ConfigError(sw + ": must be an object {run, ready_url, ready_timeout_s}, not " + type_name(s));
  util::reject_unknown_keys(s, {"run", "ready_url", "ready_timeout_s"}, sw);
  ServerSpec server;
  if (!s.contains("run")) throw ConfigError(sw + ": missing 'run' (the argv that starts the server)");
  if (s["run"].is_string()) server.run = util::split_words(s["run"].get<std::string>());
  else if (s["run"].is_array()) server.run = util::string_array(s["run"], sw + ".run");
  else throw ConfigError(sw + ".run: must be an argv array or a command string, not " + type_name(s["run"]));
  if (server.run.empty() || server.run[0].empty()) throw ConfigError(sw + ".run: the command is empty");
  if (!s.contains("ready_url") || !s["ready_url"].is_string())
    throw ConfigError(sw +
                      ".ready_url: missing or not a string (the http:// URL that answers 2xx once the server is up)");
  server.ready_url = s["ready_url"].get<std::string>();
  parse_url(server.ready_url, sw + ".ready_url");
  server.ready_timeout_s = positive(s, "ready_timeout_s", sw, 30);
  return server;
}

// A contract check's request: method, headers, body; and whether an added
// field is a drift.
void parse_contract(const Json& j, const std::string& w, CheckSpec& c) {
  if (c.url.empty()) throw ConfigError(w + ": missing 'target'");
  if (j.contains("method")) {
    static const std::vector<std::string> methods{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    if (!j["method"].is_string() ||
        std::find(methods.begin(), methods.end(), j["method"].get<std::string>()) == methods.end())
      throw ConfigError(w + ".method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, not " +
                        j["method"].dump());
    c.method = j["method"].get<std::string>();
  }
  if (j.contains("headers")) {
    if (!j["headers"].is_object()) throw ConfigError(w + ".headers: must be an object of header name -> string");
    for (auto it = j["headers"].begin(); it != j["headers"].end(); ++it) {
      if (!it.value().is_string())
        throw ConfigError(w + ".headers." + it.key() + ": must be a string, not " + type_name(it.value()));
      if (it.key().empty() || it.key().find_first_of(" :\r\n") != std::string::npos ||
          it.value().get<std::string>().find_first_of("\r\n") != std::string::npos)
        throw ConfigError(w + ".headers: invalid header '" + it.key() + "'");
      c.headers.emplace_back(it.key(), it.value().get<std::string>());
    }
  }
  if (j.contains("body")) {
    if (j["body"].is_string()) c.body = j["body"].get<std::string>();
    else if (j["body"].is_object() || j["body"].is_array()) c.body = j["body"].dump();
    else throw ConfigError(w + ".body: must be a string or a JSON object/array, not " + type_name(j["body"]));
  }
  c.strict = boolean(j, "strict", w, false);
}

// A visual check's picture (a URL or a screenshot command) and how near it
// must stay to the baseline.
void parse_visual(const Json& j, const std::string& w, CheckSpec& c) {
  if (j.contains("screenshot")) {
    c.screenshot = util::string_array(j["screenshot"], w + ".screenshot");
    if (c.screenshot.empty() || c.screenshot[0].empty()) throw ConfigError(w + ".screenshot: the command is empty");
    bool has_out = false;
    for (const auto& a : c.screenshot) has_out = has_out || a.find("{out}") != std::string::npos;
    if (!has_out) throw ConfigError(w + ".screenshot: no {out} placeholder (where the command writes the PNG)");
  } else if (c.url.empty()) {
    throw ConfigError(w + ": missing 'target' (a PNG URL, or give 'screenshot')");
  }
  c.tolerance = unit_interval(j, "tolerance", w, 0.1);
  c.max_ratio = unit_interval(j, "max_ratio", w, 0.001);
  c.ignore_anti_aliasing = boolean(j, "ignore_anti_aliasing", w, true);
}

// contract and visual: a URL (or a screenshot command), a server, recording.
void parse_http_check(const Json& j, const std::string& w, CheckSpec& c) {
  if (j.contains("target")) {
    if (!j["target"].is_string() || j["target"].get<std::string>().empty())
      throw ConfigError(w + ".target: must be a URL (string), not " + type_name(j["target"]));
    c.url = j["target"].get<std::string>();
    // A screenshot command gets the target as {url}: any page it can open.
    if (!(c.kind == Kind::kVisual && j.contains("screenshot"))) parse_url(c.url, w + ".target");
  }
  c.path = c.url;
  c.timeout_s = positive(j, "timeout_s", w, c.kind == Kind::kVisual ? 60 : 30);
  if (j.contains("record")) {
    if (!j["record"].is_string() || (j["record"] != "auto" && j["record"] != "never"))
      throw ConfigError(w + ".record: must be \"auto\" or \"never\", not " + j["record"].dump());
    c.record = j["record"] == "auto";
  }
  if (j.contains("server")) {
    c.server = parse_server(j["server"], w + ".server");
    c.has_server = true;
  }
  if (c.kind == Kind::kContract) parse_contract(j, w, c);
  else parse_visual(j, w, c);
}

// command_exit: the argv, the exit code it expects, its time and folder,
// its own tests.
// "select": false | {"runner": WORD, "command": argv} (docs/checks.md,
// "Running some tests again").
void parse_select(const Json& j, const std::string& w, CheckSpec& c) {
  if (!j.contains("select")) return;
  const Json& v = j["select"];
  if (v.is_boolean()) {
    c.select.enabled = v.get<bool>();
    return;
  }
  if (!v.is_object())
    throw ConfigError(w + ".select: must be false or an object {\"runner\": ..., \"command\": [...]}, not " +
                      type_name(v));
  util::reject_unknown_keys(v, {"runner", "command"}, w + ".select");
  if (v.contains("runner")) {
    const Json& r = v["runner"];
    const std::optional<Runner> runner = r.is_string() ? parse_runner(r.get<std::string>()) : std::nullopt;
    if (!runner)
      throw ConfigError(
          w + ".select.runner: " +
          (r.is_string() ? "unknown runner '" + r.get<std::string>() + "'" : "must be a string, not " + type_name(r)) +
          " (known: " + runner_words() + ")");
    c.select.runner = runner;
  }
  if (v.contains("command")) {
    const Json& cmd = v["command"];
    if (cmd.is_string()) c.select.command = util::split_words(cmd.get<std::string>());
    else c.select.command = util::string_array(cmd, w + ".select.command");
    if (c.select.command.empty() || c.select.command[0].empty())
      throw ConfigError(w + ".select.command: the command is empty");
  }
}

void parse_command_exit(const Json& j, const Json& target, const std::string& w, CheckSpec& c) {
  if (target.is_array()) {
    c.argv = util::string_array(target, w + ".target");
  } else if (target.is_string()) {
    c.argv = util::split_words(target.get<std::string>());
  } else {
    throw ConfigError(w + ".target: must be an argv array or a command string, not " + type_name(target));
  }
  if (c.argv.empty() || c.argv[0].empty()) throw ConfigError(w + ".target: the command is empty");
  if (j.contains("expect")) {
    const Json& e = j["expect"];
    if (!e.is_number_integer())
      throw ConfigError(w + ".expect: must be an exit code (integer 0-255), not " + type_name(e));
    long long v = e.get<long long>();
    if (v < 0 || v > 255) throw ConfigError(w + ".expect: exit code " + std::to_string(v) + " is outside 0-255");
    c.expect_exit = static_cast<int>(v);
  }
  if (j.contains("timeout_s")) {
    if (!j["timeout_s"].is_number() || j["timeout_s"].get<double>() <= 0)
      throw ConfigError(w + ".timeout_s: must be a positive number of seconds");
    c.timeout_s = j["timeout_s"].get<double>();
  }
  if (j.contains("cwd")) {
    if (!j["cwd"].is_string()) throw ConfigError(w + ".cwd: must be a string");
    c.cwd = j["cwd"].get<std::string>();
  }
  if (j.contains("tests")) c.tests = util::string_array(j["tests"], w + ".tests");
  if (j.contains("protect_tests")) {
    if (!j["protect_tests"].is_boolean()) throw ConfigError(w + ".protect_tests: must be true or false");
    c.protect_tests = j["protect_tests"].get<bool>();
  }
  parse_select(j, w, c);
  if (j.contains("select_failing")) {
    if (!j["select_failing"].is_boolean())
      throw ConfigError(w + ".select_failing: must be true or false, not " + type_name(j["select_failing"]));
    c.select_failing = j["select_failing"].get<bool>();
  }
}

// file_sha256: the digest the file must have.
void parse_file_sha256(const Json& j, const std::string& w, CheckSpec& c) {
  if (!j.contains("expect")) throw ConfigError(w + ": missing 'expect' (the file's SHA-256, 64 hex digits)");
  if (!j["expect"].is_string())
    throw ConfigError(w + ".expect: must be a SHA-256 string, not " + type_name(j["expect"]));
  std::string e = j["expect"].get<std::string>();
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!is_hex64(e)) throw ConfigError(w + ".expect: '" + j["expect"].get<std::string>() + "' is not 64 hex digits");
  c.expect_sha256 = e;
}

// regex_in_file: the pattern, and whether it must be present or absent.
void parse_regex_in_file(const Json& j, const std::string& w, CheckSpec& c) {
  if (!j.contains("pattern") || !j["pattern"].is_string() || j["pattern"].get<std::string>().empty())
    throw ConfigError(w + ".pattern: missing or not a non-empty string");
  c.pattern = j["pattern"].get<std::string>();
  try {
    std::regex re(c.pattern);
  } catch (const std::regex_error& e) {
    throw ConfigError(w + ".pattern: invalid regular expression '" + c.pattern + "': " + e.what());
  }
  std::string e = "absent";
  if (j.contains("expect")) {
    if (!j["expect"].is_string())
      throw ConfigError(w + ".expect: must be \"present\" or \"absent\", not " + type_name(j["expect"]));
    e = j["expect"].get<std::string>();
  }
  if (e != "present" && e != "absent")
    throw ConfigError(w + ".expect: must be \"present\" or \"absent\", not '" + e + "'");
  c.expect_present = e == "present";
}

// The "kind" field, with a near word suggested for a typo.
Kind parse_kind_field(const Json& j, const std::string& where) {
  if (!j.contains("kind"))
    throw ConfigError(where + ": missing 'kind' (one of command_exit, file_sha256, regex_in_file, contract, visual)");
  if (!j["kind"].is_string()) throw ConfigError(where + ".kind: must be a string, not " + type_name(j["kind"]));
  const std::string word = j["kind"].get<std::string>();
  if (std::optional<Kind> k = parse_kind(word)) return *k;
  std::string near = util::nearest(word, kind_names());
  throw ConfigError(where + ".kind: unknown kind '" + word + "'" +
                    (near.empty() ? " (known: command_exit, file_sha256, regex_in_file, contract, visual)"
                                  : " (did you mean '" + near + "'?)"));
}

// The "id" field; without one (and none required) the check is named by its kind.
std::string parse_id(const Json& j, const std::string& where, bool id_required, Kind kind) {
  if (!j.contains("id")) {
    if (id_required) throw ConfigError(where + ": missing 'id'");
    return kind_name(kind);
  }
  if (!j["id"].is_string() || j["id"].get<std::string>().empty())
    throw ConfigError(where + ".id: must be a non-empty string");
  std::string id = j["id"].get<std::string>();
  if (id.find_first_of(" ,\t\n/") != std::string::npos)
    throw ConfigError(where + ".id: '" + id + "' may not contain spaces, commas or slashes");
  return id;
}

// The "type" field (a failure type), or the kind's default.
std::string parse_type(const Json& j, const std::string& w, Kind kind) {
  if (!j.contains("type")) return default_type(kind);
  if (!j["type"].is_string()) throw ConfigError(w + ".type: must be a string");
  std::string type = j["type"].get<std::string>();
  for (const auto& t : failure_types())
    if (t == type) return type;
  std::string near = util::nearest(type, failure_types());
  throw ConfigError(w + ".type: unknown failure type '" + type + "'" +
                    (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

// A file check's path: file_sha256 and regex_in_file.
void parse_file_check(const Json& j, const Json& target, const std::string& w, CheckSpec& c) {
  if (!target.is_string() || target.get<std::string>().empty())
    throw ConfigError(w + ".target: must be a file path (string), not " + type_name(target));
  c.path = target.get<std::string>();
  if (c.kind == Kind::kFileSha256) parse_file_sha256(j, w, c);
  else parse_regex_in_file(j, w, c);
}

// "cache": true | false | {"env": [...], "max_age_h": N} (docs/measured.md).
void parse_cache(const Json& j, const std::string& w, CheckSpec& c) {
  if (!j.contains("cache")) return;
  const Json& v = j["cache"];
  if (v.is_boolean()) {
    c.cache = v.get<bool>();
    return;
  }
  if (!v.is_object())
    throw ConfigError(w + ".cache: must be true, false or an object {\"env\": [...], \"max_age_h\": N}, not " +
                      type_name(v));
  util::reject_unknown_keys(v, {"env", "max_age_h"}, w + ".cache");
  c.cache = true;
  if (v.contains("env")) c.cache_env = util::string_array(v["env"], w + ".cache.env");
  if (v.contains("max_age_h")) {
    if (!v["max_age_h"].is_number() || v["max_age_h"].get<double>() <= 0)
      throw ConfigError(w + ".cache.max_age_h: must be a positive number of hours, not " + type_name(v["max_age_h"]));
    c.cache_max_age_h = v["max_age_h"].get<double>();
  }
}

}  // namespace

CheckSpec parse_check(const Json& j, const std::string& where, bool id_required) {
  if (!j.is_object()) throw ConfigError(where + ": a check must be a JSON object, not " + type_name(j));
  CheckSpec c;
  c.raw = j;
  c.kind = parse_kind_field(j, where);
  util::reject_unknown_keys(j, keys_for(c.kind), where);
  c.id = parse_id(j, where, id_required, c.kind);
  const std::string& w = where;
  c.type = parse_type(j, w, c.kind);
  if (!j.contains("target") && !(c.kind == Kind::kVisual && j.contains("screenshot")))
    throw ConfigError(w + ": missing 'target'" +
                      std::string(c.kind == Kind::kVisual ? " (a PNG URL, or give 'screenshot')" : ""));
  const Json target = j.contains("target") ? j["target"] : Json();
  if (j.contains("editable")) c.editable = util::string_array(j["editable"], w + ".editable");
  if (is_http(c.kind)) parse_http_check(j, w, c);
  else if (c.kind == Kind::kCommandExit) parse_command_exit(j, target, w, c);
  else parse_file_check(j, target, w, c);
  parse_cache(j, w, c);
  if (j.contains("tests_must_bite")) {
    if (!j["tests_must_bite"].is_boolean()) throw ConfigError(w + ".tests_must_bite: must be true or false");
    c.tests_must_bite = j["tests_must_bite"].get<bool>();
  }
  return c;
}

CheckSpec parse_check_text(const std::string& text) {
  return parse_check(util::parse_json(text, "--check"), "--check", false);
}

Json SenseResult::to_json() const {
  Json j{{"id", id}, {"ok", ok}, {"signal", signal}, {"evidence", evidence}};
  if (!cached.empty()) j["cached"] = cached;
  return j;
}

}  // namespace phoenix::checks
