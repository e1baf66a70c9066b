// Repo's history (revisions, ancestry, a commit's files) and the data
// Phoenix keeps under refs as one-file commits.
#include "gitx/repo.h"

#include <git2.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gitx/names.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::gitx {

// ---------------------------------------------------------------------------
// History.

std::vector<std::string> Repo::rev_list(const std::string& from_exclusive, const std::string& to_inclusive) const {
  git_revwalk* w = nullptr;
  check(git_revwalk_new(&w, raw()), "revwalk");
  RevwalkPtr walk(w);
  check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE), "revwalk sort");
  check(git_revwalk_simplify_first_parent(walk.get()), "revwalk first-parent");
  CommitPtr to = lookup_commit(raw(), to_inclusive);
  check(git_revwalk_push(walk.get(), git_commit_id(to.get())), "revwalk push");
  if (!from_exclusive.empty()) {
    CommitPtr from = lookup_commit(raw(), from_exclusive);
    check(git_revwalk_hide(walk.get(), git_commit_id(from.get())), "revwalk hide");
  }
  std::vector<std::string> out;
  git_oid oid;
  int rc;
  while ((rc = git_revwalk_next(&oid, walk.get())) == 0) out.push_back(oid_hex(oid));
  if (rc != GIT_ITEROVER) check(rc, "revwalk");
  return out;
}

bool Repo::is_ancestor(const std::string& ancestor, const std::string& descendant) const {
  CommitPtr a = lookup_commit(raw(), ancestor);
  CommitPtr d = lookup_commit(raw(), descendant);
  if (git_oid_equal(git_commit_id(a.get()), git_commit_id(d.get()))) return true;
  int rc = git_graph_descendant_of(raw(), git_commit_id(d.get()), git_commit_id(a.get()));
  check(rc, "ancestry");
  return rc == 1;
}

std::string Repo::merge_base(const std::string& a, const std::string& b) const {
  CommitPtr ca = lookup_commit(raw(), a);
  CommitPtr cb = lookup_commit(raw(), b);
  git_oid out;
  const int rc = git_merge_base(&out, raw(), git_commit_id(ca.get()), git_commit_id(cb.get()));
  if (rc == GIT_ENOTFOUND) return "";
  check(rc, "merge base");
  return oid_hex(out);
}

std::string Repo::commit_message(const std::string& rev) const {
  CommitPtr c = lookup_commit(raw(), rev);
  const char* m = git_commit_message(c.get());
  return m ? m : "";
}

std::vector<std::string> Repo::commit_files(const std::string& rev) const {
  CommitPtr c = lookup_commit(raw(), rev);
  TreePtr parent_tree;
  if (git_commit_parentcount(c.get()) > 0) {
    git_commit* p = nullptr;
    check(git_commit_parent(&p, c.get(), 0), "read parent");
    parent_tree = commit_tree(CommitPtr(p).get());
  }
  TreePtr tree = commit_tree(c.get());
  DiffPtr diff = diff_trees(raw(), parent_tree.get(), tree.get(), /*for_patch=*/false);
  return delta_paths(diff.get());
}

std::vector<std::string> Repo::changed_paths(const std::string& from, const std::string& to) const {
  TreePtr a = commit_tree(lookup_commit(raw(), from).get());
  TreePtr b = commit_tree(lookup_commit(raw(), to).get());
  std::vector<std::string> out;
  changed_files(raw(), a.get(), b.get(), "", out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---------------------------------------------------------------------------
// Data kept under refs.

std::string Repo::write_blob_commit(const std::string& ref, const std::string& filename, const std::string& content,
                                    const std::string& message, const std::vector<std::string>& parents) {
  if (filename.empty() || filename.find('/') != std::string::npos)
    throw Error("write_blob_commit: '" + filename + "' is not a plain file name");
  git_oid blob;
  check(git_blob_create_from_buffer(&blob, raw(), content.data(), content.size()), "write blob");
  git_treebuilder* tb_raw = nullptr;
  check(git_treebuilder_new(&tb_raw, raw(), nullptr), "build tree");
  TreeBuilderPtr tb(tb_raw);
  check(git_treebuilder_insert(nullptr, tb.get(), filename.c_str(), &blob, GIT_FILEMODE_BLOB), "build tree");
  git_oid tree_id;
  check(git_treebuilder_write(&tree_id, tb.get()), "write tree");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, raw(), &tree_id), "read tree");
  TreePtr tree(tree_raw);
  std::vector<CommitPtr> owned;
  std::vector<const git_commit*> parent_ptrs;
  for (const auto& p : parents) {
    owned.push_back(lookup_commit(raw(), p));
    parent_ptrs.push_back(owned.back().get());
  }
  SignaturePtr sig = signature_now();
  Buf msg;
  check(git_message_prettify(&msg.b, message.c_str(), /*strip_comments=*/0, '#'), "clean message");
  if (msg.str().empty()) throw Error("empty commit message");
  git_oid id;
  // No update_ref here: libgit2 would insist that the ref's current tip is
  // the first parent. The ref is moved (forced) below instead.
  check(git_commit_create(&id, raw(), nullptr, sig.get(), sig.get(), nullptr, msg.b.ptr, tree.get(), parent_ptrs.size(),
                          parent_ptrs.data()),
        "commit");
  std::string sha = oid_hex(id);
  write_ref(ref, sha, message.substr(0, message.find('\n')));
  return sha;
}

std::optional<std::string> Repo::read_blob_at(const std::string& rev, const std::string& path) const {
  CommitPtr commit = lookup_commit(raw(), rev);
  TreePtr tree = commit_tree(commit.get());
  git_tree_entry* raw_entry = nullptr;
  int rc = git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "find path in tree");
  TreeEntryPtr entry(raw_entry);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  git_blob* blob_raw = nullptr;
  check(git_blob_lookup(&blob_raw, raw(), git_tree_entry_id(entry.get())), "read blob");
  BlobPtr blob(blob_raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<size_t>(git_blob_rawsize(blob.get())));
}

}  // namespace phoenix::gitx
