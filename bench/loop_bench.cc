// phoenix_bench_loop: what phoenix-loop itself costs per iteration, beyond
// the agent and the checks it runs. The agent is `sh -c 'echo x >> work.txt'`
// and the one check is `true`, so nearly all of an iteration is the loop's
// own work: prompt, state file, tick, measure bookkeeping, commit, refs,
// trace. The baseline, measured in the same run (before and after the
// loops, averaged), is the bare cost of starting the same agent and check
// commands directly, once each.
//
//   phoenix_bench_loop PATH/TO/phoenix-loop [ITERATIONS] [FILES...]
//
// Rows:
//   1-task file: one iteration per loop, so setup (lock, worktree, baseline
//     measurement) is included; five loops are averaged.
//   500-task file: ITERATIONS (default 100) iterations of one loop in a
//     repository of a few files: the whole loop's time over the iterations.
//   500-task file, FILES-file repository (default 1000 and 10000): the same
//     loop in a repository of FILES tracked files (folders of 250, made
//     with git fast-import). An iteration's time is the median gap between
//     two iterations' `loop.task_done` trace entries, so the loop's setup
//     (the worktree's first checkout) is left out: does an iteration cost
//     more in a bigger repository?
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "util/json.h"
#include "util/subprocess.h"

using namespace phoenix;
using namespace phoenix::bench;
namespace fs = std::filesystem;

namespace {

// git fast-import reads its stream from stdin: run with it, or exit.
void must_feed(const std::vector<std::string>& argv, const std::string& cwd, const std::string& stdin_data) {
  util::ProcessOptions po;
  po.argv = argv;
  po.cwd = cwd;
  po.timeout_s = 3600;
  po.stdin_data = stdin_data;
  util::ProcessResult r = util::run_process(po);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "bench: %s exited %d: %s\n", argv[0].c_str(), r.exit_code, r.output.c_str());
    std::exit(1);
  }
}

const std::vector<std::string> kAgent{"/bin/sh", "-c", "echo x >> work.txt"};
const std::vector<std::string> kCheck{"true"};

std::string tasks_file(int tasks) {
  std::string t = "# Tasks\n\n";
  for (int i = 1; i <= tasks; ++i) t += "- [ ] task number " + std::to_string(i) + "\n";
  return t;
}

const std::string kConfig =
    "{ \"checks\": [ { \"id\": \"ok\", \"kind\": \"command_exit\", \"target\": [\"true\"] } ],\n"
    "  \"harness\": { \"command\": [\"/bin/sh\", \"-c\", \"echo x >> work.txt\"] },\n"
    "  \"fixers\": [\"noop\"],\n"
    "  \"loop\": { \"tasks\": \"TASKS.md\", \"max_iterations\": 100000 } }\n";
const std::string kIgnore = ".phoenix/\nincidents/\n";

// A repository like make_loop_repo's, with `files` more tracked files in
// folders of 250 (one commit written by git fast-import, then checked out).
std::string make_big_repo(const std::string& dir, int files, int tasks) {
  fs::create_directories(dir);
  must({"git", "init", "-q", "-b", "main", dir}, dir);
  std::ostringstream s;
  s << "commit refs/heads/main\nauthor Bench <bench@localhost> 1700000000 +0000\n"
       "committer Bench <bench@localhost> 1700000000 +0000\ndata 4\ninit\n";
  auto inline_file = [&](const std::string& path, const std::string& text) {
    s << "M 100644 inline " << path << "\ndata " << text.size() << "\n" << text << "\n";
  };
  for (int i = 0; i < files; ++i)
    inline_file("d" + std::to_string(i / 250) + "/f" + std::to_string(i) + ".txt", "file " + std::to_string(i) + "\n");
  inline_file("TASKS.md", tasks_file(tasks));
  inline_file("phoenix.json", kConfig);
  inline_file(".gitignore", kIgnore);
  s << "\n";
  must_feed({"git", "-C", dir, "fast-import", "--quiet"}, dir, s.str());
  must({"git", "-C", dir, "reset", "-q", "--hard", "main"}, dir);
  return dir;
}

// The loop's worktrees live outside the repository (under ~/.cache/phoenix/
// trees/<repo>-<id>/worktrees/): removed with it, and so is that folder of
// this repository's own.
void drop_worktrees(const std::string& dir) {
  util::ProcessOptions po;
  po.argv = {"git", "-C", dir, "worktree", "list", "--porcelain"};
  po.cwd = dir;
  std::istringstream out(util::run_process(po).output);
  for (std::string line; std::getline(out, line);) {
    if (line.rfind("worktree ", 0) != 0) continue;
    const fs::path w = line.substr(9);
    if (w == fs::path(dir)) continue;
    std::error_code ec;
    fs::remove_all(w, ec);
    if (w.parent_path().filename() == "worktrees") fs::remove_all(w.parent_path().parent_path(), ec);
  }
}

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

// Epoch ms of an ISO-8601 UTC time with milliseconds (the trace's "ts").
double ts_ms(const std::string& ts) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(ts.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) < 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) * 1000.0 + ms;
}

// The gaps between successive loop.task_done entries of the repository's trace.
std::vector<double> iteration_gaps(const std::string& dir) {
  std::ifstream in(dir + "/.phoenix/trace.jsonl");
  std::vector<double> done;
  for (std::string line; std::getline(in, line);) {
    util::Json j = util::Json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "loop.task_done") done.push_back(ts_ms(j.value("ts", "")));
  }
  std::vector<double> gaps;
  for (size_t i = 1; i < done.size(); ++i) gaps.push_back(done[i] - done[i - 1]);
  return gaps;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: phoenix_bench_loop PATH/TO/phoenix-loop [ITERATIONS] [FILES...]\n");
    return 64;
  }
  std::string loop = argv[1];
  int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  std::vector<int> sizes;
  for (int i = 3; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (argc <= 3) sizes = {1000, 10000};
  char tmpl[] = "/tmp/phoenix-bench-loop-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string work = tmpl;
  std::string small_repo = make_loop_repo(work + "/baseline", 1, kAgent);
  double base = baseline_ms(small_repo, 100);

  // 1 task: five whole loops of one iteration each.
  const int kSmallRuns = 5;
  double small_ms = 0;
  for (int i = 0; i < kSmallRuns; ++i) {
    std::string dir = make_loop_repo(work + "/one-" + std::to_string(i), 1, kAgent);
    auto t = Clock::now();
    must({loop, "--branch", "phoenix/bench"}, dir, 0);
    small_ms += ms_since(t);
    drop_worktrees(dir);
  }
  small_ms /= kSmallRuns;

  // 500 tasks: one loop, `iterations` iterations (exit 1: stopped at the cap).
  std::string big = make_loop_repo(work + "/five-hundred", 500, kAgent);
  auto t = Clock::now();
  must({loop, "--branch", "phoenix/bench", "--max-iterations", std::to_string(iterations)}, big, 1);
  double big_ms = ms_since(t) / iterations;
  double big_median = median(iteration_gaps(big));
  drop_worktrees(big);

  // 500 tasks in repositories of `sizes` files.
  struct Row {
    int files;
    double median_ms;
    double setup_ms;
  };
  std::vector<Row> rows;
  for (int files : sizes) {
    std::fprintf(stderr, "bench: a %d-file repository...\n", files);
    std::string dir = make_big_repo(work + "/files-" + std::to_string(files), files, 500);
    auto s = Clock::now();
    must({loop, "--branch", "phoenix/bench", "--max-iterations", std::to_string(iterations)}, dir, 1);
    double total = ms_since(s);
    std::vector<double> gaps = iteration_gaps(dir);
    double med = median(gaps);
    double sum = 0;
    for (double g : gaps) sum += g;
    rows.push_back({files, med, total - sum});
    drop_worktrees(dir);
  }

  base = (base + baseline_ms(small_repo, 100)) / 2;
  std::printf("baseline: agent + check started directly: %.2f ms per iteration (before and after, averaged)\n", base);
  std::printf("1-task file:   %.2f ms per loop of 1 iteration (setup included)   overhead %.2f ms   ratio %.1fx\n",
              small_ms, small_ms - base, small_ms / base);
  std::printf(
      "500-task file: %.2f ms per iteration over %d iterations (median %.2f)   overhead %.2f ms   ratio %.1fx\n",
      big_ms, iterations, big_median, big_ms - base, big_ms / base);
  for (const Row& r : rows)
    std::printf(
        "500-task file, %d-file repository: %.2f ms per iteration (median of %d; setup %.0f ms apart)   overhead "
        "%.2f ms   ratio %.1fx\n",
        r.files, r.median_ms, iterations - 1, r.setup_ms, r.median_ms - base, r.median_ms / base);
  if (rows.size() >= 2 && rows.front().median_ms > 0)
    std::printf("%d-file vs %d-file repository: %.2fx per iteration (1.00x = does not grow)\n", rows.back().files,
                rows.front().files, rows.back().median_ms / rows.front().median_ms);
  fs::remove_all(work);
  return 0;
}
