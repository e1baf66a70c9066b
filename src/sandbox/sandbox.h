// sandbox: a disposable copy of the user's repository where a fixer (the
// user's agent CLI) works, and the watch that proves it left the real
// repository alone (DESIGN.md "Words: sandbox", invariant 12).
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
// <root>/.phoenix/sandboxes):
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
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::sandbox {

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
  static Sandbox create(const std::string& repo_root, const std::string& base_dir,
                        const std::vector<std::string>& carry_globs);

  Sandbox(Sandbox&& other) noexcept;
  Sandbox& operator=(Sandbox&& other) noexcept;
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  // Deletes the whole sandbox folder, first making everything in it writable
  // again (an agent may chmod files or folders away). Never follows symlinks
  // out of the sandbox. Never throws.
  ~Sandbox();

  // The work tree the agent runs in (absolute, no trailing slash).
  const std::string& path() const { return work_; }
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

  std::string dir_;       // sandbox-XXXXXX
  std::string work_;      // dir_/work
  std::string meta_;      // dir_/meta.git
  std::string baseline_;
  std::vector<std::string> files_;
  std::vector<Skipped> skipped_;
};

// --- invariant 12: the real repository must not change while a fixer works ---
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
