// Finding the processes a child left behind when they escaped its process
// group (setsid, a double fork: a daemon): the child gets a random token in
// its environment, which its descendants inherit, and /proc/<pid>/environ
// names every process still carrying it (ProcessOptions::kill_strays in
// util/subprocess.h). One that empties or replaces its environment escapes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace phoenix::util {

// 32 hex digits from /dev/urandom (or, when it cannot be read, from the pid,
// the time and a counter: unique enough for our own children).
std::string random_run_token();

// Every process but ourselves whose environment holds `entry` ("NAME=value")
// as a whole entry. A zombie's environment reads as empty.
std::vector<pid_t> processes_with_env(const std::string& entry);

}  // namespace phoenix::util
