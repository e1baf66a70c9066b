#include "journal/measured_share.h"

#include <map>

#include "checks/measured.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/json.h"

namespace phoenix::journal {

using util::Json;

namespace {

std::string serialize(const std::vector<checks::Measurement>& records) {
  std::map<std::string, std::vector<checks::Measurement>> by_tree;
  for (const auto& m : records) by_tree[m.key.tree].push_back(m);
  Json trees = Json::object();
  for (const auto& [tree, ms] : by_tree) trees[tree] = checks::measured_to_json(ms);
  return Json{{"version", checks::kMeasuredVersion}, {"trees", trees}}.dump(1, ' ', false,
                                                                             Json::error_handler_t::replace) +
         "\n";
}

// The records of the remote's commit (fetched into layout::kMeasuredRemoteRef).
std::vector<checks::Measurement> read_remote(gitx::Repo& repo, const std::string& remote) {
  const std::string where = "the measurements of remote '" + remote + "' (" + layout::kMeasuredRef + ")";
  try {
    std::optional<std::string> text = repo.read_blob_at(layout::kMeasuredRemoteRef, kMeasuredShareFile);
    if (!text) throw Error(std::string("its commit has no ") + kMeasuredShareFile);
    const Json doc = Json::parse(*text);
    if (doc.at("version").get<int>() != checks::kMeasuredVersion) throw Error("unknown version");
    std::vector<checks::Measurement> out;
    for (const auto& [tree, records] : doc.at("trees").items()) {
      if (!checks::is_tree_id(tree)) throw Error("'" + tree + "' is not a tree id");
      for (auto& m : checks::measured_from_json(tree, records)) out.push_back(std::move(m));
    }
    return out;
  } catch (const std::exception& e) {
    throw Error(where + " do not read: " + e.what() + "; nothing was merged");
  }
}

}  // namespace

MeasuredShare push_measured(const std::string& store, const std::string& repo_root, const std::string& remote,
                            const TransportOptions& options) {
  gitx::Repo repo = gitx::Repo::open(repo_root);
  MeasuredShare result;
  std::optional<std::string> tip =
      fetch_shared(repo, repo_root, remote, layout::kMeasuredRef, layout::kMeasuredRemoteRef, options);
  std::vector<checks::Measurement> all;
  if (tip) all = read_remote(repo, remote);
  result.found = tip.has_value();
  const std::string before = tip ? serialize(all) : "";
  for (const auto& m : checks::all_measurements(store)) {
    bool have = false;
    for (const auto& r : all) have = have || (r.key == m.key);
    if (!have) all.push_back(m);
  }
  result.records = static_cast<long long>(all.size());
  const std::string content = serialize(all);
  if (all.empty() || content == before) return result;
  std::vector<std::string> parents;
  if (tip) parents.push_back(*tip);
  repo.write_blob_commit(layout::kMeasuredRef, kMeasuredShareFile, content,
                         "phoenix measured: " + std::to_string(result.records) + " green measurements\n", parents);
  push_shared(repo_root, remote, layout::kMeasuredRef, options);
  result.pushed = true;
  return result;
}

MeasuredShare pull_measured(const std::string& store, const std::string& repo_root, const std::string& remote,
                            const TransportOptions& options) {
  gitx::Repo repo = gitx::Repo::open(repo_root);
  MeasuredShare result;
  if (!fetch_shared(repo, repo_root, remote, layout::kMeasuredRef, layout::kMeasuredRemoteRef, options)) return result;
  result.found = true;
  std::vector<checks::Measurement> theirs = read_remote(repo, remote);
  result.records = static_cast<long long>(theirs.size());
  for (auto& m : theirs)
    if (m.origin.empty()) m.origin = remote;
  result.added = checks::merge_measurements(store, theirs);
  return result;
}

}  // namespace phoenix::journal
