#include "journal/share.h"

#include <map>
#include <set>
#include <utility>

#include "gitx/remote.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::journal {

namespace {

util::ProcessResult git(const std::string& root, const std::vector<std::string>& args,
                        const TransportOptions& options) {
  return gitx::run_git(root, args, options.timeout_s, "phoenix journal push and pull use it to reach the remote");
}

void check_remote(const std::string& remote) {
  if (!gitx::is_remote_name(remote)) throw UsageError("journal: '" + remote + "' is not a remote name or URL");
}

// The remote's entries and the file's bytes, validated; `consequence` ends
// every error ("nothing was merged").
std::pair<std::vector<Entry>, std::string> read_remote(gitx::Repo& repo, const std::string& remote,
                                                       const std::string& consequence) {
  const std::string where = "the journal of remote '" + remote + "' (" + layout::kJournalRef + ")";
  std::optional<std::string> text;
  try {
    text = repo.read_blob_at(layout::kJournalRemoteRef, kShareFile);
  } catch (const Error& e) { throw Error(where + " is not a Phoenix journal: " + e.what() + "; " + consequence); }
  if (!text) throw Error(where + " is not a Phoenix journal: its commit has no " + kShareFile + "; " + consequence);
  try {
    return {parse(*text, where), *text};
  } catch (const Error& e) { throw Error(std::string(e.what()) + "; " + consequence); }
}

}  // namespace

std::optional<std::string> fetch_shared(gitx::Repo& repo, const std::string& root, const std::string& remote,
                                        const std::string& ref, const std::string& local_ref,
                                        const TransportOptions& options) {
  util::ProcessResult ls = git(root, {"ls-remote", "--exit-code", remote, ref}, options);
  if (ls.exit_code == 2) return std::nullopt;  // reachable, no such ref
  if (ls.exit_code != 0)
    throw Error("cannot reach remote '" + remote + "': git ls-remote exited " + std::to_string(ls.exit_code) + ": " +
                gitx::git_output_tail(ls.output));
  // ls-remote matches patterns against the tail of ref names: insist on the exact one.
  bool exact = false;
  for (const auto& line : util::split_lines(ls.output)) exact = exact || util::ends_with(util::trim(line), "\t" + ref);
  if (!exact) return std::nullopt;
  util::ProcessResult f =
      git(root, {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+" + ref + ":" + local_ref}, options);
  if (f.exit_code != 0)
    throw Error("cannot fetch " + ref + " from '" + remote + "': git fetch exited " + std::to_string(f.exit_code) +
                ": " + gitx::git_output_tail(f.output));
  return repo.read_ref(local_ref);
}

void push_shared(const std::string& root, const std::string& remote, const std::string& ref,
                 const TransportOptions& options) {
  // Not forced: the new commit sits on top of the tip just fetched, so this
  // is a fast-forward unless someone pushed meanwhile, and then what they
  // pushed must not be overwritten.
  util::ProcessResult p = git(root, {"push", "--quiet", remote, ref + ":" + ref}, options);
  if (p.exit_code == 0) return;
  const std::string& out = p.output;
  bool raced = out.find("rejected") != std::string::npos || out.find("non-fast-forward") != std::string::npos ||
               out.find("fetch first") != std::string::npos;
  throw Error("cannot push " + ref + " to '" + remote + "'" +
              (raced ? ": it changed while pushing; run 'phoenix journal push' again"
                     : ": git push exited " + std::to_string(p.exit_code) + ": " + gitx::git_output_tail(out)));
}

PushResult push(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options) {
  check_remote(remote);
  gitx::Repo repo = gitx::Repo::open(repo_root);
  PushResult result;
  std::optional<std::string> tip =
      fetch_shared(repo, repo_root, remote, layout::kJournalRef, layout::kJournalRemoteRef, options);
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
  result.commit =
      repo.write_blob_commit(layout::kJournalRef, kShareFile, content,
                             "phoenix journal: " + std::to_string(result.entries) + " verified fixes\n", parents);
  push_shared(repo_root, remote, layout::kJournalRef, options);
  result.pushed = true;
  return result;
}

PullResult pull(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options) {
  check_remote(remote);
  gitx::Repo repo = gitx::Repo::open(repo_root);
  PullResult result;
  std::optional<std::string> tip =
      fetch_shared(repo, repo_root, remote, layout::kJournalRef, layout::kJournalRemoteRef, options);
  if (!tip) return result;
  result.found = true;
  result.commit = *tip;
  auto [theirs, text] = read_remote(repo, remote, "the local journal is untouched");
  result.entries = static_cast<long long>(theirs.size());
  result.merged = journal.merge(theirs);
  return result;
}

}  // namespace phoenix::journal
