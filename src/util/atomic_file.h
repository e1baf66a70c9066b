// Every persistent write goes through here: a temporary file in the same
// directory, fsync, rename over the target, fsync of the directory. A reader
// sees the old content or the new, never half of either; a crash leaves at
// worst a stray ".tmp.*" file that the next write or `phoenix recover` removes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace phoenix::util {

// How far a replacement is pushed before write_file_atomic returns.
enum class Sync {
  // fsync of the file and of its directory: the new content survives a
  // power cut once the call returns.
  kDurable,
  // No fsync: readers and a crash of the process still see the old content
  // or the new, whole (the rename is atomic), but a power cut soon after
  // may bring back the old one. For files rewritten often whose next
  // durable write follows shortly (phoenix-loop's transient phases), and
  // scratch files that only a child process reads.
  kAtomic,
};

// Replaces `path` with `content` atomically. `mode` applies to the new file.
void write_file_atomic(const std::string& path, std::string_view content, unsigned mode = 0644,
                       Sync sync = Sync::kDurable);

// Appends `line` (which must end in '\n') to `path` and fsyncs it (with
// Sync::kAtomic it does not: the caller fsyncs later, see fsync_file). Only
// for append-only logs (the trace), whose readers detect a torn last line.
void append_durable(const std::string& path, std::string_view line, Sync sync = Sync::kDurable);

// Writes all of `data` to `fd`, again after EINTR and short writes; false
// on an error (errno says which) or when the descriptor takes no more.
bool write_all(int fd, std::string_view data);

// fdatasync of a file's content (what append_durable(kAtomic) left unsynced).
void fsync_file(const std::string& path);

// fsync a directory so a rename or create in it survives a crash.
void fsync_dir(const std::string& dir);

// Reads a whole file; throws Error naming the path when it cannot.
std::string read_file(const std::string& path);
// The same, nullopt when there is no such file (no exception on that
// path: for callers that probe many files that mostly are not there).
std::optional<std::string> read_file_if_exists(const std::string& path);

// True when the path exists (without following a final symlink).
bool path_exists(const std::string& path);

}  // namespace phoenix::util
