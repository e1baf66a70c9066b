// phoenix-loop: the overnight driver (src/loop/loop.h). Parses the command
// line, loads phoenix.json, and hands over; the one top-level catch prints
// "phoenix-loop: error: ..." and returns the error's exit code.
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/app.h"
#include "config/config.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "loop/loop.h"
#include "loop/notify.h"
#include "util/error.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::cli {

namespace {

po::options_description loop_options() {
  po::options_description desc("phoenix-loop options");
  desc.add_options()("tasks", po::value<std::string>(),
                     "Markdown tasks file ('- [ ]' lines), relative to the repository")(
      "prompt", po::value<std::string>(), "prompt file, run again every iteration (ralph mode)")(
      "max-iterations", po::value<int>(), "stop after N iterations (default loop.max_iterations)")(
      "until", po::value<std::string>(), "stop at HH:MM (local) or an ISO-8601 time")(
      "branch", po::value<std::string>(), "branch to work on (default phoenix/loop-YYYYMMDD)")(
      "workers", po::value<int>(),
      "work on up to N tasks at once, each in its own worktree, through the verified merge queue (default "
      "loop.workers, 1)")("resume", "carry on from .phoenix/loop-run.json and the branch after a crash")(
      "no-cache", "measure every check fresh, never from the measurement store (also PHOENIX_NO_CACHE=1)")(
      "max-cost", po::value<double>(),
      "start no iteration that would take the agents' reported cost past USD (default loop.max_cost_usd)")(
      "max-hours", po::value<double>(),
      "start no iteration that would end past H hours of running (default loop.max_hours)")(
      "shard", po::value<std::string>(),
      "work only on shard I of N (I/N, I from 1; default from JOB_COMPLETION_INDEX and JOB_COMPLETION_COUNT), "
      "pushing each green task to --remote as phoenix/task-<id>")(
      "remote", po::value<std::string>(), "where a shard pushes its task branches (default origin)")(
      "merge", po::value<std::string>(),
      "take REMOTE's phoenix/task-* branches through the verified merge queue and push the loop branch there");
  return desc;
}

// --max-iterations, --workers: at least 1.
std::optional<int> count_option(const Parsed& p, const char* name) {
  if (!p.vm.count(name)) return std::nullopt;
  int n = p.vm[name].as<int>();
  if (n < 1) throw UsageError(std::string("phoenix-loop: --") + name + " must be at least 1");
  return n;
}

// --max-cost, --max-hours: positive.
void read_caps(const Parsed& p, loop::Options& o) {
  for (const char* cap : {"max-cost", "max-hours"}) {
    if (!p.vm.count(cap)) continue;
    double v = p.vm[cap].as<double>();
    if (!(v > 0)) throw UsageError(std::string("phoenix-loop: --") + cap + " must be a positive number");
    (std::string(cap) == "max-cost" ? o.max_cost_usd : o.max_hours) = v;
  }
}

loop::Options loop_options_of(const Parsed& p) {
  loop::Options o;
  o.root = p.ctx.root;
  if (p.vm.count("tasks")) o.tasks = p.vm["tasks"].as<std::string>();
  if (p.vm.count("prompt")) o.prompt = p.vm["prompt"].as<std::string>();
  if (!o.tasks.empty() && !o.prompt.empty()) throw UsageError("phoenix-loop: --tasks and --prompt exclude each other");
  o.max_iterations = count_option(p, "max-iterations");
  if (p.vm.count("until")) {
    o.deadline_ms = loop::parse_until(p.vm["until"].as<std::string>(), util::now_ms());
    o.deadline_text = p.vm["until"].as<std::string>();
  }
  if (auto n = count_option(p, "workers")) o.workers = *n;
  if (p.vm.count("branch")) o.branch = p.vm["branch"].as<std::string>();
  o.resume = p.vm.count("resume") > 0;
  o.no_cache = p.vm.count("no-cache") > 0;
  read_caps(p, o);
  if (p.vm.count("merge")) o.merge_remote = p.vm["merge"].as<std::string>();
  if (p.vm.count("shard")) o.shard = loop::parse_shard(p.vm["shard"].as<std::string>());
  else if (o.merge_remote.empty()) o.shard = loop::shard_from_env([](const char* k) { return std::getenv(k); });
  if (p.vm.count("remote")) {
    if (!o.shard) throw UsageError("phoenix-loop: --remote is where a shard pushes: it needs --shard I/N");
    o.remote = p.vm["remote"].as<std::string>();
  }
  o.templates_dir = templates_dir();
  return o;
}

int loop_main(int argc, char** argv) {
  util::install_signal_handlers();
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args)
    if (a == "--version") {
      std::cout << "phoenix-loop " << PHOENIX_VERSION << "\n";
      return kExitOk;
    }
  Parsed p;
  if (!parse_command("phoenix-loop", loop_options(), args, p, false)) {
    std::cout << "exit codes: 0 every task done and every check green, 1 stopped / skipped tasks / a cap reached,\n"
                 "2 escalated, 64 usage error, 78 configuration error, 130 interrupted.\n";
    return kExitOk;
  }
  if (!p.ctx.in_repo) throw UsageError("phoenix-loop: " + p.ctx.root + " is not inside a git repository");
  config::Config cfg = config::load(p.ctx.root, true);
  if (cfg.loop.webhook) loop::webhook_secrets(*cfg.loop.webhook);  // its variables are set, or exit 78 now
  layout::require_writable(gitx::Repo::open(p.ctx.root));
  const loop::Options o = loop_options_of(p);
  return loop::run_loop(o, cfg, p.ctx.trace(),
                        [](const std::string& s) { std::cerr << "phoenix-loop: " << s << "\n"; });
}

// "phoenix-loop: error: <what>", once: messages that name the program
// already (the loop's own usage errors do) are not prefixed twice.
void print_error(const std::string& what) {
  const std::string self = "phoenix-loop: ";
  std::cerr << self << "error: " << (util::starts_with(what, self) ? what.substr(self.size()) : what) << "\n";
}

}  // namespace

int phoenix_loop_main(int argc, char** argv) {
  try {
    return loop_main(argc, argv);
  } catch (const Error& e) {
    print_error(e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitRed;
  }
}

}  // namespace phoenix::cli
