// phoenix_bench_workers: tasks per hour of phoenix-loop --workers N, and the
// merge queue's own time per task.
//
//   phoenix_bench_workers PATH/TO/phoenix-loop [TASKS] [AGENT_SECONDS]
//
// One tasks file of TASKS tasks (default 40); the agent sleeps
// AGENT_SECONDS (default 2) and then writes one new file of its own (no two
// tasks conflict); the one check is `true`. The same repository is run with
// 1, 2 and 4 workers in this one run; the figures are tasks per hour and
// the ratio against 1 worker (the loop as it always ran: no queue),
// beside this machine's core count. The merge
// queue's time per task (merge, checkout, measure, commit) and the number
// of merges that were not green come from the loop's own trace.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "util/json.h"

using namespace phoenix;
using namespace phoenix::bench;
namespace fs = std::filesystem;

namespace {

// The agent sleeps `agent_s`, then writes one new file of its own.
std::string make_repo(const std::string& dir, int tasks, double agent_s) {
  return make_loop_repo(
      dir, tasks, {"/bin/sh", "-c", "sleep " + std::to_string(agent_s) + "; mktemp -p . work-XXXXXXXX >/dev/null"});
}

struct Figures {
  double tasks_per_hour = 0;
  double merge_ms = 0;  // the queue's own time per merged task
  int not_green = 0;    // merges that conflicted or were red
  int merged = 0;
};

Figures run(const std::string& loop, const std::string& dir, int tasks, int workers) {
  auto t = Clock::now();
  must({loop, "--branch", "phoenix/bench", "--workers", std::to_string(workers)}, dir, 0);
  Figures f;
  f.tasks_per_hour = tasks / (ms_since(t) / 3600000.0);
  std::ifstream trace(dir + "/.phoenix/trace.jsonl");
  long long total = 0;
  for (std::string line; std::getline(trace, line);) {
    util::Json j = util::Json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("event", "") != "loop.merge") continue;
    if (j["data"].value("result", "") == "merged") {
      ++f.merged;
      total += j["data"].value("duration_ms", 0LL);
    } else {
      ++f.not_green;
    }
  }
  f.merge_ms = f.merged ? static_cast<double>(total) / f.merged : 0;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: phoenix_bench_workers PATH/TO/phoenix-loop [TASKS] [AGENT_SECONDS]\n");
    return 64;
  }
  std::string loop = argv[1];
  int tasks = argc > 2 ? std::atoi(argv[2]) : 40;
  double agent_s = argc > 3 ? std::atof(argv[3]) : 2;
  char tmpl[] = "/tmp/phoenix-bench-workers-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string work = tmpl;
  std::printf("%d tasks, an agent of %.1f s each, %u cores\n", tasks, agent_s, std::thread::hardware_concurrency());
  double one = 0;
  for (int workers : {1, 2, 4}) {
    std::string dir = make_repo(work + "/w" + std::to_string(workers), tasks, agent_s);
    Figures f = run(loop, dir, tasks, workers);
    if (workers == 1) one = f.tasks_per_hour;
    std::printf("%d worker%s: %7.0f tasks/hour   ratio %.2fx vs 1 worker", workers, workers == 1 ? " " : "s",
                f.tasks_per_hour, f.tasks_per_hour / one);
    if (f.merged + f.not_green == 0) std::printf("   (one worker commits in place: no merge queue)\n");
    else
      std::printf("   merge queue %.0f ms per task   %d not green of %d merges\n", f.merge_ms, f.not_green,
                  f.merged + f.not_green);
  }
  fs::remove_all(work);
  return 0;
}
