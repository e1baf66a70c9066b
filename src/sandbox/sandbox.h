// sandbox: a disposable copy of the user's repository where a fixer (the
// user's agent CLI) works, and the watch that proves it left the real
// repository alone (invariant 12, docs/invariants.md).
//
// What a sandbox holds. Sandbox::create() copies
//   - every path in the real repository's index (tracked files), with its
//     content as it is in the work tree now (a tracked file deleted from the
//     work tree is not copied);
//   - plus the files matching the repository's `sandbox.carry` globs (build
//     configuration, fixtures, an ignored `.env.example`…), tracked or not;
// and never
//   - untracked or .gitignore'd files (unless carried): .gitignore decides
//     what a model sees;
//   - secrets: secret_globs() below, even when tracked or carried;
//   - `.git` (at any depth), Phoenix's own `.phoenix/`, submodules.
// Regular files keep their executable bit (0755 / 0644, what git records).
// Symlinks are copied as symlinks when they are relative and resolve inside
// the copy; absolute ones (which would still point into the real repository)
// and ones leading outside are skipped.
//
// Layout (one folder per sandbox under `base_dir`, normally
// layout::sandboxes_dir, outside the work tree):
//   sandbox-XXXXXX/work/      path(): the agent's working directory, a fresh
//                             git repository (branch "main") whose one
//                             commit is the baseline, and whose objects are
//                             borrowed from meta.git (objects/info/alternates)
//   sandbox-XXXXXX/meta.git/  Phoenix's private record of the baseline: its
//                             own object store, index and HEAD, with
//                             core.worktree = work/
//
// Reading the changes back. Whatever the agent does to work/.git — commit,
// reset, checkout, rewrite the index, gc, or delete it — meta.git still holds
// the baseline commit and an index that matches it, so read_patch() is
// always "baseline tree → work tree files" computed through meta.git. That is
// what we chose over "diff in work/.git and fall back when it is damaged": one
// code path, no heuristics about which damage can be trusted.
//
// libgit2 is used directly here (not through gitx::Repo) for what gitx does
// not offer: listing the index, staging ignored (carried) files, creating a
// repository whose git directory lives apart from its work tree.
//
// Two kinds, one contract. The above is the copying sandbox (Kind::kCopy):
// its cost grows with every tracked file. The overlay sandbox
// (Kind::kOverlay) costs what the agent changes instead: nothing is copied;
// processes started through confine() run in a user + mount namespace of
// their own (no privilege needed, Linux >= 5.11) where path() is an overlay
// mount whose layers are, top to bottom:
// (the layers live in a folder of their own under $TMPDIR, since overlay
// refuses layers nested in one another; path() stays under base_dir)
//   upper/   everything the agent writes (new and changed files, whiteouts
//            for deleted ones); the only place anything is written
//   hide/    whiteouts for every entry of the real work tree the copying
//            sandbox would not hold: untracked and ignored files (unless
//            carried), secrets, .git, .phoenix/, submodules, escaping links
//   <top>    the user's work tree itself, never written: overlay never
//            writes a lower layer, and <top> is also bind-mounted read-only
//            in that namespace, so an absolute path cannot reach it either.
// So the agent sees exactly the files the copying sandbox would copy, with
// their content as it is in the work tree now. The baseline is built from
// the real index (blob ids of files whose stat data is unchanged are taken
// as they are; only dirty, racy and carried files are hashed), its objects
// borrowed from the real repository (alternates). read_patch() reads the
// upper layer: changed, new (unless ignored by the repository's own ignore
// rules) and deleted files (whiteouts, opaque folders) applied to the
// baseline index, then diffed tree to tree — work proportional to what
// changed. path() holds an empty folder outside that namespace: from
// Phoenix's own process the agent's view is reached only through confine().
// The agent's own .git (path()/.git, borrowing the same objects) is in the
// upper layer from the start; with core.checkStat=minimal its first
// `git status` finds a clean tree without hashing.
//
// Kind::kAuto picks the overlay where the kernel allows it and says once on
// stderr, when it does not, why it copies instead.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/subprocess.h"

struct git_repository;

namespace phoenix::sandbox {

enum class Kind { kAuto, kCopy, kOverlay };

// "auto" | "copy" | "overlay" -> Kind; anything else throws
// ConfigError("<what>: 'VALUE' is not one of auto, copy, overlay").
Kind parse_kind(const std::string& value, const std::string& what);
const char* kind_name(Kind kind);
// The kind to use: the PHOENIX_SANDBOX environment variable when set
// (overlay|copy|auto; "1", which Phoenix itself sets for the agent inside a
// sandbox, counts as unset), else `configured` (phoenix.json sandbox.kind).
// A bad value throws ConfigError naming the variable.
Kind effective_kind(Kind configured);
// "" when this process can make overlay sandboxes (probed once, by running
// `true` in a namespace over a tiny overlay), else why not.
std::string overlay_unavailable_reason();

// The one list of files that never enter a sandbox, tracked, carried or
// otherwise: environment files, private keys and certificates, package
// registry and netrc credentials, cloud credential files. Globs as in
// util/glob.h: a pattern without '/' matches the basename at any depth.
//   .env  .env.*  *.pem  *.key  id_rsa*  id_ed25519*  .npmrc  .pypirc
//   .netrc  *.p12  credentials*.json
const std::vector<std::string>& secret_globs();

// True when a repository-relative path matches secret_globs().
bool is_secret(std::string_view rel_path);

// A file of the repository that was not copied, and why ("secret",
// "submodule", "symlink outside the repository", "missing from the work
// tree", "not a regular file"). For `--explain` and tests.
struct Skipped {
  std::string path;
  std::string reason;
};

class Sandbox {
 public:
  // Copies `repo_root` (the top of a non-bare repository's work tree) into a
  // new folder under `base_dir` (created when missing) as described above and
  // commits the baseline. Throws phoenix::Error naming the path or the
  // libgit2 operation that failed; nothing is left behind then.
  //
  // `kind` goes through effective_kind(); kAuto (and kOverlay where the
  // kernel refuses) gives an overlay sandbox when overlay_unavailable_reason()
  // is "", else a copying one — saying why once per process on stderr.
  static Sandbox create(const std::string& repo_root, const std::string& base_dir,
                        const std::vector<std::string>& carry_globs, Kind kind = Kind::kAuto);

  Sandbox(Sandbox&& other) noexcept;
  Sandbox& operator=(Sandbox&& other) noexcept;
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  // Deletes the whole sandbox folder, first making everything in it writable
  // again (an agent may chmod files or folders away). Never follows symlinks
  // out of the sandbox. Never throws.
  ~Sandbox();

  // The work tree the agent runs in (absolute, no trailing slash). For an
  // overlay sandbox, what is there is visible only to confined processes.
  const std::string& path() const { return work_; }
  // kCopy or kOverlay (never kAuto).
  Kind kind() const { return kind_; }
  // Makes `options` run its child in the sandbox's view: for an overlay
  // sandbox, in the namespace described above (cwd defaults to path());
  // for a copying one, only cwd (when empty) is set.
  void confine(util::ProcessOptions& options) const;
  // The folder holding work/ and meta.git/ (what the destructor removes).
  const std::string& dir() const { return dir_; }
  // The baseline commit (in both repositories).
  const std::string& baseline() const { return baseline_; }
  // Repository-relative paths copied in (tracked and carried), sorted.
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<Skipped>& skipped() const { return skipped_; }

  // Writes a file for the agent to read (a prompt) at the top of the work
  // tree — inside it, because agent CLIs confine their file tools to their
  // working directory — under a name derived from `name` ("prompt.md" →
  // ".phoenix-prompt.md", with a number added if a copied file already has
  // that name). meta.git excludes it, so it never appears in read_patch()
  // whatever the agent does to it. Returns its absolute path.
  std::string write_scratch_file(const std::string& name, std::string_view content);

  // Everything the agent changed in the work tree since the baseline, as
  // git's extended unified diff (gitx::Repo::diff_workdir_patch): new,
  // deleted, renamed, binary and mode-changed files included; files the
  // sandbox's .gitignore ignores and scratch files excluded. "" when nothing
  // changed. Independent of the state of work/.git (see above). Throws
  // phoenix::Error when meta.git itself was destroyed.
  std::string read_patch() const;

 private:
  Sandbox() = default;
  void remove() noexcept;

  static void create_copy(Sandbox& sb, const std::string& top, const std::string& base,
                          const std::vector<std::string>& carry_globs, git_repository* real);
  static void create_overlay(Sandbox& sb, const std::string& top, const std::string& base,
                             const std::vector<std::string>& carry_globs, git_repository* real);
  // "" when an overlay sandbox can be made in `dir` over `top`, else why not.
  static std::string why_no_overlay(const std::string& top, const std::string& dir);
  // Removes what a failed create_overlay() left, so create_copy() can start.
  void drop_overlay_attempt();
  std::string read_overlay_patch() const;

  Kind kind_ = Kind::kCopy;
  std::string top_;                   // the real work tree (overlay: the bottom layer)
  std::string layers_;                // overlay: the layers' own folder outside the work tree, when not dir_
  std::string upper_;                 // overlay: dir_/upper
  std::string hide_;                  // overlay: dir_/hide
  std::string ovl_work_;              // overlay: dir_/ovl (the overlay's own work folder)
  std::vector<std::string> scratch_;  // overlay: scratch files, never in the patch
  std::string dir_;                   // sandbox-XXXXXX
  std::string work_;                  // dir_/work
  std::string meta_;                  // dir_/meta.git
  std::string baseline_;
  std::vector<std::string> files_;
  std::vector<Skipped> skipped_;
};

// --- invariant 12 (docs/invariants.md): the real repository must not change while a fixer works ---
//
// A fingerprint of the state of a repository that an agent could change:
// HEAD (commit and branch), every ref, every index entry (mode, blob, stage),
// the content of every path `git status` lists (modified, deleted, renamed,
// untracked and not ignored), the repository's config file and its hooks.
// Files `git status` does not list are identical to their index entry, so
// any write to them makes them listed: hashing only the listed ones is sound
// and costs one status walk plus reading the dirty files.
// Not covered: ignored files (by design invisible to git) and the inside of
// nested repositories.
struct RepoFingerprint {
  // "HEAD", "ref <name>", "index <path>", "file <path>", "config", "hook <name>"
  // → a value that changes when the thing changes.
  std::map<std::string, std::string> items;
};

// Takes the fingerprint of the repository whose work tree is `repo_root`.
// Untracked paths under `.phoenix/` (the sandboxes themselves, journal,
// trace, lock) and under any of `ignore_untracked_prefixes` (repository-
// relative, '/'-terminated for folders) are left out: Phoenix writes there.
// Throws phoenix::Error when the repository cannot be read.
RepoFingerprint fingerprint_repo(const std::string& repo_root,
                                 const std::vector<std::string>& ignore_untracked_prefixes = {});

// What differs between two fingerprints, one line per item for people
// ("HEAD moved from 1a2b3c4 (main) to 5d6e7f8 (main)", "src/a.cc changed in
// the work tree", "index entry of src/a.cc changed", "hook pre-commit
// added"), in key order. Empty when they are equal.
std::vector<std::string> fingerprint_changes(const RepoFingerprint& before, const RepoFingerprint& after);

}  // namespace phoenix::sandbox
