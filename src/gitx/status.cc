// Repo's status of the work tree: what changed, whether it is clean, the
// files listed; a TreeWatch narrows it to what was written (gitx/watch.h).
#include "gitx/repo.h"

#include <git2.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gitx/names.h"
#include "gitx/prefix.h"
#include "util/error.h"
#include "util/text.h"
#include <sys/stat.h>

#include "gitx/watch.h"

namespace phoenix::gitx {

namespace {

// What HEAD and the index are now, for a TreeWatch.
TreeWatch::Stamp stamp_of(git_repository* repo) {
  TreeWatch::Stamp s;
  git_oid oid;
  if (git_reference_name_to_id(&oid, repo, "HEAD") == 0) s.head = lg2::oid_hex(oid);
  struct stat st {};
  if (::stat(index_file(repo).c_str(), &st) == 0)
    s.index = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
              "." + std::to_string(st.st_mtim.tv_nsec);
  return s;
}

char status_letter(unsigned s) {
  if (s & GIT_STATUS_CONFLICTED) return 'U';
  if (s & GIT_STATUS_INDEX_RENAMED) return 'R';
  if (s & (GIT_STATUS_INDEX_DELETED | GIT_STATUS_WT_DELETED)) return 'D';
  if (s & GIT_STATUS_INDEX_NEW) return 'A';
  if (s & GIT_STATUS_WT_NEW) return '?';
  return 'M';
}

}  // namespace

// ---------------------------------------------------------------------------
// Status.

std::optional<std::vector<std::string>> Repo::watched_paths() const {
  if (!watch_) return std::nullopt;
  return watch_->changed(stamp_of(raw()));
}

void Repo::watch_clean(const std::vector<std::string>& kept) {
  if (watch_) watch_->mark_clean(stamp_of(raw()), kept);
}

bool Repo::watch_work_tree() {
  if (is_bare()) return false;
  watch_ = TreeWatch::start(workdir());
  return watch_ != nullptr;
}

std::vector<StatusEntry> Repo::status() const {
  std::optional<std::vector<std::string>> paths = watched_paths();
  std::vector<StatusEntry> out;
  if (paths && paths->empty()) return out;  // nothing written since the tree was clean
  StatusListPtr list = status_list(raw(), GIT_STATUS_SHOW_INDEX_AND_WORKDIR, paths ? &*paths : nullptr);
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    if (e->status == GIT_STATUS_CURRENT || (e->status & GIT_STATUS_IGNORED)) continue;
    StatusEntry s;
    s.code = status_letter(e->status);
    const git_diff_delta* d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
    if (!d) continue;
    s.path = d->new_file.path ? d->new_file.path : d->old_file.path;
    if (s.code == 'R' && e->head_to_index) s.old_path = e->head_to_index->old_file.path;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const StatusEntry& a, const StatusEntry& b) { return a.path < b.path; });
  return out;
}

bool Repo::is_clean(const std::vector<std::string>& ignore_prefixes) const {
  for (const StatusEntry& e : status()) {
    if (!under_any(e.path, ignore_prefixes)) return false;
    if (!e.old_path.empty() && !under_any(e.old_path, ignore_prefixes)) return false;
  }
  return true;
}

bool Repo::tracked_clean(const std::vector<std::string>& ignore_prefixes) const {
  for (const StatusEntry& e : status()) {
    if (e.code == '?') continue;
    if (!under_any(e.path, ignore_prefixes)) return false;
    if (!e.old_path.empty() && !under_any(e.old_path, ignore_prefixes)) return false;
  }
  return true;
}

std::vector<std::string> Repo::untracked_files(const std::vector<std::string>& ignore_prefixes) const {
  std::vector<std::string> out;
  for (const StatusEntry& e : status())
    if (e.code == '?' && !under_any(e.path, ignore_prefixes)) out.push_back(e.path);
  return out;
}

std::vector<std::string> Repo::listed_files() const {
  std::vector<std::string> out;
  {
    IndexPtr index = fresh_index(raw());
    for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index.get(), i);
      if (e && git_index_entry_stage(e) == 0) out.emplace_back(e->path);
    }
  }
  StatusListPtr list = status_list(raw(), GIT_STATUS_SHOW_WORKDIR_ONLY);
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    if ((e->status & GIT_STATUS_WT_NEW) && e->index_to_workdir && e->index_to_workdir->new_file.path)
      out.emplace_back(e->index_to_workdir->new_file.path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace phoenix::gitx
