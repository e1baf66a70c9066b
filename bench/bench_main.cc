// phoenix_bench: helpers for bench/run.sh that need Phoenix's own code.
//   phoenix_bench gen-trace N FILE   write a valid N-entry trace quickly
//   phoenix_bench verify-trace FILE  time trace::verify, print MB/s and entries/s
//   phoenix_bench journal-replay N   replay overhead with a journal of N entries
//   phoenix_bench move-worktree WT REV... move the worktree WT to each REV in
//                                    turn, printing each move's time (for a profiler)
//   phoenix_bench bisect GOOD BAD CHECK WT...  bisect GOOD..BAD with the shell
//                                    command CHECK, probing in the given
//                                    worktrees (one = serial), timed
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/cycle.h"
#include "engine/signature.h"
#include "fixers/journal_fixer.h"
#include "fixers/noop.h"
#include "gitx/repo.h"
#include "fixers/bisect.h"
#include "gitx/worktree.h"
#include "journal/journal.h"
#include "layout/paths.h"
#include "engine/journal_sink.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/subprocess.h"
#include "util/text.h"

using namespace phoenix;

namespace {

using Clock = std::chrono::steady_clock;

double since_us(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string value_patch(const std::string& from, const std::string& to) {
  return "diff --git a/value.txt b/value.txt\n--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-" + from + "\n+" + to +
         "\n";
}

// Green when value.txt says "good"; the failure output never changes, so
// every round is the same issue. Counts the time spent measuring, which is
// what the check costs and not replay overhead.
class ValueCheck : public engine::CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    auto t0 = Clock::now();
    checks::SenseResult r;
    r.id = spec.id;
    std::ifstream in(root + "/value.txt");
    std::string v;
    std::getline(in, v);
    r.ok = v == "good";
    r.signal = r.ok ? "exit=0" : "exit=1";
    r.output = r.ok ? "ok\n" : "FAIL: value_test (value is not good)\n";
    check_us += since_us(t0);
    return r;
  }
  double check_us = 0;
};

// journal-replay N: a journal of N entries (N-1 other issues plus the one
// that breaks), then the same bug healed from it again and again.
//   engine: a whole `phoenix run` that heals from the journal, minus the
//           time of its two check runs (the detection and the re-measure):
//           journal open, lookup, applicability check, checkpoint, apply,
//           fix commit, trace, and recording the replay.
//   journal: just lookup + record_replay on an open journal.
// Both are medians; neither should grow with N.
int journal_replay(long n) {
  namespace fs = std::filesystem;
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/phoenix-bench-journal-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return 1;
  const std::string dir = buf.data();
  const std::string root = dir + "/repo";
  fs::create_directories(root);
  int rc = 0;
  try {
    util::ProcessOptions init;
    init.argv = {"git", "init", "-q", "-b", "main", root};
    if (util::run_process(init).exit_code != 0) throw Error("git init failed");
    { std::ofstream(root + "/.gitignore") << ".phoenix/\n"; }
    { std::ofstream(root + "/value.txt") << "good\n"; }
    gitx::Repo repo = gitx::Repo::open(root);
    repo.commit_all("start", true, layout::state_prefixes());
    const std::string jpath = root + "/.phoenix/journal.sqlite";
    const std::string sig = engine::issue_signature("value", "FAIL: value_test (value is not good)\n");
    const std::string fix = value_patch("bad", "good");
    auto t_fill = Clock::now();
    {
      journal::Journal j = journal::Journal::open(jpath);
      // N-1 other issues, merged in one transaction as a pull would.
      std::vector<journal::Entry> others;
      long long now = util::now_ms();
      for (long i = 1; i < n; ++i) {
        journal::Entry e;
        e.signature = util::sha256_hex("bench issue " + std::to_string(i));
        e.patch = value_patch("broken " + std::to_string(i), "good");
        e.patch_hash = journal::patch_hash(e.patch);
        e.check = "value";
        e.failure_type = "unit";
        e.files = {"value.txt"};
        e.fixer = "harness";
        e.duration_ms = 60'000;
        e.model_calls = 1;
        e.tallies["00000000000000000000000000000001"] = {1, 1, 0, 0, now - i, now - i, now - i, 0, ""};
        others.push_back(std::move(e));
      }
      j.merge(others);
      journal::Fix h;
      h.signature = sig;
      h.check = "value";
      h.failure_type = "unit";
      h.patch = fix;
      h.files = {"value.txt"};
      h.fixer = "harness";
      h.duration_ms = 60'000;
      h.model_calls = 1;
      j.record_healed(h);
    }
    double fill_s = since_us(t_fill) / 1e6;

    config::Config cfg =
        config::parse(R"({"checks":[{"id":"value","kind":"command_exit","target":["true"],"editable":["value.txt"]}]})",
                      "phoenix.json");
    engine::RunOptions opt;
    const int rounds = 15;
    std::vector<double> engine_us;
    for (int r = 0; r < rounds; ++r) {
      { std::ofstream(root + "/value.txt") << "bad\n"; }
      repo.commit_all("break it", false, layout::state_prefixes());
      ValueCheck check;
      auto t0 = Clock::now();
      journal::Journal j = journal::Journal::open(jpath);
      std::vector<std::unique_ptr<fixers::Fixer>> fx;
      fx.push_back(std::make_unique<fixers::JournalFixer>(j));
      fx.push_back(std::make_unique<fixers::NoopFixer>());
      engine::JournalSink sink(j);
      trace::Trace t(root + "/.phoenix/trace.jsonl");
      engine::Engine e(root, cfg, opt, check, std::move(fx), t, nullptr, &sink);
      engine::RunResult res = e.run();
      double total = since_us(t0);
      if (res.issues.size() != 1 || res.issues[0].state != engine::State::kHealed || res.issues[0].fixer != "journal")
        throw Error("round " + std::to_string(r) + " did not heal from the journal");
      engine_us.push_back(total - check.check_us);
    }

    journal::Journal j = journal::Journal::open(jpath);
    std::vector<double> journal_us;
    for (int r = 0; r < 200; ++r) {
      auto t0 = Clock::now();
      auto hits = j.lookup(sig);
      if (hits.empty() || !j.record_replay(sig, hits[0].patch_hash)) throw Error("the entry went missing");
      journal_us.push_back(since_us(t0));
    }
    std::printf(
        "journal-replay: %ld entries (filled in %.1f s): replay overhead beyond the two check runs %.2f ms "
        "(median of %d runs); journal lookup+record %.0f us (median of %zu)\n",
        n, fill_s, median(engine_us) / 1000, rounds, median(journal_us), journal_us.size());
    std::printf("entries=%ld overhead_us=%.0f journal_us=%.0f\n", n, median(engine_us), median(journal_us));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "phoenix_bench: journal-replay: %s\n", e.what());
    rc = 1;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: phoenix_bench gen-trace N FILE | verify-trace FILE | journal-replay N\n");
    return 64;
  }
  std::string cmd = argv[1];
  if (cmd == "gen-trace" && argc == 4) {
    long n = std::stol(argv[2]);
    std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
    std::string prev, hash;
    for (long i = 1; i <= n; ++i) {
      out << trace::format_entry(
          static_cast<uint64_t>(i), "sense",
          {{"check", "unit"}, {"ok", i % 7 != 0}, {"signal", i % 7 ? "exit=0" : "exit=1"}, {"duration_ms", i % 1000}},
          prev, &hash);
      prev = hash;
    }
    return 0;
  }
  if (cmd == "journal-replay" && argc == 3) return journal_replay(std::stol(argv[2]));
  if (cmd == "bisect" && argc >= 6) {
    std::vector<std::string> trees(argv + 5, argv + argc);
    gitx::Repo repo = gitx::Repo::open(trees[0]);
    int runs = 0;
    auto t0 = std::chrono::steady_clock::now();
    fixers::BisectResult r = fixers::bisect_commits_parallel(repo, trees, argv[2], argv[3],
                                                             [&](const std::string&, const fixers::BisectProbe& p) {
                                                               ++runs;
                                                               util::ProcessOptions o;
                                                               o.argv = {"sh", "-c", argv[4]};
                                                               o.cwd = p.worktree;
                                                               o.cancel_fd = p.cancel_fd;
                                                               return util::run_process(o).exit_code == 0;
                                                             });
    std::printf("bisect over %zu commits with %zu worktree(s): %.0f ms, %d check runs (%zu used, %zu stopped), %s\n",
                r.range_size, trees.size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), runs,
                r.steps.size(), r.cancelled, r.culprit.substr(0, 7).c_str());
    return r.verdict == fixers::BisectResult::Verdict::kFound ? 0 : 1;
  }
  if (cmd == "move-worktree" && argc >= 4) {
    gitx::Repo wt = gitx::Repo::open(argv[2]);
    for (int i = 3; i < argc; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      gitx::move_worktree(wt, argv[i], layout::state_prefixes());
      std::printf("move to %s: %.1f ms\n", argv[i],
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return 0;
  }
  if (cmd == "verify-trace") {
    auto t0 = std::chrono::steady_clock::now();
    trace::VerifyResult v = trace::verify(argv[2]);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("trace verify: %llu entries, %.1f MB in %.2f s: %.1f MB/s, %.0f entries/s%s\n",
                static_cast<unsigned long long>(v.entries), v.bytes / 1e6, s, v.bytes / 1e6 / s, v.entries / s,
                v.ok ? "" : " (NOT OK)");
    return v.ok ? 0 : 1;
  }
  std::fprintf(stderr, "phoenix_bench: unknown command %s\n", cmd.c_str());
  return 64;
}
