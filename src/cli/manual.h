// What `--help` says, in the other shapes users meet it in: man pages
// (phoenix(1), phoenix-loop(1), phoenix.json(5)) and shell completion.
//
// Nothing here is written by hand twice: a command's options are read from
// the very options_description its `--help` prints (each command is run in
// "describe" mode, see parse_command), and phoenix.json(5) walks the JSON
// Schema shipped in templates/. The build writes the man pages by running
// `phoenix --help-man PAGE`; a test compares them with `--help`.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace phoenix::cli {

struct OptionInfo {
  std::string long_name;   // "--only"
  std::string short_name;  // "-C", or ""
  std::string value;       // "ARG" when it takes a value, else ""
  std::string help;
};

struct CommandInfo {
  std::string name;
  std::string synopsis;
  std::string summary;
  std::vector<OptionInfo> options;  // the command's own, then the common ones
  std::vector<std::string> subcommands;
};

// The options of a description, as --help prints them.
std::vector<OptionInfo> option_infos(const boost::program_options::options_description& desc);

// While this is set, parse_command records the command's options in it and
// returns false: the command reads no files and runs nothing.
std::vector<OptionInfo>*& describe_sink();

// Every `phoenix` command with its options (runs each in describe mode).
std::vector<CommandInfo> describe_commands();

// roff sources. `page` is "phoenix", "phoenix.json"; throws UsageError for
// another name. phoenix-loop(1) comes from program_man_page(), called by
// parse_command for `phoenix-loop --help-man`.
std::string man_page(const std::string& page);
// A man page for a program with one set of options. Ends with an open
// "EXIT STATUS" section: the plain text the program prints after its
// --help (its exit codes) becomes that section's body.
std::string program_man_page(const std::string& program, const std::string& summary,
                             const boost::program_options::options_description& desc);

// `phoenix __complete WORD...`: the words typed after `phoenix`, the last
// one being completed (possibly empty). Prints one candidate per line:
// commands, subcommands, flags, and check ids read from phoenix.json.
int complete(const std::vector<std::string>& words, const std::string& cwd);

}  // namespace phoenix::cli
