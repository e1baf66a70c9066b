#include "journal/share.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "gitx/repo.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::journal {

using util::Json;

namespace {

constexpr const char* kFormat = "phoenix-journal";

bool is_hex_of(const std::string& s, size_t n) {
  return s.size() == n &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

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
    if (!v.is_number() || v.get<double>() < 0) throw Error(what_ + "'" + key + "' is not null or a non-negative number");
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
  if (!is_hex_of(e.signature, 64)) throw Error(what + "'signature' is not 64 lowercase hex digits");
  e.patch_hash = f.str("patch_hash");
  if (!is_hex_of(e.patch_hash, 64)) throw Error(what + "'patch_hash' is not 64 lowercase hex digits");
  e.check = f.str("check");
  if (e.check.empty()) throw Error(what + "'check' is empty");
  e.failure_type = f.str("failure_type");
  e.fixer = f.str("fixer");
  e.patch = f.str("patch");
  if (e.patch.empty()) throw Error(what + "'patch' is empty");
  if (patch_hash(e.patch) != e.patch_hash) throw Error(what + "'patch_hash' does not match the patch");
  try {
    if (gitx::Repo::patch_files(e.patch).empty()) throw Error("it changes no file");
  } catch (const Error& ex) {
    throw Error(what + "'patch' is not a git patch: " + ex.what());
  }
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
    if (!is_hex_of(it.key(), 32)) throw Error(what + "tally origin '" + it.key() + "' is not 32 lowercase hex digits");
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

// The last part of a child's output, for an error message.
std::string output_tail(const std::string& out) {
  std::string t = util::trim(util::to_valid_utf8(out));
  if (t.size() > 800) t = "..." + t.substr(t.size() - 800);
  for (char& c : t)
    if (c == '\n') c = ' ';
  return t.empty() ? "no output" : t;
}

util::ProcessResult git(const std::string& root, std::vector<std::string> args, const TransportOptions& options) {
  util::ProcessOptions o;
  o.argv = {"git"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = root;
  o.timeout_s = options.timeout_s;
  // stdin is /dev/null and the output is captured: a password prompt could
  // never be answered, so git fails at once instead of waiting for one.
  o.env["GIT_TERMINAL_PROMPT"] = "0";
  util::ProcessResult r = util::run_process(o);
  if (r.not_found) throw Error("git is not installed: phoenix journal push and pull use it to reach the remote");
  if (r.interrupted) throw Error("interrupted while running git " + args[0], kExitInterrupted);
  if (r.timed_out)
    throw Error("git " + args[0] + " did not finish within " + std::to_string(static_cast<int>(options.timeout_s)) + " s");
  return r;
}

void check_remote(const std::string& remote) {
  if (remote.empty() || remote[0] == '-') throw UsageError("journal: '" + remote + "' is not a remote name or URL");
}

// The remote's journal commit, fetched into kShareRemoteRef; nullopt when
// the remote has no journal yet.
std::optional<std::string> fetch_remote(gitx::Repo& repo, const std::string& root, const std::string& remote,
                                        const TransportOptions& options) {
  util::ProcessResult ls = git(root, {"ls-remote", "--exit-code", remote, kShareRef}, options);
  if (ls.exit_code == 2) return std::nullopt;  // reachable, no such ref
  if (ls.exit_code != 0)
    throw Error("cannot reach remote '" + remote + "': git ls-remote exited " + std::to_string(ls.exit_code) + ": " +
                output_tail(ls.output));
  // ls-remote matches patterns against the tail of ref names: insist on the exact one.
  bool exact = false;
  for (const auto& line : util::split_lines(ls.output))
    exact = exact || util::ends_with(util::trim(line), std::string("\t") + kShareRef);
  if (!exact) return std::nullopt;
  util::ProcessResult f = git(root,
                              {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                               std::string("+") + kShareRef + ":" + kShareRemoteRef},
                              options);
  if (f.exit_code != 0)
    throw Error("cannot fetch " + std::string(kShareRef) + " from '" + remote + "': git fetch exited " +
                std::to_string(f.exit_code) + ": " + output_tail(f.output));
  return repo.read_ref(kShareRemoteRef);
}

// The remote's entries and the file's bytes, validated; `consequence` ends
// every error ("nothing was merged").
std::pair<std::vector<Entry>, std::string> read_remote(gitx::Repo& repo, const std::string& remote,
                                                       const std::string& consequence) {
  const std::string where = "the journal of remote '" + remote + "' (" + kShareRef + ")";
  std::optional<std::string> text;
  try {
    text = repo.read_blob_at(kShareRemoteRef, kShareFile);
  } catch (const Error& e) {
    throw Error(where + " is not a Phoenix journal: " + e.what() + "; " + consequence);
  }
  if (!text)
    throw Error(where + " is not a Phoenix journal: its commit has no " + kShareFile + "; " + consequence);
  try {
    return {parse(*text, where), *text};
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; " + consequence);
  }
}

}  // namespace

std::string serialize(std::vector<Entry> entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.signature, a.patch_hash) < std::tie(b.signature, b.patch_hash);
  });
  std::string out = util::canonical(Json{{"format", kFormat}, {"version", kShareVersion}, {"entries", entries.size()}}) + "\n";
  for (const auto& e : entries) {
    Json tallies = Json::object();
    for (const auto& [origin, t] : e.tallies)
      tallies[origin] = {{"attempts", t.attempts},         {"successes", t.successes},     {"failures", t.failures},
                         {"replays", t.replays},           {"first_seen", t.first_seen},   {"last_seen", t.last_seen},
                         {"last_verified", t.last_verified}, {"last_failed", t.last_failed}, {"last_failure", t.last_failure}};
    Json j = {{"signature", e.signature},       {"patch_hash", e.patch_hash},   {"check", e.check},
              {"failure_type", e.failure_type}, {"fixer", e.fixer},             {"files", e.files},
              {"patch", e.patch},               {"duration_ms", opt(e.duration_ms)}, {"verify_ms", opt(e.verify_ms)},
              {"model_calls", opt(e.model_calls)}, {"cost_usd", opt(e.cost_usd)}, {"tallies", tallies}};
    out += util::canonical(j) + "\n";
  }
  return out;
}

std::vector<Entry> parse(const std::string& text, const std::string& where) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (lines.empty()) throw Error(where + ": empty file");
  auto json_line = [&](size_t i) {
    try {
      return Json::parse(lines[i]);
    } catch (const std::exception&) {
      throw Error(where + ": line " + std::to_string(i + 1) + ": not JSON");
    }
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
      throw Error(what + "entry " + e.signature.substr(0, 12) + " with this patch appears twice");
    out.push_back(std::move(e));
  }
  if (static_cast<long long>(out.size()) != count.get<long long>())
    throw Error(where + ": the header announces " + std::to_string(count.get<long long>()) + " entries but " +
                std::to_string(out.size()) + " follow (cut short?)");
  return out;
}

PushResult push(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options) {
  check_remote(remote);
  gitx::Repo repo = gitx::Repo::open(repo_root);
  PushResult result;
  std::optional<std::string> tip = fetch_remote(repo, repo_root, remote, options);
  std::map<std::pair<std::string, std::string>, Entry> merged;
  std::string their_text;
  if (tip) {
    auto [theirs, text] = read_remote(repo, remote, "nothing was pushed");
    their_text = std::move(text);
    for (auto& e : theirs) merged.emplace(std::make_pair(e.signature, e.patch_hash), std::move(e));
  }
  std::set<std::pair<std::string, std::string>> mine;
  for (const Entry& e : journal.export_entries()) {
    auto key = std::make_pair(e.signature, e.patch_hash);
    mine.insert(key);
    auto it = merged.find(key);
    if (it != merged.end()) it->second = merge_entries(it->second, e);  // the published facts stay
    else if (e.verified) merged.emplace(key, e);
  }
  for (const auto& [key, e] : merged) result.from_remote += mine.count(key) ? 0 : 1;
  std::vector<Entry> all;
  for (auto& [key, e] : merged) all.push_back(std::move(e));
  result.entries = static_cast<long long>(all.size());
  if (!tip && all.empty()) return result;  // nothing verified anywhere: no commit, no push
  std::string content = serialize(std::move(all));
  if (tip && content == their_text) {
    result.commit = *tip;
    return result;  // the remote already has everything
  }
  std::vector<std::string> parents;
  if (tip) parents.push_back(*tip);
  result.commit = repo.write_blob_commit(kShareRef, kShareFile, content,
                                         "phoenix journal: " + std::to_string(result.entries) + " verified fixes\n",
                                         parents);
  // Not forced: the new commit sits on top of the tip just fetched, so this
  // is a fast-forward unless someone pushed meanwhile, and then their fixes
  // must not be overwritten.
  util::ProcessResult p = git(repo_root, {"push", "--quiet", remote, std::string(kShareRef) + ":" + kShareRef}, options);
  if (p.exit_code != 0) {
    std::string out = p.output;
    bool raced = out.find("rejected") != std::string::npos || out.find("non-fast-forward") != std::string::npos ||
                 out.find("fetch first") != std::string::npos;
    throw Error("cannot push " + std::string(kShareRef) + " to '" + remote + "'" +
                (raced ? ": its journal changed while pushing; run 'phoenix journal push' again"
                       : ": git push exited " + std::to_string(p.exit_code) + ": " + output_tail(out)));
  }
  result.pushed = true;
  return result;
}

PullResult pull(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options) {
  check_remote(remote);
  gitx::Repo repo = gitx::Repo::open(repo_root);
  PullResult result;
  std::optional<std::string> tip = fetch_remote(repo, repo_root, remote, options);
  if (!tip) return result;
  result.found = true;
  result.commit = *tip;
  auto [theirs, text] = read_remote(repo, remote, "the local journal is untouched");
  result.entries = static_cast<long long>(theirs.size());
  result.merged = journal.merge(theirs);
  return result;
}

}  // namespace phoenix::journal
