// What the phoenix-loop benchmarks share (loop_bench.cc, workers_bench.cc):
// timing, running a command that must succeed, writing a file, and a
// repository of N open tasks ready for phoenix-loop.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "util/json.h"
#include "util/subprocess.h"

namespace phoenix::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Runs `argv` in `cwd`; exits the benchmark unless it exits `want`.
inline util::ProcessResult must(const std::vector<std::string>& argv, const std::string& cwd, int want = 0) {
  util::ProcessOptions po;
  po.argv = argv;
  po.cwd = cwd;
  po.timeout_s = 3600;
  util::ProcessResult r = util::run_process(po);
  if (r.exit_code != want) {
    std::fprintf(stderr, "bench: %s exited %d (want %d): %s\n", argv[0].c_str(), r.exit_code, want, r.output.c_str());
    std::exit(1);
  }
  return r;
}

inline void put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A repository at `dir` with `tasks` open tasks in TASKS.md, one check
// (`true`), the agent `agent` (argv) and no fixer, committed: ready for
// phoenix-loop.
inline std::string make_loop_repo(const std::string& dir, int tasks, const std::vector<std::string>& agent) {
  std::filesystem::create_directories(dir);
  must({"git", "init", "-q", "-b", "main", dir}, dir);
  std::string t = "# Tasks\n\n";
  for (int i = 1; i <= tasks; ++i) t += "- [ ] task number " + std::to_string(i) + "\n";
  put(dir + "/TASKS.md", t);
  put(dir + "/.gitignore", ".phoenix/\nincidents/\n");
  util::Json cfg = {{"checks", {{{"id", "ok"}, {"kind", "command_exit"}, {"target", {"true"}}}}},
                    {"harness", {{"command", agent}}},
                    {"fixers", {"noop"}},
                    {"loop", {{"tasks", "TASKS.md"}, {"max_iterations", 100000}}}};
  put(dir + "/phoenix.json", cfg.dump(2));
  must({"git", "-C", dir, "add", "-A"}, dir);
  must({"git", "-C", dir, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "init"},
       dir);
  return dir;
}

}  // namespace phoenix::bench
