// Sharing verified fixes through git itself: `phoenix journal push|pull
// [REMOTE]` over refs/phoenix/journal (layout::kJournalRef),
// with no server beyond the remote the team already has.
//
// The ref names a commit whose tree holds one file, journal.jsonl, in the
// format of journal/share_format.h.
//
// Counts travel per origin (see entry.h), so merging is idempotent: a
// second pull of the same ref, or pulling back what one pushed, changes
// nothing, and each side's counts survive.
//
// What travels: every entry verified somewhere, plus the demotion of an
// entry the other side already has (so a teammate does not replay a patch
// that stopped working). An entry only ever demoted here stays here.
//
// Transport: libgit2 builds and reads the commit (as for all repository
// work); moving it between repositories uses the `git` CLI (`git ls-remote`,
// `git fetch`, `git push`) through util::run_process, so every transport the
// user's git is configured for (ssh, https with credential helpers, local
// paths, insteadOf rules) works without Phoenix carrying network code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "journal/journal.h"
#include "journal/share_format.h"

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::journal {

// The journal travels as layout::kJournalRef (a fetched one is kept under
// layout::kJournalRemoteRef while it is read and merged).

struct PushResult {
  bool pushed = false;        // false: the remote already had everything, or
                              // neither side has a verified fix (commit "")
  std::string commit;         // the pushed commit (or the remote's, when up to date)
  long long entries = 0;      // entries in the pushed file
  long long from_remote = 0;  // of which the remote had and this journal did not
};

struct PullResult {
  bool found = false;  // false: the remote has no refs/phoenix/journal
  std::string commit;
  long long entries = 0;  // entries in the remote file
  MergeResult merged;
};

// Options for the git child processes.
struct TransportOptions {
  double timeout_s = 300;
};

// Fetches the remote's journal (if any), merges this journal's entries into
// it in memory (this journal is not changed), commits the result on top of
// the remote's commit under refs/phoenix/journal and pushes it without
// force: if someone pushed in between, git refuses and the Error says to
// push again. A remote ref that is not a valid journal throws (nothing is
// pushed over it).
PushResult push(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options = {});

// Fetches the remote's journal into refs/phoenix/journal-remote, validates
// all of it, then merges it into `journal` in one transaction. Anything
// invalid throws before the journal is touched.
PullResult pull(Journal& journal, const std::string& repo_root, const std::string& remote,
                const TransportOptions& options = {});

// The commit at `ref` on `remote`, fetched into `local_ref`; nullopt when
// the remote has no such ref. Throws Error when the remote cannot be reached.
std::optional<std::string> fetch_shared(gitx::Repo& repo, const std::string& root, const std::string& remote,
                                        const std::string& ref, const std::string& local_ref,
                                        const TransportOptions& options);
// Pushes the local `ref` to the same name on `remote`, never forced; throws
// Error (saying to push again when the remote moved meanwhile).
void push_shared(const std::string& root, const std::string& remote, const std::string& ref,
                 const TransportOptions& options);

}  // namespace phoenix::journal
