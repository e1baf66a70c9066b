// The names gitx's repository files (repo.cc, status.cc, commit.cc,
// history.cc, diff.cc, checkout.cc) use unqualified: libgit2's owner types
// and helpers (gitx/libgit2.h) and what those files share
// (gitx/internal.h). Not for use outside gitx; include only from .cc files.
#pragma once

#include "gitx/internal.h"
#include "gitx/libgit2.h"

namespace phoenix::gitx {

using namespace lg2;       // the owner types, check(), fresh_index(), oid_hex(), ...
using namespace internal;  // revparse(), lookup_commit(), commit_tree(), status_list(), ...

}  // namespace phoenix::gitx
