// Running only some tests of a check: see engine/selection.h.
#include "engine/selection.h"

#include <algorithm>
#include <set>

#include "engine/output_text.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::engine {

using checks::Runner;

namespace {

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_shell(const std::string& b) {
  return b == "sh" || b == "bash" || b == "dash" || b == "zsh" || b == "ksh" || b == "fish";
}

// A word that may stand before the runner's own: a launcher (`uv run`,
// `npx`, `timeout 60`, `env VAR=x`) or one of its options.
bool launcher_word(const std::string& w) {
  static const std::set<std::string> words{"env",   "npx",  "uv",   "uvx",   "run", "poetry",  "pipenv",
                                           "pnpm",  "exec", "yarn", "bunx",  "bun", "timeout", "nice",
                                           "nohup", "--",   "pdm",  "hatch", "rye", "xvfb-run"};
  if (words.count(basename_of(w)) || util::starts_with(w, "-")) return true;
  const size_t eq = w.find('=');
  if (eq != std::string::npos && eq > 0 && w.find('/') > eq) return true;  // VAR=value
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return output::is_digit(c) || c == '.'; });
}

struct Found {
  Runner runner;
  size_t at;  // the word that names it ("pytest", "ctest", go's and cargo's "test")
};

std::optional<Found> find_runner(const std::vector<std::string>& argv) {
  if (argv.empty() || is_shell(basename_of(argv[0]))) return std::nullopt;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string b = basename_of(argv[i]);
    if (b == "pytest" || b == "py.test") return Found{Runner::kPytest, i};
    if (util::starts_with(b, "python") && i + 2 < argv.size() && argv[i + 1] == "-m" && argv[i + 2] == "pytest")
      return Found{Runner::kPytest, i + 2};
    if (b == "ctest") return Found{Runner::kCTest, i};
    if (b == "vitest") return Found{Runner::kVitest, i};
    if (b == "jest") return Found{Runner::kJest, i};
    if (b == "go" && i + 1 < argv.size() && argv[i + 1] == "test") return Found{Runner::kGo, i + 1};
    if (b == "cargo") {
      for (size_t k = i + 1; k < argv.size() && k <= i + 2; ++k)
        if (argv[k] == "test") return Found{Runner::kCargo, k};
      return std::nullopt;
    }
    if (!launcher_word(argv[i])) return std::nullopt;
  }
  return std::nullopt;
}

bool looks_like_gtest(std::string_view output) {
  return output.find("[==========] Running ") != std::string_view::npos ||
         output.find("[ RUN      ] ") != std::string_view::npos;
}

// How one runner's arguments are read, to drop its own test filters and
// keep everything else.
struct Rules {
  std::set<std::string> values;       // options that take the next word (unless given as --opt=value)
  std::set<std::string> flags;        // long options known to take no value
  std::set<std::string> drop_values;  // filters dropped with their value
  std::set<std::string> drop_flags;   // flags dropped
  bool keep_positional = false;       // ctest, gtest: no word is a filter
  std::string keep_first;             // vitest: its "run" subcommand
};

// `args` without the runner's filters, or why they cannot be read.
bool filter_args(const std::vector<std::string>& args, const Rules& r, std::vector<std::string>& kept,
                 std::string& why) {
  bool first_positional = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      const bool has_value = eq != std::string::npos;
      if (r.drop_values.count(name)) {
        if (!has_value) ++i;
        continue;
      }
      if (r.drop_flags.count(name)) continue;
      kept.push_back(a);
      if (r.values.count(name)) {
        if (!has_value && i + 1 < args.size()) kept.push_back(args[++i]);
        continue;
      }
      const bool short_flag = a[1] != '-';
      if (has_value || short_flag || r.flags.count(name)) continue;
      if (i + 1 < args.size() && !util::starts_with(args[i + 1], "-") && !r.keep_positional) {
        why = "cannot tell whether '" + args[i + 1] + "' is the value of " + a + " or a path to test";
        return false;
      }
      continue;
    }
    const bool first = first_positional;
    first_positional = false;
    if (r.keep_positional || (first && !r.keep_first.empty() && a == r.keep_first)) kept.push_back(a);
  }
  return true;
}

const Rules kPytestRules{
    {"-k",
     "-m",
     "-p",
     "-c",
     "-o",
     "-W",
     "-n",
     "-r",
     "--rootdir",
     "--ignore",
     "--ignore-glob",
     "--deselect",
     "--maxfail",
     "--tb",
     "--junitxml",
     "--junit-xml",
     "--basetemp",
     "--confcutdir",
     "--cov",
     "--cov-report",
     "--cov-config",
     "--cov-fail-under",
     "--dist",
     "--timeout",
     "--durations",
     "--durations-min",
     "--log-level",
     "--log-cli-level",
     "--log-file",
     "--log-file-level",
     "--log-format",
     "--import-mode",
     "--capture",
     "--override-ini",
     "--config-file",
     "--color",
     "--code-highlight",
     "--junit-prefix",
     "--numprocesses",
     "--maxprocesses",
     "--tx",
     "--html",
     "--reruns",
     "--count",
     "--json-report-file",
     "--show-capture"},
    {"--quiet",
     "--verbose",
     "--showlocals",
     "--strict-markers",
     "--strict-config",
     "--strict",
     "--no-header",
     "--no-summary",
     "--disable-warnings",
     "--disable-pytest-warnings",
     "--pdb",
     "--trace",
     "--cache-clear",
     "--collect-only",
     "--co",
     "--pyargs",
     "--runxfail",
     "--full-trace",
     "--setup-show",
     "--doctest-modules",
     "--keep-duplicates",
     "--no-cov",
     "--forked",
     "--continue-on-collection-errors",
     "--exitfirst",
     "--help",
     "--version"},
    {},
    {"--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise"},
    false,
    ""};

const Rules kCTestRules{
    {"-C",
     "--build-config",
     "-j",
     "--parallel",
     "-L",
     "--label-regex",
     "-LE",
     "--label-exclude",
     "-E",
     "--exclude-regex",
     "--test-dir",
     "--output-junit",
     "-O",
     "--output-log",
     "--timeout",
     "--stop-time",
     "-FA",
     "-FS",
     "-FC",
     "--fixture-exclude-any",
     "--fixture-exclude-setup",
     "--fixture-exclude-cleanup",
     "--resource-spec-file",
     "--test-load",
     "-D",
     "--dashboard",
     "-M",
     "-T",
     "--track",
     "--max-width",
     "--test-output-size-passed",
     "--test-output-size-failed",
     "--test-output-truncation"},
    {"--output-on-failure", "--progress", "--verbose", "--extra-verbose", "--quiet", "--schedule-random",
     "--stop-on-failure", "--no-label-summary", "--no-subproject-summary", "--print-labels",
     "--force-new-ctest-process", "--no-compress-output", "--debug"},
    {"-R", "--tests-regex", "-I", "--tests-information", "--repeat", "--repeat-until-fail", "--no-tests"},
    {"--rerun-failed", "-N", "--show-only"},
    true,
    ""};

const Rules kVitestRules{
    {"-c",
     "--config",
     "-r",
     "--root",
     "--dir",
     "--project",
     "--reporter",
     "--outputFile",
     "--environment",
     "--pool",
     "--shard",
     "--exclude",
     "--mode",
     "--maxWorkers",
     "--minWorkers",
     "--testTimeout",
     "--hookTimeout",
     "--bail",
     "--retry",
     "--maxConcurrency",
     "--workspace",
     "--silent"},
    {"--run", "--globals", "--dom", "--isolate", "--no-isolate", "--no-color", "--coverage", "--allowOnly",
     "--hideSkippedTests", "--no-file-parallelism", "--update", "--typecheck", "--logHeapUsage"},
    {"-t", "--testNamePattern"},
    {"--passWithNoTests", "--changed", "--watch", "-w"},
    false,
    "run"};

const Rules kJestRules{
    {"-c", "--config", "--rootDir", "--roots", "--reporters", "--testTimeout", "--maxWorkers", "-w", "--outputFile",
     "--env", "--testEnvironment", "--selectProjects", "--shard", "--coverageDirectory", "--testPathIgnorePatterns",
     "--seed", "--maxConcurrency"},
    {"--ci", "--runInBand", "-i", "--silent", "--verbose", "--coverage", "--detectOpenHandles", "--forceExit",
     "--no-cache", "--colors", "--json", "--useStderr", "--errorOnDeprecated", "--bail"},
    {"-t", "--testNamePattern", "--testPathPattern", "--testPathPatterns", "--changedSince"},
    {"--passWithNoTests", "--onlyChanged", "-o", "--watch", "--watchAll", "--lastCommit"},
    false,
    ""};

const Rules kCargoRules{
    {"-p", "--package", "--test", "--bench", "--bin", "--example", "-F", "--features", "--target", "--manifest-path",
     "-j", "--jobs", "--profile", "--target-dir", "--color", "--message-format", "--config", "-Z", "--exclude"},
    {"--lib",
     "--bins",
     "--tests",
     "--benches",
     "--examples",
     "--all-targets",
     "--doc",
     "--no-run",
     "--no-fail-fast",
     "--workspace",
     "--all",
     "--release",
     "--all-features",
     "--no-default-features",
     "--locked",
     "--frozen",
     "--offline",
     "--quiet",
     "--verbose",
     "--ignore-rust-version",
     "--future-incompat-report",
     "--keep-going"},
    {},
    {},
    false,
    ""};

const Rules kLibtestRules{{"--skip", "--test-threads", "--format", "--color", "-Z", "--logfile", "--shuffle-seed"},
                          {"--exact", "--nocapture", "--show-output", "--ignored", "--include-ignored", "--report-time",
                           "--quiet", "--shuffle", "--list", "--bench", "--test"},
                          {},
                          {},
                          false,
                          ""};

// `s` with each of `specials` behind a backslash.
std::string escaped(const std::string& s, std::string_view specials) {
  std::string out;
  for (char c : s) {
    if (specials.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// A regex matching exactly `names`: ^(a|b)$, with `specials` escaped.
std::string exact_regex(const std::vector<std::string>& names, std::string_view specials) {
  std::string out = "^(";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "|" : "") + escaped(names[i], specials);
  return out + ")$";
}

constexpr std::string_view kCMakeRegexSpecials = "^$.[]()*+?|\\";
constexpr std::string_view kRegexSpecials = "^$.[](){}*+?|\\/";

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

void split_once(const std::string& s, const std::string& sep, std::string& head, std::string& tail) {
  const size_t p = s.find(sep);
  head = p == std::string::npos ? s : s.substr(0, p);
  tail = p == std::string::npos ? "" : s.substr(p + sep.size());
}

std::vector<std::string> unique(std::vector<std::string> v) {
  std::vector<std::string> out;
  for (auto& s : v)
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  return out;
}

// vitest: "file > suite > name" -> the files, and -t over "suite name"
// (a file that failed to load: the file, whole).
void vitest_args(const std::vector<std::string>& tests, std::vector<std::string>& args) {
  std::vector<std::string> files, names;
  bool files_only = false;
  for (const std::string& t : tests) {
    std::string file, rest;
    split_once(t, " > ", file, rest);
    files.push_back(file);
    if (rest.empty()) files_only = true;
    else names.push_back(util::replace_all(rest, " > ", " "));
  }
  files = unique(files);
  args.insert(args.end(), files.begin(), files.end());
  if (!files_only) args.insert(args.end(), {"-t", exact_regex(names, kRegexSpecials)});
}

// jest: "Suite › name" -> -t over "Suite name"; a file that failed to run
// (its path is its name): the file, whole, and the others with it.
void jest_args(const std::vector<std::string>& tests, std::vector<std::string>& args) {
  std::vector<std::string> files, names;
  for (const std::string& t : tests) {
    if (t.find(" \xe2\x80\xba ") == std::string::npos && t.find('/') != std::string::npos) files.push_back(t);
    else names.push_back(util::replace_all(t, " \xe2\x80\xba ", " "));
  }
  if (!files.empty()) {
    for (const std::string& f : files) args.push_back(escaped(f, kRegexSpecials));
    return;
  }
  args.insert(args.end(), {"-t", exact_regex(names, kRegexSpecials)});
}

// The arguments that select `tests` for `runner`, appended to the command;
// false (with `why`) when a name cannot be expressed.
bool selection_args(Runner runner, const std::vector<std::string>& tests, std::vector<std::string>& args,
                    std::string& why) {
  switch (runner) {
    case Runner::kPytest:
      for (const std::string& t : tests) {
        std::string file, rest;
        split_once(t, "::", file, rest);
        if (!util::ends_with(file, ".py")) {
          why = "'" + t + "' is not a pytest node id (path.py::name)";
          return false;
        }
        args.push_back(t);
      }
      return true;
    case Runner::kCTest:
      args.insert(args.end(), {"--no-tests=error", "-R", exact_regex(tests, kCMakeRegexSpecials)});
      return true;
    case Runner::kGoogleTest: {
      std::string filter;
      for (const std::string& t : tests) {
        if (t.find(':') != std::string::npos || t.find(' ') != std::string::npos) {
          why = "'" + t + "' cannot be put in a --gtest_filter";
          return false;
        }
        filter += (filter.empty() ? "" : ":") + t;
      }
      args.push_back("--gtest_filter=" + filter);
      return true;
    }
    case Runner::kVitest: vitest_args(tests, args); return true;
    case Runner::kJest: jest_args(tests, args); return true;
    case Runner::kGo: {
      std::vector<std::string> tops;
      for (const std::string& t : tests) tops.push_back(t.substr(0, t.find('/')));
      args.insert(args.end(), {"-run", exact_regex(unique(tops), kRegexSpecials), "-count=1", "-v"});
      return true;
    }
    case Runner::kCargo:
      args.push_back("--exact");
      args.insert(args.end(), tests.begin(), tests.end());
      return true;
  }
  return false;
}

// The check's own target with its filters dropped and the selection put in.
bool rewrite_target(Runner runner, const std::vector<std::string>& argv, size_t at, const std::vector<std::string>& sel,
                    std::vector<std::string>& out, std::string& why) {
  const std::vector<std::string> head(argv.begin(), argv.begin() + static_cast<long>(at) + 1);
  const std::vector<std::string> rest(argv.begin() + static_cast<long>(at) + 1, argv.end());
  std::vector<std::string> kept;
  out = head;
  switch (runner) {
    case Runner::kPytest:
      if (!filter_args(rest, kPytestRules, kept, why)) return false;
      break;
    case Runner::kCTest:
      if (!filter_args(rest, kCTestRules, kept, why)) return false;
      break;
    case Runner::kVitest:
      if (!filter_args(rest, kVitestRules, kept, why)) return false;
      break;
    case Runner::kJest:
      if (!filter_args(rest, kJestRules, kept, why)) return false;
      break;
    case Runner::kGoogleTest:
      for (const std::string& a : rest)
        if (!util::starts_with(a, "--gtest_filter")) kept.push_back(a);
      break;
    case Runner::kGo:
      // Go's selection goes first: flags may come before or after the packages.
      out.insert(out.end(), sel.begin(), sel.end());
      for (size_t i = 0; i < rest.size(); ++i) {
        const std::string& a = rest[i];
        if (a == "-run" || a == "--run" || a == "-count" || a == "--count") {
          ++i;
          continue;
        }
        if (util::starts_with(a, "-run=") || util::starts_with(a, "--run=") || util::starts_with(a, "-count=") ||
            util::starts_with(a, "--count="))
          continue;
        out.push_back(a);
      }
      return true;
    case Runner::kCargo: {
      const auto dashes = std::find(rest.begin(), rest.end(), "--");
      if (!filter_args({rest.begin(), dashes}, kCargoRules, kept, why)) return false;
      std::vector<std::string> after;
      if (dashes != rest.end() && !filter_args({dashes + 1, rest.end()}, kLibtestRules, after, why)) return false;
      after.erase(std::remove(after.begin(), after.end(), "--exact"), after.end());
      out.insert(out.end(), kept.begin(), kept.end());
      out.push_back("--");
      out.insert(out.end(), after.begin(), after.end());
      out.insert(out.end(), sel.begin(), sel.end());
      return true;
    }
  }
  out.insert(out.end(), kept.begin(), kept.end());
  out.insert(out.end(), sel.begin(), sel.end());
  return true;
}

Selection cannot(std::optional<Runner> runner, std::string why) {
  Selection s;
  s.runner = runner;
  s.why_not = std::move(why);
  return s;
}

}  // namespace

std::optional<Runner> runner_of(const std::vector<std::string>& argv) {
  if (auto f = find_runner(argv)) return f->runner;
  return std::nullopt;
}

Selection select_tests(const checks::CheckSpec& check, const std::vector<std::string>& tests, std::string_view hint) {
  if (check.kind != checks::Kind::kCommandExit) return cannot(std::nullopt, "it is not a command_exit check");
  if (!check.select.enabled) return cannot(std::nullopt, "its \"select\" is false");
  const bool own = check.select.command.empty();
  const std::vector<std::string>& cmd = own ? check.argv : check.select.command;
  std::optional<Found> found = find_runner(cmd);
  std::optional<Runner> runner = check.select.runner;
  if (!runner && found) runner = found->runner;
  if (!runner && own && !cmd.empty() && !is_shell(basename_of(cmd[0])) && looks_like_gtest(hint))
    runner = Runner::kGoogleTest;
  if (!runner)
    return cannot(std::nullopt,
                  "no test runner in its command (give it \"select\": {\"runner\": ..., \"command\": "
                  "[...]})");
  if (tests.empty()) return cannot(runner, "no failing test was named");
  for (const std::string& t : tests)
    if (t.empty() || has_control(t)) return cannot(runner, "a test name holds a control character");
  std::vector<std::string> sel;
  std::string why;
  if (!selection_args(*runner, tests, sel, why)) return cannot(runner, why);
  Selection s;
  s.runner = runner;
  if (!own) {
    s.argv = cmd;
    if (*runner == Runner::kCargo && std::find(cmd.begin(), cmd.end(), "--") == cmd.end()) s.argv.push_back("--");
    s.argv.insert(s.argv.end(), sel.begin(), sel.end());
    return s;
  }
  // The check's own target: the runner's word is where its arguments start
  // (a GoogleTest binary is the first word).
  const size_t at = found && found->runner == *runner ? found->at : 0;
  if (!found && *runner != Runner::kGoogleTest)
    return cannot(runner, "its command does not show where " + std::string(checks::runner_name(*runner)) +
                              "'s arguments start (give \"select.command\")");
  if (!rewrite_target(*runner, cmd, at, sel, s.argv, why)) return cannot(runner, why);
  return s;
}

checks::CheckSpec selected_check(const checks::CheckSpec& check, const Selection& s) {
  checks::CheckSpec c = check;
  c.argv = s.argv;
  c.cache = false;
  c.npx_direct = true;
  return c;
}

namespace {

// A tally "N passed" (N >= 1) in `text`: pytest, vitest, jest, cargo.
bool passed_tally(std::string_view text) {
  for (size_t p = text.find(" passed"); p != std::string_view::npos; p = text.find(" passed", p + 1)) {
    size_t b = p;
    while (b > 0 && output::is_digit(text[b - 1])) --b;
    if (b < p && !(p - b == 1 && text[b] == '0')) return true;
  }
  return false;
}

}  // namespace

bool ran_some_tests(Runner runner, std::string_view out) {
  const std::string text = output::strip_ansi(out);
  switch (runner) {
    case Runner::kPytest:
    case Runner::kVitest:
    case Runner::kJest:
    case Runner::kCargo: return passed_tally(text);
    case Runner::kCTest:
      return text.find("tests passed") != std::string::npos && text.find("No tests were found") == std::string::npos &&
             text.find("out of 0") == std::string::npos;
    case Runner::kGoogleTest: {
      const size_t p = text.find("[  PASSED  ] ");
      return p != std::string::npos && p + 13 < text.size() && output::is_digit(text[p + 13]) && text[p + 13] != '0';
    }
    case Runner::kGo: return text.find("--- PASS: ") != std::string::npos;
  }
  return false;
}

}  // namespace phoenix::engine
