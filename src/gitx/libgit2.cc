#include "gitx/libgit2.h"

#include "util/error.h"

namespace phoenix::gitx::lg2 {

void ensure_init() {
  static const int once = [] {
    int rc = git_libgit2_init();
    if (rc < 0) throw Error("libgit2: init failed");
    return rc;
  }();
  (void)once;
}

std::string last_error_message(int rc) {
  const git_error* e = git_error_last();
  if (e && e->message && *e->message) return e->message;
  return "error " + std::to_string(rc);
}

void check(int rc, const std::string& what) {
  if (rc < 0) throw Error("libgit2: " + what + ": " + last_error_message(rc));
}

std::string oid_hex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

IndexPtr fresh_index(git_repository* repo) {
  git_index* raw = nullptr;
  check(git_repository_index(&raw, repo), "open index");
  IndexPtr index(raw);
  check(git_index_read(index.get(), /*force=*/1), "read index");
  return index;
}

}  // namespace phoenix::gitx::lg2
