// `phoenix report [--since WHEN] [--json] [--md] [--html FILE]`: the night's
// story, read back from .phoenix/trace.jsonl by src/report/ — the verdict,
// what needs a person first, tasks, heals, rate-limit waits, escalations and
// the one command to run next. By default since the last loop's start.
#include <filesystem>
#include <iostream>

#include "cli/app.h"
#include "engine/cycle.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "report/night.h"
#include "report/render.h"
#include "report/summary.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::cli {

namespace {

// "24h", "30m", "7d" back from now, or an ISO-8601 UTC date/time.
long long parse_since(const std::string& w) {
  if (w.size() >= 2) {
    char unit = w.back();
    std::string num = w.substr(0, w.size() - 1);
    bool digits = !num.empty() && num.find_first_not_of("0123456789") == std::string::npos;
    long long mult = unit == 'm' ? 60'000LL : unit == 'h' ? 3'600'000LL : unit == 'd' ? 86'400'000LL : 0;
    if (digits && mult) return util::now_ms() - std::stoll(num) * mult;
  }
  std::string full = w;
  if (full.size() == 10) full += "T00:00:00";
  long long t = util::iso8601_ms(full);
  if (t < 0) throw UsageError("report: --since " + w + ": expected 24h, 30m, 7d or an ISO-8601 time (UTC)");
  return t;
}

// What the repository adds to the trace: known-good, the abandoned refs by
// name, the tasks file on the loop branch.
report::Facts repo_facts(const Context& ctx, std::shared_ptr<gitx::Repo>& keep) {
  report::Facts f;
  f.root = ctx.root;
  if (!ctx.in_repo) return f;
  try {
    keep = std::make_shared<gitx::Repo>(gitx::Repo::discover(ctx.root));
    for (const auto& r : keep->list_refs(layout::kAbandonedPrefix)) f.abandoned_refs.emplace(r.sha, r.name);
    std::shared_ptr<gitx::Repo> repo = keep;
    f.known_good_of = [repo](const std::string& branch) {
      try {
        return repo->read_ref(layout::known_good_ref_of(branch.empty() ? repo->head_branch() : branch)).value_or("");
      } catch (const std::exception&) { return std::string(); }
    };
    f.tasks_at = [repo](const std::string& branch, const std::string& path) {
      try {
        return repo->read_blob_at(branch, path).value_or("");
      } catch (const std::exception&) { return std::string(); }
    };
  } catch (const std::exception&) {
    // A report from the trace alone.
  }
  return f;
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  po::options_description desc("report options");
  desc.add_options()("since", po::value<std::string>(),
                     "only events since WHEN: 24h, 30m, 7d or ISO-8601 (UTC); default: the last loop's start")(
      "md", "write the report as Markdown (for a pull request or a chat message)")(
      "html", po::value<std::string>(), "also write the report as one self-contained HTML page to FILE");
  Parsed p;
  if (!parse_command("report", desc, args, p, false)) return kExitOk;
  std::string path = p.ctx.trace_path();
  if (!util::path_exists(path)) {
    std::cerr << "phoenix: nothing to report: " << path << " is missing\n";
    return kExitRed;
  }
  // The trace is read once; every rendering comes from the one night.
  const std::vector<report::Event> events = report::read_events(util::read_file(path), 0);
  // "The last night" is the last loop run and nothing else: from its start
  // to its end (a later hook or `phoenix run` is not part of it). --since
  // takes everything from then on. The text and --json cover one window.
  const bool last_loop = !p.vm.count("since");
  report::Window window;
  window.since_ms = last_loop ? report::last_loop_start(events) : parse_since(p.vm["since"].as<std::string>());
  window.until_ms = last_loop && window.since_ms > 0 ? report::loop_end_after(events, window.since_ms) : -1;
  std::shared_ptr<gitx::Repo> repo;
  report::Night night = report::read_night(events, window, repo_facts(p.ctx, repo));
  if (p.ctx.json) {
    util::Json j = report::summary_json(night);
    j["verdict"] = report::verdict(night);
    j["needs_person"] = report::needs_person(night);
    j["next"] = report::next_command(night);
    print_json(p.ctx, j);
  } else if (p.vm.count("md")) {
    std::cout << report::markdown(night);
  } else {
    std::cout << report::terminal(night, p.ctx.color_out);
  }
  if (p.vm.count("html")) {
    std::string file = p.vm["html"].as<std::string>();
    std::filesystem::path abs = std::filesystem::absolute(file);
    util::write_file_atomic(abs.string(), report::html(night, abs.parent_path().string()));
    if (!p.ctx.json) std::cout << "wrote " << file << "\n";
  }
  return kExitOk;
}

}  // namespace phoenix::cli
