#include "journal/share_format.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "gitx/repo.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::journal {

using util::Json;

namespace {

constexpr const char* kFormat = "phoenix-journal";

Json opt(const std::optional<long long>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// Field readers for parse(): each names the field when it is missing or of
// the wrong type, so a hand-edited file says exactly what is wrong.
class Fields {
 public:
  Fields(const Json& obj, std::string what) : obj_(obj), what_(std::move(what)) {}
  const Json& need(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) throw Error(what_ + "missing '" + key + "'");
    return *it;
  }
  std::string str(const char* key) const {
    const Json& v = need(key);
    if (!v.is_string()) throw Error(what_ + "'" + key + "' is not a string");
    return v.get<std::string>();
  }
  long long count(const char* key) const {
    const Json& v = need(key);
    if (!v.is_number_integer() || v.get<long long>() < 0)
      throw Error(what_ + "'" + key + "' is not a non-negative integer");
    return v.get<long long>();
  }
  std::optional<long long> opt_count(const char* key) const {
    if (need(key).is_null()) return std::nullopt;
    return count(key);
  }
  std::optional<double> opt_amount(const char* key) const {
    const Json& v = need(key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number() || v.get<double>() < 0)
      throw Error(what_ + "'" + key + "' is not null or a non-negative number");
    return v.get<double>();
  }

 private:
  const Json& obj_;
  std::string what_;
};

Entry parse_entry(const Json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + "not a JSON object");
  Fields f(j, what);
  Entry e;
  e.signature = f.str("signature");
  if (!is_lower_hex(e.signature, 64)) throw Error(what + "'signature' is not 64 lowercase hex digits");
  e.patch_hash = f.str("patch_hash");
  if (!is_lower_hex(e.patch_hash, 64)) throw Error(what + "'patch_hash' is not 64 lowercase hex digits");
  e.check = f.str("check");
  if (e.check.empty()) throw Error(what + "'check' is empty");
  e.failure_type = f.str("failure_type");
  e.fixer = f.str("fixer");
  e.patch = f.str("patch");
  if (e.patch.empty()) throw Error(what + "'patch' is empty");
  if (patch_hash(e.patch) != e.patch_hash) throw Error(what + "'patch_hash' does not match the patch");
  try {
    if (gitx::Repo::patch_files(e.patch).empty()) throw Error("it changes no file");
  } catch (const Error& ex) { throw Error(what + "'patch' is not a git patch: " + ex.what()); }
  const Json& files = f.need("files");
  if (!files.is_array()) throw Error(what + "'files' is not an array");
  for (const auto& p : files) {
    if (!p.is_string()) throw Error(what + "'files' holds a non-string");
    e.files.push_back(p.get<std::string>());
  }
  e.duration_ms = f.opt_count("duration_ms");
  e.verify_ms = f.opt_count("verify_ms");
  e.model_calls = f.opt_count("model_calls");
  e.cost_usd = f.opt_amount("cost_usd");
  const Json& tallies = f.need("tallies");
  if (!tallies.is_object() || tallies.empty()) throw Error(what + "'tallies' is not a non-empty object");
  for (auto it = tallies.begin(); it != tallies.end(); ++it) {
    if (!is_lower_hex(it.key(), 32))
      throw Error(what + "tally origin '" + it.key() + "' is not 32 lowercase hex digits");
    if (!it.value().is_object()) throw Error(what + "tally '" + it.key() + "' is not an object");
    Fields t(it.value(), what + "tally " + it.key().substr(0, 8) + ": ");
    Tally& out = e.tallies[it.key()];
    out.attempts = t.count("attempts");
    out.successes = t.count("successes");
    out.failures = t.count("failures");
    out.replays = t.count("replays");
    out.first_seen = t.count("first_seen");
    out.last_seen = t.count("last_seen");
    out.last_verified = t.count("last_verified");
    out.last_failed = t.count("last_failed");
    out.last_failure = t.str("last_failure");
  }
  e.recompute();
  return e;
}

}  // namespace

std::string serialize(std::vector<Entry> entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.signature, a.patch_hash) < std::tie(b.signature, b.patch_hash);
  });
  std::string out =
      util::canonical(Json{{"format", kFormat}, {"version", kShareVersion}, {"entries", entries.size()}}) + "\n";
  for (const auto& e : entries) {
    Json tallies = Json::object();
    for (const auto& [origin, t] : e.tallies)
      tallies[origin] = {{"attempts", t.attempts},           {"successes", t.successes},
                         {"failures", t.failures},           {"replays", t.replays},
                         {"first_seen", t.first_seen},       {"last_seen", t.last_seen},
                         {"last_verified", t.last_verified}, {"last_failed", t.last_failed},
                         {"last_failure", t.last_failure}};
    Json j = {{"signature", e.signature},
              {"patch_hash", e.patch_hash},
              {"check", e.check},
              {"failure_type", e.failure_type},
              {"fixer", e.fixer},
              {"files", e.files},
              {"patch", e.patch},
              {"duration_ms", opt(e.duration_ms)},
              {"verify_ms", opt(e.verify_ms)},
              {"model_calls", opt(e.model_calls)},
              {"cost_usd", opt(e.cost_usd)},
              {"tallies", tallies}};
    out += util::canonical(j) + "\n";
  }
  return out;
}

std::vector<Entry> parse(const std::string& text, const std::string& where) {
  const std::vector<std::string> lines = util::split_lines(text);
  if (lines.empty()) throw Error(where + ": empty file");
  auto json_line = [&](size_t i) {
    try {
      return Json::parse(lines[i]);
    } catch (const std::exception&) { throw Error(where + ": line " + std::to_string(i + 1) + ": not JSON"); }
  };
  Json header = json_line(0);
  auto field = [&](const char* key) { return header.is_object() && header.contains(key) ? header[key] : Json(); };
  if (!header.is_object() || field("format") != kFormat)
    throw Error(where + ": line 1: not a Phoenix journal header (expected {\"format\":\"" + kFormat + "\",...})");
  Json version = field("version");
  if (!version.is_number_integer() || version.get<long long>() < 1)
    throw Error(where + ": line 1: 'version' is not a positive integer");
  if (version.get<long long>() > kShareVersion)
    throw Error(where + " was written by a newer Phoenix (format version " + std::to_string(version.get<long long>()) +
                "; this one reads " + std::to_string(kShareVersion) + "): upgrade Phoenix");
  Json count = field("entries");
  if (!count.is_number_integer() || count.get<long long>() < 0)
    throw Error(where + ": line 1: 'entries' is not a non-negative integer");
  std::vector<Entry> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string what = where + ": line " + std::to_string(i + 1) + ": ";
    Entry e = parse_entry(json_line(i), what);
    if (!seen.insert({e.signature, e.patch_hash}).second)
      throw Error(what + "entry " + util::sha12(e.signature) + " with this patch appears twice");
    out.push_back(std::move(e));
  }
  if (static_cast<long long>(out.size()) != count.get<long long>())
    throw Error(where + ": the header announces " + std::to_string(count.get<long long>()) + " entries but " +
                std::to_string(out.size()) + " follow (cut short?)");
  return out;
}

}  // namespace phoenix::journal
