// phoenix_bench_loop: what phoenix-loop itself costs per iteration, beyond
// the agent and the checks it runs. The agent is `sh -c 'echo x >> work.txt'`
// and the one check is `true`, so nearly all of an iteration is the loop's
// own work: prompt, state file, tick, measure bookkeeping, commit, refs,
// trace. The baseline, measured in the same run, is the bare cost of
// starting the same agent and check commands directly, once each.
//
//   phoenix_bench_loop PATH/TO/phoenix-loop [ITERATIONS]
//
// Two task files: 1 task (one iteration per loop, so setup — lock, worktree,
// baseline measurement — is included; five loops are averaged) and 500 tasks
// (ITERATIONS iterations of one loop, default 100: does the cost grow with
// the size of the tasks file?).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.h"
#include "util/subprocess.h"

using namespace phoenix;
using namespace phoenix::bench;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kAgent{"/bin/sh", "-c", "echo x >> work.txt"};
const std::vector<std::string> kCheck{"true"};

// The same agent and check, started directly: ms per (agent + check).
double baseline_ms(const std::string& dir, int n) {
  auto t = Clock::now();
  for (int i = 0; i < n; ++i) {
    util::ProcessOptions a;
    a.argv = kAgent;
    a.cwd = dir;
    util::run_process(a);
    util::ProcessOptions c;
    c.argv = kCheck;
    c.cwd = dir;
    util::run_process(c);
  }
  return ms_since(t) / n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: phoenix_bench_loop PATH/TO/phoenix-loop [ITERATIONS]\n");
    return 64;
  }
  std::string loop = argv[1];
  int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  char tmpl[] = "/tmp/phoenix-bench-loop-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string work = tmpl;

  // 1 task: five whole loops of one iteration each.
  const int kSmallRuns = 5;
  double small_ms = 0;
  for (int i = 0; i < kSmallRuns; ++i) {
    std::string dir = make_loop_repo(work + "/one-" + std::to_string(i), 1, kAgent);
    auto t = Clock::now();
    must({loop, "--branch", "phoenix/bench"}, dir, 0);
    small_ms += ms_since(t);
  }
  small_ms /= kSmallRuns;

  // 500 tasks: one loop, `iterations` iterations (exit 1: stopped at the cap).
  std::string big = make_loop_repo(work + "/five-hundred", 500, kAgent);
  auto t = Clock::now();
  must({loop, "--branch", "phoenix/bench", "--max-iterations", std::to_string(iterations)}, big, 1);
  double big_ms = ms_since(t) / iterations;

  double base = baseline_ms(work + "/five-hundred", 100);
  std::printf("baseline: agent + check started directly: %.2f ms per iteration\n", base);
  std::printf("1-task file:   %.2f ms per loop of 1 iteration (setup included)   overhead %.2f ms   ratio %.1fx\n",
              small_ms, small_ms - base, small_ms / base);
  std::printf("500-task file: %.2f ms per iteration over %d iterations            overhead %.2f ms   ratio %.1fx\n",
              big_ms, iterations, big_ms - base, big_ms / base);
  fs::remove_all(work);
  return 0;
}
