// libgit2 plumbing shared by the code that talks to libgit2 directly (gitx
// itself, and the sandbox, which needs a separate git dir): one init, one
// error helper, one owner per object type, and the few reads every such
// file needs (a fresh index, an oid as hex). Include only from .cc files.
#pragma once

#include <git2.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gitx/author.h"
#include "util/error.h"

namespace phoenix::gitx::lg2 {

// git_libgit2_init once for the process lifetime (it is reference counted;
// never shut down, since objects may outlive any scope we could pick).
void ensure_init();

// libgit2's last error message for a failed call, or "error N".
std::string last_error_message(int rc);

// Turns a failed libgit2 call into the one exception Phoenix throws for it:
// Error("libgit2: <what>: <message>"); Locked when the call failed because
// another process holds a lock file it needs (GIT_ELOCKED).
void check(int rc, const std::string& what);

class Locked : public Error {
 public:
  using Error::Error;
};

// Runs `op`. While it throws Locked (someone else holds .git/index.lock or
// a ref's .lock: an editor's git, a user's commit), waits with backoff and
// runs it again, up to set_lock_wait_s(); then throws an Error naming the
// lock file and, where /proc says, the process holding it. `locks` are the
// files the operation takes: it starts only once they are gone, so an
// operation that is not safe to repeat (`repeatable` false: a commit moves
// HEAD before it writes the index) runs once, on free locks. Phoenix never
// removes a lock file it did not take.
void with_lock_wait(const std::vector<std::string>& locks, bool repeatable, const std::function<void()>& op);

template <typename T, void (*FreeFn)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p) FreeFn(p);
  }
};
template <typename T, void (*FreeFn)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, FreeFn>>;

using CommitPtr = Owned<git_commit, git_commit_free>;
using TreePtr = Owned<git_tree, git_tree_free>;
using IndexPtr = Owned<git_index, git_index_free>;
using DiffPtr = Owned<git_diff, git_diff_free>;
using DiffStatsPtr = Owned<git_diff_stats, git_diff_stats_free>;
using ReferencePtr = Owned<git_reference, git_reference_free>;
using RefIterPtr = Owned<git_reference_iterator, git_reference_iterator_free>;
using ObjectPtr = Owned<git_object, git_object_free>;
using SignaturePtr = Owned<git_signature, git_signature_free>;
using WorktreePtr = Owned<git_worktree, git_worktree_free>;
using StatusListPtr = Owned<git_status_list, git_status_list_free>;
using ConfigPtr = Owned<git_config, git_config_free>;
using ConfigEntryPtr = Owned<git_config_entry, git_config_entry_free>;
using RevwalkPtr = Owned<git_revwalk, git_revwalk_free>;
using RepositoryPtr = Owned<git_repository, git_repository_free>;
using ConflictIterPtr = Owned<git_index_conflict_iterator, git_index_conflict_iterator_free>;
using TreeEntryPtr = Owned<git_tree_entry, git_tree_entry_free>;
using BlobPtr = Owned<git_blob, git_blob_free>;
using TreeBuilderPtr = Owned<git_treebuilder, git_treebuilder_free>;

// git_buf and git_strarray are structs by value with their own dispose.
struct Buf {
  git_buf b = GIT_BUF_INIT;
  Buf() = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { git_buf_dispose(&b); }
  std::string str() const { return b.ptr ? std::string(b.ptr, b.size) : std::string(); }
};

struct StrArray {
  git_strarray a{};
  StrArray() = default;
  StrArray(const StrArray&) = delete;
  StrArray& operator=(const StrArray&) = delete;
  ~StrArray() { git_strarray_dispose(&a); }
};

// 40 lowercase hex digits.
std::string oid_hex(const git_oid& oid);

// `author` as a commit's author and committer, now: Phoenix
// (gitx/author.h) unless a caller names another.
SignaturePtr signature_now(const Author& author = kPhoenixAuthor);

// The repository's index, freshly read: another process (git, an agent)
// may have rewritten it since we last looked, and libgit2 caches it.
// `reread` false: read again only when the file changed on disk (libgit2
// compares its stamp), for a Repo whose every index change is written or
// dropped before the call returns (a watched one: the loop's worktree,
// where reading and checksumming a 100,000-entry index is most of an
// iteration's cost).
IndexPtr fresh_index(git_repository* repo, bool reread = true);

}  // namespace phoenix::gitx::lg2
