// phoenix_bench_engine: the engine's own cost per heal cycle, excluding the
// time spent in checks and fixers (both instant fakes here), on a real
// repository of N files. Printed beside the cost of one `git status`-like
// libgit2 pass over the same repository, measured in the same run.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/cycle.h"
#include "gitx/repo.h"
#include "util/subprocess.h"

using namespace phoenix;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class FileCheck : public engine::CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    auto t = Clock::now();
    checks::SenseResult r;
    r.id = spec.id;
    std::ifstream in(root + "/value.txt");
    std::string v;
    std::getline(in, v);
    r.ok = v == "good";
    r.signal = r.ok ? "exit=0" : "exit=1";
    r.output = "FAIL value_test\n";
    spent_ms += ms_since(t);
    return r;
  }
  double spent_ms = 0;
};

class InstantFixer : public fixers::Fixer {
 public:
  std::string name() const override { return "instant"; }
  fixers::Proposal propose(const fixers::Request&) override {
    fixers::Proposal p;
    p.status = fixers::Status::kProposed;
    p.patch = "diff --git a/value.txt b/value.txt\n--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-bad\n+good\n";
    return p;
  }
};

void git(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", dir});
  auto r = util::run_process({.argv = args});
  if (r.exit_code != 0) {
    std::fprintf(stderr, "git failed: %s\n", r.output.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int files = argc > 1 ? std::atoi(argv[1]) : 1000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  fs::path dir = fs::temp_directory_path() / ("phoenix-bench-engine-" + std::to_string(::getpid()));
  fs::create_directories(dir / "src");
  git(dir, {"init", "-q", "-b", "main"});
  git(dir, {"config", "user.name", "bench"});
  git(dir, {"config", "user.email", "bench@localhost"});
  for (int i = 0; i < files; ++i) std::ofstream(dir / "src" / ("f" + std::to_string(i) + ".txt")) << i << "\n";
  std::ofstream(dir / ".gitignore") << ".phoenix/\n";
  std::ofstream(dir / "value.txt") << "bad\n";
  git(dir, {"add", "-A"});
  git(dir, {"commit", "-qm", "bench"});
  std::string root = dir.string();
  config::Config cfg = config::parse(R"({"checks":[{"id":"value","kind":"command_exit","target":["true"]}]})", "bench");
  double engine_total = 0, status_total = 0;
  for (int k = 0; k < rounds; ++k) {
    // Reset to the broken state (not timed).
    git(dir, {"reset", "-q", "--hard", "HEAD~0"});
    if (k > 0) git(dir, {"reset", "-q", "--hard", "HEAD~1"});
    FileCheck check;
    std::vector<std::unique_ptr<fixers::Fixer>> fx;
    fx.push_back(std::make_unique<InstantFixer>());
    trace::Trace t(root + "/.phoenix/trace.jsonl");
    engine::RunOptions opt;
    auto t0 = Clock::now();
    engine::Engine e(root, cfg, opt, check, std::move(fx), t, nullptr);
    engine::RunResult r = e.run();
    double total = ms_since(t0);
    if (r.issues.empty() || r.issues[0].state != engine::State::kHealed) {
      std::fprintf(stderr, "bench: the cycle did not heal\n");
      return 1;
    }
    engine_total += total - check.spent_ms;
    auto t1 = Clock::now();
    auto repo = gitx::Repo::open(root);
    (void)repo.is_clean({".phoenix/"});
    status_total += ms_since(t1);
  }
  std::printf(
      "engine overhead per heal cycle, %d files: %.1f ms (checks excluded); one libgit2 status pass: %.1f ms; ratio %.1fx\n",
      files, engine_total / rounds, status_total / rounds, (engine_total / rounds) / (status_total / rounds));
  fs::remove_all(dir);
  return 0;
}
