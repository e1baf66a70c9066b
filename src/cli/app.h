// The `phoenix` command line: one table of commands, each parsed with
// Boost.Program_options; the one top-level catch that prints
// "phoenix: error: ..." and returns a documented exit code.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cli/context.h"

namespace phoenix::cli {

namespace po = boost::program_options;

struct Command {
  std::string name;
  std::string synopsis;  // "sense [CHECK...] [--check JSON]..."
  std::string summary;   // one line
  std::function<int(const std::vector<std::string>&)> run;
};

const std::vector<Command>& commands();

// What a command's parser hands back.
struct Parsed {
  po::variables_map vm;
  std::vector<std::string> positional;
  Context ctx;
};

// Parses `args` against `desc` plus the common options (-C, --json,
// --help). Prints help and returns nullopt-like (help=true) for --help.
// Unknown options are UsageErrors with "did you mean".
bool parse_command(const std::string& name, po::options_description desc, const std::vector<std::string>& args,
                   Parsed& out, bool positional_allowed = true);

int phoenix_main(int argc, char** argv);
// phoenix-loop's (cmd_loop.cc): its options, then loop::run_loop; the one
// top-level catch prints "phoenix-loop: error: ..." and returns the code.
int phoenix_loop_main(int argc, char** argv);

// The top-level --help text.
std::string top_help();

// Command entry points (cmd_*.cc).
int cmd_sense(const std::vector<std::string>& args);
int cmd_snapshot(const std::vector<std::string>& args);
int cmd_heal(const std::vector<std::string>& args);
int cmd_trace(const std::vector<std::string>& args);
int cmd_recover(const std::vector<std::string>& args);
int cmd_hook(const std::vector<std::string>& args);
int cmd_journal(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_init(const std::vector<std::string>& args);
int cmd_config(const std::vector<std::string>& args);
int cmd_status(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_doctor(const std::vector<std::string>& args);
int cmd_notify(const std::vector<std::string>& args);

// The folder of the shipped templates (installed, or the source tree's).
std::string templates_dir();

// Prints a JSON value to stdout (pretty on a TTY, one line otherwise).
void print_json(const Context& ctx, const nlohmann::json& j);

}  // namespace phoenix::cli
