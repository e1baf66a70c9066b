// phoenix_bench_sandbox N...: time to get a sandbox ready for the harness on
// a repository of N tracked files, beside `git worktree add --detach` of the
// same repository (the plain-git way to get another view), same run.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/sandbox.h"
#include "util/subprocess.h"

using namespace phoenix;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void must(std::vector<std::string> argv, const std::string& cwd = "") {
  util::ProcessOptions o;
  o.argv = std::move(argv);
  o.cwd = cwd;
  auto r = util::run_process(o);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "bench: %s failed: %s\n", o.argv[0].c_str(), r.output.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000};
  for (int n : sizes) {
    fs::path dir =
        fs::temp_directory_path() / ("phoenix-bench-sandbox-" + std::to_string(::getpid()) + "-" + std::to_string(n));
    fs::path repo = dir / "repo";
    int per_folder = 250;
    for (int i = 0; i < n; ++i) {
      fs::path f = repo / ("d" + std::to_string(i / per_folder)) / ("f" + std::to_string(i) + ".txt");
      if (i % per_folder == 0) fs::create_directories(f.parent_path());
      std::ofstream(f) << "file " << i << "\n";
    }
    std::ofstream(repo / ".gitignore") << ".phoenix/\n";
    must({"git", "init", "-q", "-b", "main"}, repo.string());
    must({"git", "-c", "user.name=b", "-c", "user.email=b@b", "add", "-A"}, repo.string());
    must({"git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "files"}, repo.string());

    auto t0 = Clock::now();
    {
      // The copying sandbox (bench/perf_bench.cc measures both kinds).
      auto sb =
          sandbox::Sandbox::create(repo.string(), (repo / ".phoenix/sandboxes").string(), {}, sandbox::Kind::kCopy);
      double ready = ms_since(t0);
      auto t1 = Clock::now();
      must({"git", "worktree", "add", "-q", "--detach", (dir / "wt").string()}, repo.string());
      double wt = ms_since(t1);
      std::printf("copying sandbox ready, %6d files: %8.0f ms   git worktree add: %8.0f ms   ratio %.2fx\n", n, ready,
                  wt, ready / wt);
    }
    fs::remove_all(dir);
  }
  return 0;
}
