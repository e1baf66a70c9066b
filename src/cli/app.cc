#include "cli/app.h"

#include <cstring>
#include <iostream>
#include <sstream>
#include <streambuf>

#include "cli/manual.h"
#include "util/error.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> cmds{
      {"init", "init [--force] [--no-measure] [--json]",
       "write phoenix.json (detects setup and checks), then measure each check here and in a fresh tree", cmd_init},
      {"run", "run [--dry-run] [--only ID,...] [--fixer LIST] [--allow-dirty] [--explain] [--json]",
       "detect, propose, verify, heal: bounded; escalates with an incident note", cmd_run},
      {"config", "config show [--json]", "every effective setting and where it came from", cmd_config},
      {"sense", "sense [CHECK-ID...] [--check JSON]... [--json]", "run checks once; exit 0 all green, 1 any red",
       cmd_sense},
      {"snapshot", "snapshot PATH --check ID|JSON [--json]", "bless a copy of PATH, only if the check passes",
       cmd_snapshot},
      {"heal", "heal --strategy rollback|retry ...",
       "restore a snapshot or retry a check; healed only by a green recheck", cmd_heal},
      {"trace", "trace verify [FILE] [--json]", "check the hash chain of .phoenix/trace.jsonl", cmd_trace},
      {"recover", "recover [--json]", "return an interrupted run to a consistent state", cmd_recover},
      {"hook",
       "hook install [--agent CLI [--shared]] [--json] | hook uninstall [--agent CLI] [--json] | hook run pre-push "
       "[REMOTE URL] | hook run stop --agent CLI",
       "the pre-push hook, and the stop hook of claude, codex or gemini: measure what is pushed or left", cmd_hook},
      {"journal", "journal [stats|flaky|push|pull [REMOTE]] [--forget PREFIX] [--json]",
       "remembered verified fixes: list, forget, stats, share", cmd_journal},
      {"status", "status [--json] [--watch]", "what phoenix-loop is doing, from .phoenix/loop-state.json", cmd_status},
      {"report", "report [--since WHEN] [--json] [--html FILE]", "what happened: tasks, heals, incidents, time, cost",
       cmd_report},
      {"doctor", "doctor [--json]",
       "what works here and what does not: git, hook, agent CLIs, sandbox, journal, config", cmd_doctor},
      {"notify", "notify --test [--json]",
       "send one test message to the webhook of loop.notify and print what came back", cmd_notify},
  };
  return cmds;
}

std::string top_help() {
  std::string s =
      "usage: phoenix [-C DIR] [--version] [--help] COMMAND [ARGS]\n\n"
      "Phoenix runs deterministic checks on a git repository, keeps a known-good\n"
      "point to fall back to, and heals a red check only when a fresh re-run of\n"
      "that check passes.\n\ncommands:\n";
  for (const auto& c : commands()) {
    std::string n = "  " + c.name;
    n.resize(13, ' ');
    s += n + c.summary + "\n";
  }
  s += "\nexit codes: 0 success, 1 red / rolled back, 2 escalated, 64 usage error,\n"
       "78 configuration error, 130 interrupted.\n"
       "'phoenix COMMAND --help' describes one command.\n";
  return s;
}

namespace {

// --quiet: stdout says nothing, and stderr keeps only the "...: error: ..."
// lines (so a failure still says why). Lines are judged whole.
class ErrorsOnly : public std::streambuf {
 public:
  explicit ErrorsOnly(std::streambuf* to) : to_(to) {}

 protected:
  int overflow(int ch) override {
    if (ch == traits_type::eof()) return 0;
    line_ += static_cast<char>(ch);
    if (ch == '\n') {
      if (line_.find(": error: ") != std::string::npos)
        to_->sputn(line_.data(), static_cast<std::streamsize>(line_.size()));
      line_.clear();
    }
    return ch;
  }

 private:
  std::streambuf* to_;
  std::string line_;
};

// Swallows everything, keeping nothing.
class Nowhere : public std::streambuf {
 protected:
  int overflow(int ch) override { return traits_type::not_eof(ch); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

void go_quiet() {
  // Never destroyed: std::cout and std::cerr are flushed after every static
  // object is gone, and must not find their buffers freed.
  static auto* nowhere = new Nowhere;
  static auto* errors = new ErrorsOnly(std::cerr.rdbuf());
  std::cout.rdbuf(nowhere);
  std::cerr.rdbuf(errors);
}

std::vector<std::string> long_names(const po::options_description& d) {
  std::vector<std::string> out;
  for (const auto& o : d.options()) out.push_back("--" + o->long_name());
  return out;
}

}  // namespace

void print_json(const Context& ctx, const nlohmann::json& j) {
  std::cout << j.dump(ctx.color_out ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

bool parse_command(const std::string& name, po::options_description desc, const std::vector<std::string>& args,
                   Parsed& out, bool positional_allowed) {
  std::string dir = ".";
  desc.add_options()("directory,C", po::value<std::string>(&dir), "run as if started in DIR")(
      "json", "print data as JSON on stdout")("quiet,q", "print nothing but errors; the exit code says the result")(
      "help,h", "show this help");
  // Man pages and completion read the options from here, so they are
  // always the ones --help prints (cli/manual.h).
  if (std::vector<OptionInfo>* sink = describe_sink()) {
    *sink = option_infos(desc);
    return false;
  }
  for (const auto& a : args)
    if (a == "--help-man") {
      std::cout << program_man_page(name, "", desc);
      return false;
    }
  po::positional_options_description pos;
  pos.add("args", -1);
  po::options_description all = desc;
  all.add_options()("args", po::value<std::vector<std::string>>()->composing(), "");
  try {
    po::parsed_options parsed = po::command_line_parser(args).options(all).positional(pos).run();
    po::store(parsed, out.vm);
    po::notify(out.vm);
  } catch (const po::unknown_option& e) {
    std::string opt = e.get_option_name();
    std::string near = util::nearest(opt, long_names(desc));
    throw UsageError(name + ": unknown option " + opt + (near.empty() ? "" : " (did you mean " + near + "?)"));
  } catch (const po::error& e) { throw UsageError(name + ": " + e.what()); }
  if (out.vm.count("help")) {
    const Command* cmd = nullptr;
    for (const auto& c : commands())
      if (c.name == name || util::starts_with(name, c.name + " ")) cmd = &c;
    // A program of its own (phoenix-loop) is named as it is typed.
    std::cout << "usage: "
              << (cmd                                   ? "phoenix " + cmd->synopsis
                  : util::starts_with(name, "phoenix-") ? name + " [options]"
                                                        : "phoenix " + name)
              << "\n";
    if (cmd) std::cout << "\n" << cmd->summary << "\n";
    std::cout << "\n" << desc << "\n";
    return false;
  }
  if (out.vm.count("args")) out.positional = out.vm["args"].as<std::vector<std::string>>();
  if (!positional_allowed && !out.positional.empty())
    throw UsageError(name + ": unexpected argument '" + out.positional[0] + "'");
  out.ctx = make_context(dir);
  out.ctx.json = out.vm.count("json") > 0;
  if (out.vm.count("quiet")) {
    if (out.ctx.json) throw UsageError(name + ": --quiet and --json exclude each other");
    go_quiet();
  }
  return true;
}

int phoenix_main(int argc, char** argv) {
  util::install_signal_handlers();
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    // Global options before the command: -C DIR, --version, --help.
    std::string dir;
    size_t i = 0;
    while (i < args.size() && util::starts_with(args[i], "-")) {
      if (args[i] == "--version") {
        std::cout << "phoenix " << PHOENIX_VERSION << "\n";
        return kExitOk;
      }
      if (args[i] == "--help" || args[i] == "-h") {
        std::cout << top_help();
        return kExitOk;
      }
      if (args[i] == "--help-man") {  // hidden: the build writes the man pages with it
        std::cout << man_page(i + 1 < args.size() ? args[i + 1] : "phoenix");
        return kExitOk;
      }
      if (args[i] == "-C") {
        if (i + 1 >= args.size()) throw UsageError("-C needs a directory");
        dir = args[i + 1];
        i += 2;
        continue;
      }
      throw UsageError("unknown option " + args[i] + " before the command (try 'phoenix --help')");
    }
    if (i >= args.size()) {
      std::cerr << top_help();
      return kExitUsage;
    }
    std::string name = args[i];
    std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
    if (name == "__complete")  // hidden: what completions/phoenix.bash and _phoenix call
      return complete(rest, dir.empty() ? "." : dir);
    if (!dir.empty()) rest.insert(rest.begin(), {"-C", dir});
    for (const auto& c : commands())
      if (c.name == name) {
        int rc = c.run(rest);
        if (util::interrupted_signal() != 0 && rc != kExitOk) return kExitInterrupted;
        return rc;
      }
    std::vector<std::string> names;
    for (const auto& c : commands()) names.push_back(c.name);
    std::string near = util::nearest(name, names);
    throw UsageError("unknown command '" + name + "'" +
                     (near.empty() ? " (try 'phoenix --help')" : " (did you mean '" + near + "'?)"));
  } catch (const Error& e) {
    std::cerr << "phoenix: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "phoenix: error: " << e.what() << "\n";
    return kExitRed;
  }
}

}  // namespace phoenix::cli
