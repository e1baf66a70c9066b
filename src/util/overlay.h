// Overlay mounts in a child's own namespace (util/subprocess.h's
// ChildNamespace): the words of their options, the marks overlay leaves in
// an upper layer, and whether this system lets an unprivileged process make
// one at all. Used by the fixers' overlay sandbox and by the confinement of
// what Phoenix runs in its own trees.
#pragma once

#include <sys/stat.h>

#include <string>

namespace phoenix::util {

// The options of an overlay mount: `lowers` is overlay's colon-separated
// list, top first. Unprivileged (user namespace) mounts keep their marks in
// user.* attributes ("userxattr").
std::string overlay_options(const std::string& lowers, const std::string& upper, const std::string& work);

// "" when `path` can be named in overlay's options; else why not: they are
// comma- and colon-separated lists, and some kernels take no escapes.
std::string unmountable_path(const std::string& path);

// A whiteout, what overlay writes for a deleted entry (a character device
// 0/0; unprivileged since Linux 5.8). Throws Error naming `path`.
void make_whiteout(const std::string& path);
bool is_whiteout(const struct stat& st);
// A folder that replaced a deleted one, hiding everything below it in the
// lower layers.
bool is_opaque(const std::string& dir);

// "" when this process can make overlay mounts in a namespace of its own
// (probed once, by running `true` in one over a tiny overlay in $TMPDIR),
// else why not.
std::string overlay_unavailable_reason();

// Makes every folder and file below `dir` writable by its owner, so that a
// layer a child wrote (folders copied up read-only) can be removed.
void make_tree_writable(const std::string& dir);

}  // namespace phoenix::util
