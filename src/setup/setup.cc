#include "setup/setup.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "gitx/repo.h"
#include "setup/guard.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/glob.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/format.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::setup {

namespace {

constexpr size_t kEvidenceBytes = 4000;
constexpr size_t kEvidenceTailLines = 20;
constexpr size_t kEvidenceErrorLines = 5;

// A line that reads as a tool's own error: "npm ERR! code E404",
// "error: ...", "fatal: ...", "E: Unable to locate package".
bool reads_as_error(const std::string& line) {
  const std::string low = util::lower(line);
  for (const char* w : {"error", "err!", "fatal", "failed", "cannot", "not found", "no such", "denied"})
    if (low.find(w) != std::string::npos) return true;
  return util::starts_with(line, "E: ");
}

// A failed step's evidence: the first lines that read as errors (the
// tool's own message, often far above the end), then the tail.
std::string step_evidence(const std::string& output) {
  const std::vector<std::string> lines = util::split_lines(output);
  size_t from = lines.size() > kEvidenceTailLines ? lines.size() - kEvidenceTailLines : 0;
  size_t tail_bytes = 0;
  for (size_t i = lines.size(); i > from; --i) {
    tail_bytes += lines[i - 1].size() + 1;
    if (tail_bytes > kEvidenceBytes) {
      from = i;
      break;
    }
  }
  std::string out;
  size_t errors = 0;
  for (size_t i = 0; i < from && errors < kEvidenceErrorLines; ++i)
    if (reads_as_error(lines[i])) {
      out += lines[i].substr(0, 400) + "\n";
      ++errors;
    }
  if (from > 0) out += "... (" + std::to_string(from) + " lines above)\n";
  for (size_t i = from; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// The files of `tree` a step could read: what git lists there (tracked, or
// untracked and not ignored). A tree that is not a repository is walked,
// without .git and node_modules.
std::vector<std::string> candidate_files(const std::string& tree) {
  try {
    gitx::Repo repo = gitx::Repo::open(tree);
    return repo.listed_files();
  } catch (const std::exception&) {}
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(tree, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec) && (name == ".git" || name == "node_modules")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(fs::relative(it->path(), tree, ec).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe(const config::SetupStep& s) { return util::join_argv(s.run); }

// The untracked (not ignored) top-level entries of `tree`, when it is a
// repository: what a setup adds there that git does not ignore (a build
// folder missing from .gitignore) is gone after the next move of a
// persistent worktree, which deletes untracked files.
std::set<std::string> untracked_tops(const std::string& tree) {
  std::set<std::string> out;
  try {
    gitx::Repo repo = gitx::Repo::open(tree);
    for (const std::string& p : repo.untracked_files()) out.insert(p.substr(0, p.find('/')));
  } catch (const std::exception&) {}
  return out;
}

}  // namespace

std::string fingerprint(const std::vector<config::SetupStep>& steps, const std::string& tree) {
  util::Sha256 h;
  h.update("phoenix-setup-v1\n");
  std::vector<std::string> globs;
  for (const auto& s : steps) {
    h.update(util::Json(s.run).dump() + "\n" + util::Json(s.inputs).dump() + "\n");
    globs.insert(globs.end(), s.inputs.begin(), s.inputs.end());
  }
  if (globs.empty()) return h.hex();
  for (const std::string& rel : candidate_files(tree)) {
    if (!util::glob_match_any(globs, rel)) continue;
    std::string content_hash;
    try {
      content_hash = util::sha256_file(tree + "/" + rel);
    } catch (const Error&) {
      content_hash = "unreadable";  // a dangling link, a folder: its name still counts
    }
    h.update(rel + std::string(1, '\0') + content_hash + "\n");
  }
  return h.hex();
}

Result ensure(const std::vector<config::SetupStep>& steps, const std::string& tree, const std::string& stamp_file,
              const std::function<void(util::ProcessOptions&)>& confine,
              const std::function<void(const config::SetupStep&)>& on_step) {
  Result r;
  if (steps.empty()) return r;
  // Without a stamp the steps always run, and nothing needs hashing.
  if (!stamp_file.empty()) r.fingerprint = fingerprint(steps, tree);
  std::error_code ec;
  if (!stamp_file.empty() && fs::exists(stamp_file, ec)) {
    try {
      util::Json stamp = util::parse_json(util::read_file(stamp_file), stamp_file);
      bool products_there = true;
      for (const auto& p : stamp.value("untracked_products", std::vector<std::string>{}))
        products_there = products_there && fs::exists(fs::path(tree) / p, ec);
      if (stamp.is_object() && stamp.value("fingerprint", "") == r.fingerprint && products_there) return r;
    } catch (const Error&) {
      // An unreadable stamp is no stamp: the steps run again.
    }
  }
  if (!stamp_file.empty()) {
    fs::remove(stamp_file, ec);
    fs::create_directories(fs::path(stamp_file).parent_path(), ec);
    if (ec) throw Error("cannot create " + fs::path(stamp_file).parent_path().string() + ": " + ec.message());
  }
  r.ran = true;
  const std::set<std::string> untracked_before = stamp_file.empty() ? std::set<std::string>{} : untracked_tops(tree);
  const Guard guard(tree);
  for (const auto& step : steps) {
    if (on_step) on_step(step);
    util::ProcessOptions po;
    po.argv = step.run;
    po.cwd = tree;
    po.timeout_s = step.timeout_s;
    if (confine) confine(po);
    util::ProcessResult pr = util::run_process(po);
    // Put back before the next step runs, and before anything is measured.
    for (std::string& line : guard.restore("setup")) r.put_back.push_back(std::move(line));
    r.duration_ms += pr.duration_ms;
    if (pr.interrupted) {
      r.ok = false;
      r.interrupted = true;
      r.step = describe(step);
      r.signal = "setup interrupted: " + r.step;
      return r;
    }
    if (pr.exit_code == 0 && !pr.timed_out) continue;
    r.ok = false;
    r.step = describe(step);
    std::string why = pr.not_found        ? "not found"
                      : pr.not_executable ? "not executable"
                      : pr.timed_out      ? "timeout after " + util::Json(step.timeout_s).dump() + " s"
                                          : "exit=" + std::to_string(pr.exit_code);
    r.signal = "setup failed: " + r.step + ": " + why;
    r.evidence = step_evidence(pr.output);
    return r;
  }
  if (!stamp_file.empty()) {
    std::vector<std::string> products;
    for (const std::string& p : untracked_tops(tree))
      if (!untracked_before.count(p)) products.push_back(p);
    util::write_file_atomic(stamp_file, util::Json{{"version", 1},
                                                   {"fingerprint", r.fingerprint},
                                                   {"tree", tree},
                                                   {"untracked_products", products},
                                                   {"at", util::now_iso8601()}}
                                                .dump() +
                                            "\n");
  }
  return r;
}

}  // namespace phoenix::setup
