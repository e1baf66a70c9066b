// The measurement store: see checks/measured.h. Part of phoenix_lite.
#include "checks/measured.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/text.h"

namespace phoenix::checks {

namespace fs = std::filesystem;
using util::Json;

Json MeasureKey::to_json() const {
  return Json{{"check", check}, {"setup", setup}, {"env", env}, {"version", version}};
}

bool MeasureKey::operator==(const MeasureKey& o) const {
  return tree == o.tree && check == o.check && setup == o.setup && env == o.env && version == o.version;
}

MeasureKey measure_key(const CheckSpec& spec, const std::string& tree, const std::string& setup) {
  MeasureKey k;
  k.tree = tree;
  k.check = spec.raw.dump();  // nlohmann's objects keep their keys sorted
  k.setup = setup;
  for (const std::string& name : spec.cache_env) {
    const char* v = std::getenv(name.c_str());
    k.env[name] = v ? v : "";
  }
  k.version = PHOENIX_VERSION;
  return k;
}

bool cache_wanted(const CheckSpec& spec) { return spec.cache.value_or(spec.kind == Kind::kCommandExit); }

bool cache_disabled_by_env() {
  const char* v = std::getenv(kNoCacheEnv);
  return v && *v && std::string(v) != "0";
}

std::string measured_file_name(const std::string& tree) { return tree + ".json"; }

namespace {

Measurement parse_record(const std::string& tree, const Json& j) {
  Measurement m;
  const Json& k = j.at("key");
  m.key.tree = tree;
  m.key.check = k.at("check").get<std::string>();
  m.key.setup = k.at("setup").get<std::string>();
  m.key.env = k.at("env").get<std::map<std::string, std::string>>();
  m.key.version = k.at("version").get<std::string>();
  m.result.id = j.at("id").get<std::string>();
  m.result.ok = j.value("ok", true);
  m.result.signal = j.at("signal").get<std::string>();
  m.result.evidence = j.at("evidence").get<std::string>();
  m.result.output = m.result.evidence;
  m.result.duration_ms = j.at("duration_ms").get<long long>();
  m.at_ms = j.at("at_ms").get<long long>();
  m.where = j.at("where").get<std::string>();
  m.trace_seq = j.at("trace_seq").get<long long>();
  m.origin = j.value("origin", "");
  if (j.contains("failing") && j["failing"].is_array())
    for (const Json& t : j["failing"]) m.failing.push_back(t.get<std::string>());
  m.signature = j.value("signature", "");
  return m;
}

Json record_json(const Measurement& m) {
  Json j{{"key", m.key.to_json()},
         {"id", m.result.id},
         {"signal", m.result.signal},
         {"evidence", std::string(util::utf8_tail(m.result.evidence, 4096))},
         {"duration_ms", m.result.duration_ms},
         {"at_ms", m.at_ms},
         {"where", m.where},
         {"trace_seq", m.trace_seq},
         {"origin", m.origin}};
  if (!m.result.ok) {
    j["ok"] = false;
    j["failing"] = m.failing;
    j["signature"] = m.signature;
  }
  return j;
}

// The records of one tree's file; a file that does not parse is said once
// per process and removed.
std::vector<Measurement> read_tree(const std::string& dir, const std::string& tree) {
  const std::string path = dir + "/" + measured_file_name(tree);
  // A tree not measured yet is no exception: phoenix-hook's green path
  // throws none (its first throw sorts the static binary's unwind tables).
  std::optional<std::string> text;
  try {
    text = util::read_file_if_exists(path);
  } catch (const std::exception&) {}
  if (!text) return {};
  try {
    return parse_measured(tree, *text);
  } catch (const std::exception&) {
    static std::atomic<bool> warned{false};
    // stdio, not std::cerr: phoenix-hook starts no C++ stream.
    const std::string line =
        "phoenix: warning: " + path + ": measurement store record does not parse; ignored and rebuilt\n";
    if (!warned.exchange(true)) std::fputs(line.c_str(), stderr);
    ::unlink(path.c_str());
    return {};
  }
}

}  // namespace

std::vector<Measurement> measured_from_json(const std::string& tree, const Json& doc) {
  if (doc.at("version").get<int>() != kMeasuredVersion) throw std::runtime_error("unknown version");
  std::vector<Measurement> out;
  for (const Json& r : doc.at("records")) out.push_back(parse_record(tree, r));
  return out;
}

Json measured_to_json(const std::vector<Measurement>& records) {
  Json a = Json::array();
  for (const auto& m : records) a.push_back(record_json(m));
  return Json{{"version", kMeasuredVersion}, {"records", a}};
}

std::vector<Measurement> parse_measured(const std::string& tree, const std::string& text) {
  return measured_from_json(tree, Json::parse(text));
}

std::string format_measured(const std::vector<Measurement>& records) {
  return measured_to_json(records).dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

bool is_tree_id(const std::string& s) {
  return (s.size() == 40 || s.size() == 64) &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

long long merge_measurements(const std::string& dir, const std::vector<Measurement>& records) {
  std::map<std::string, std::vector<const Measurement*>> by_tree;
  for (const auto& m : records)
    if (is_tree_id(m.key.tree) && m.result.ok) by_tree[m.key.tree].push_back(&m);
  long long added = 0;
  for (const auto& [tree, theirs] : by_tree) {
    std::vector<Measurement> mine = read_tree(dir, tree);
    const size_t before = mine.size();
    for (const Measurement* m : theirs)
      if (std::none_of(mine.begin(), mine.end(), [&](const Measurement& r) { return r.key == m->key; }))
        mine.push_back(*m);
    if (mine.size() == before) continue;
    added += static_cast<long long>(mine.size() - before);
    fs::create_directories(dir);
    util::write_file_atomic(dir + "/" + measured_file_name(tree), format_measured(mine), 0644, util::Sync::kAtomic);
  }
  return added;
}

std::optional<Measurement> find_measurement(const std::string& dir, const MeasureKey& key, double max_age_h) {
  if (key.tree.empty()) return std::nullopt;
  for (Measurement& m : read_tree(dir, key.tree)) {
    if (!m.result.ok || !(m.key == key)) continue;
    if (max_age_h > 0 && util::now_ms() - m.at_ms > static_cast<long long>(max_age_h * 3600 * 1000)) continue;
    return std::move(m);
  }
  return std::nullopt;
}

std::optional<Measurement> find_reference(const std::string& dir, const std::string& tree, const std::string& check) {
  if (!is_tree_id(tree)) return std::nullopt;
  std::optional<Measurement> best;
  for (Measurement& m : read_tree(dir, tree))
    if (m.key.check == check && (!best || m.at_ms >= best->at_ms)) best = std::move(m);
  return best;
}

void record_measurement(const std::string& dir, const Measurement& m) {
  if (!is_tree_id(m.key.tree)) return;
  try {
    std::vector<Measurement> records = read_tree(dir, m.key.tree);
    records.erase(std::remove_if(records.begin(), records.end(), [&](const Measurement& r) { return r.key == m.key; }),
                  records.end());
    records.push_back(m);
    fs::create_directories(dir);
    util::write_file_atomic(dir + "/" + measured_file_name(m.key.tree), format_measured(records), 0644,
                            util::Sync::kAtomic);
  } catch (const std::exception&) {
    // best effort: the next measurement of this key runs again
  }
}

SenseResult served(const Measurement& m) {
  SenseResult r = m.result;
  const std::time_t t = static_cast<std::time_t>(m.at_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char hhmm[8];
  std::strftime(hhmm, sizeof hhmm, "%H:%M", &tm);
  r.cached = "measured " + std::string(hhmm) + " in " + m.where +
             (m.trace_seq >= 0 ? ", trace #" + std::to_string(m.trace_seq) : std::string()) +
             (m.origin.empty() ? std::string() : ", pulled from " + m.origin);
  r.duration_ms = 0;
  return r;
}

namespace {
std::string commit_note(const std::string& dir, const std::string& commit) { return dir + "/commits/" + commit; }
}  // namespace

std::string known_tree(const std::string& dir, const std::string& commit) {
  if (!is_tree_id(commit)) return "";
  std::optional<std::string> note;
  try {
    note = util::read_file_if_exists(commit_note(dir, commit));
  } catch (const std::exception&) { return ""; }
  const std::string text = note ? util::trim(*note) : "";
  return is_tree_id(text) && text.size() == commit.size() ? text : "";
}

void remember_tree(const std::string& dir, const std::string& commit, const std::string& tree) {
  if (!is_tree_id(commit) || !is_tree_id(tree) || known_tree(dir, commit) == tree) return;
  try {
    fs::create_directories(dir + "/commits");
    util::write_file_atomic(commit_note(dir, commit), tree + "\n", 0644, util::Sync::kAtomic);
  } catch (const std::exception&) {
    // best effort: the next push of this commit asks git
  }
}

std::vector<Measurement> all_measurements(const std::string& dir) {
  std::vector<Measurement> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!util::ends_with(name, ".json") || !is_tree_id(name.substr(0, name.size() - 5))) continue;
    for (Measurement& m : read_tree(dir, name.substr(0, name.size() - 5)))
      if (m.result.ok) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace phoenix::checks
