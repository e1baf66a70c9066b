// Every persistent write goes through here: a temporary file in the same
// directory, fsync, rename over the target, fsync of the directory. A reader
// sees the old content or the new, never half of either; a crash leaves at
// worst a stray ".tmp.*" file that the next write or `phoenix recover` removes.
#pragma once

#include <string>
#include <string_view>

namespace phoenix::util {

// Replaces `path` with `content` atomically. `mode` applies to the new file.
void write_file_atomic(const std::string& path, std::string_view content, unsigned mode = 0644);

// Appends `line` (which must end in '\n') to `path` and fsyncs it. Only for
// append-only logs (the trace), whose readers detect a torn last line.
void append_durable(const std::string& path, std::string_view line);

// fsync a directory so a rename or create in it survives a crash.
void fsync_dir(const std::string& dir);

// Reads a whole file; throws Error naming the path when it cannot.
std::string read_file(const std::string& path);

// True when the path exists (without following a final symlink).
bool path_exists(const std::string& path);

}  // namespace phoenix::util
