#include "cli/init_detect.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/json_pretty.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::cli {

namespace fs = std::filesystem;

namespace {

struct Project {
  std::string root;
  bool has(const std::string& rel) const {
    std::error_code ec;
    return fs::exists(fs::path(root) / rel, ec);
  }
  bool is_dir(const std::string& rel) const {
    std::error_code ec;
    return fs::is_directory(fs::path(root) / rel, ec);
  }
  std::string read(const std::string& rel) const {
    try {
      return util::read_file(root + "/" + rel);
    } catch (const Error&) { return ""; }
  }
  bool contains(const std::string& rel, const std::string& needle) const {
    return read(rel).find(needle) != std::string::npos;
  }
};

using util::lower;

// A word for `sh -c`: as it is when it needs no quoting, else in single quotes.
std::string sh_word(const std::string& w) {
  bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '+' || c == '=';
  });
  if (plain) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `KEY:TYPE=value` of a CMakeCache.txt ("" when absent).
std::string cache_value(const std::string& cache, const std::string& key) {
  for (const auto& line : util::split_lines(cache)) {
    if (!util::starts_with(line, key + ":")) continue;
    size_t eq = line.find('=');
    if (eq != std::string::npos) return util::trim(line.substr(eq + 1));
  }
  return "";
}

bool multi_config(const std::string& generator) {
  return generator == "Xcode" || generator == "Ninja Multi-Config" || util::starts_with(generator, "Visual Studio");
}

// CMake: configure once per tree (setup), build and test in the check.
void cmake_project(const Project& p, Detected& d) {
  CMakeBuild b = find_cmake_build(p.root);
  config::SetupStep configure;
  configure.run = {"cmake", "-S", ".", "-B", b.dir};
  if (!b.generator.empty()) {
    configure.run.push_back("-G");
    configure.run.push_back(b.generator);
  }
  if (!b.build_type.empty()) configure.run.push_back("-DCMAKE_BUILD_TYPE=" + b.build_type);
  configure.inputs = {"**/CMakeLists.txt", "**/*.cmake"};
  d.setup.push_back(configure);
  if (b.found) {
    d.setup_why = b.dir + "/CMakeCache.txt";
    std::string kept;
    if (!b.generator.empty()) kept += "generator " + b.generator;
    if (!b.build_type.empty()) kept += std::string(kept.empty() ? "" : ", ") + "build type " + b.build_type;
    if (!kept.empty()) d.setup_why += " (" + kept + ")";
  } else {
    d.setup_why = "CMakeLists.txt (no configured build folder found; " + b.dir + "/ by default)";
  }
  std::string dir = sh_word(b.dir);
  std::string build = "cmake --build " + dir + (b.config.empty() ? "" : " --config " + sh_word(b.config));
  std::string test =
      "ctest --test-dir " + dir + (b.config.empty() ? "" : " -C " + sh_word(b.config)) + " --output-on-failure";
  // A flaky or failing test is run again alone: the same build, then ctest
  // with the selection's arguments (docs/checks.md "Running some tests again").
  d.checks.push_back({"unit",
                      "unit",
                      {"sh", "-c", build + " && " + test},
                      1800,
                      "ctest",
                      {"sh", "-c", build + " && exec " + test + " \"$@\"", "sh"}});
}

// package.json: install from the lockfile (setup), build when there is a
// build script, then test.
bool node_project(const Project& p, Detected& d) {
  if (!p.has("package.json")) return false;
  util::Json pkg;
  try {
    pkg = util::parse_json(p.read("package.json"), "package.json");
  } catch (const Error&) { return false; }
  auto script = [&](const std::string& name) -> std::string {
    if (!pkg.is_object() || !pkg.contains("scripts") || !pkg["scripts"].is_object()) return "";
    const auto& s = pkg["scripts"];
    return s.contains(name) && s[name].is_string() ? s[name].get<std::string>() : "";
  };
  std::string test = script("test");
  // `npm init` writes a test script that only fails: it is not a test command.
  if (test.empty() || test.find("no test specified") != std::string::npos) return false;
  std::string pm = "npm", lock;
  config::SetupStep install;
  if (p.has("package-lock.json") || p.has("npm-shrinkwrap.json")) {
    lock = p.has("package-lock.json") ? "package-lock.json" : "npm-shrinkwrap.json";
    install.run = {"npm", "ci"};
  } else if (p.has("pnpm-lock.yaml")) {
    pm = "pnpm";
    lock = "pnpm-lock.yaml";
    install.run = {"pnpm", "install", "--frozen-lockfile"};
  } else if (p.has("yarn.lock")) {
    pm = "yarn";
    lock = "yarn.lock";
    install.run = {"yarn", "install", "--frozen-lockfile"};
  } else {
    install.run = {"npm", "install"};
  }
  install.inputs = {lock.empty() ? "package.json" : lock};
  d.setup.push_back(install);
  d.setup_why = lock.empty() ? "package.json (no lockfile)" : lock;
  d.why = "package.json test script" + (lock.empty() || pm == "npm" ? std::string() : " (" + lock + ")");
  if (!script("build").empty()) d.checks.push_back({"build", "build", {pm, "run", "build"}, 600, "", {}});
  d.checks.push_back({"unit", "unit", {pm, "test"}, 600, "", {}});
  // A test script that is vitest or jest alone: the runner runs some tests
  // again through the package manager (docs/checks.md "Running some tests again").
  const std::vector<std::string> words = util::split_words(test);
  if (!words.empty() && (words[0] == "vitest" || words[0] == "jest")) {
    std::vector<std::string> exec =
        pm == "npm" ? std::vector<std::string>{"npx"} : std::vector<std::string>{pm, pm == "pnpm" ? "exec" : ""};
    exec.erase(std::remove(exec.begin(), exec.end(), ""), exec.end());
    exec.insert(exec.end(), words.begin(), words.end());
    if (words[0] == "vitest" && (words.size() < 2 || words[1] != "run"))
      exec.insert(exec.end() - static_cast<std::ptrdiff_t>(words.size() - 1), "run");
    d.checks.back().select_runner = words[0];
    d.checks.back().select_command = exec;
  }
  return true;
}

bool pytest_project(const Project& p, Detected& d) {
  if (!(p.has("pytest.ini") || p.has("conftest.py") ||
        (p.has("pyproject.toml") && p.contains("pyproject.toml", "pytest")) ||
        (p.has("setup.cfg") && p.contains("setup.cfg", "pytest")) || p.has("tests/conftest.py") ||
        (p.has("tox.ini") && p.contains("tox.ini", "[pytest]"))))
    return false;
  d.why = "pytest configuration";
  // Python's environment. Without a virtualenv folder in the project, the
  // tests run with the python3 the user runs them with (system packages, an
  // activated environment, tox or nox): Phoenix cannot know how that
  // environment was made, and building one would install packages the user
  // never chose, so there is no setup and the check is `python3 -m pytest`
  // (init's fresh-tree measurement shows whether that python3 has what the
  // tests import). When the project keeps a requirements file AND a
  // virtualenv folder (.venv or venv) exists, the recipe is known: setup
  // creates the virtualenv in each tree and installs the requirements into
  // it (a virtualenv is never copied between trees: its scripts hold
  // absolute paths), and the check runs that virtualenv's python, in the
  // work tree as in Phoenix's trees. A virtualenv without a requirements
  // file (poetry, uv, `pip install -e .`) has no recipe init could read:
  // then it is python3 again, and "setup" is the user's to write.
  std::string venv;
  for (const char* v : {".venv", "venv"})
    if (p.has(std::string(v) + "/pyvenv.cfg") || p.has(std::string(v) + "/bin/python")) {
      venv = v;
      break;
    }
  std::vector<std::string> reqs;
  for (const char* r : {"requirements.txt", "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt",
                        "requirements-test.txt", "requirements_test.txt", "test-requirements.txt"})
    if (p.has(r)) reqs.push_back(r);
  if (venv.empty() || reqs.empty()) {
    d.checks.push_back({"unit", "unit", {"python3", "-m", "pytest", "-q"}, 600, "", {}});
    return true;
  }
  std::string python = venv + "/bin/python";
  config::SetupStep make_venv;
  make_venv.run = {"python3", "-m", "venv", venv};
  d.setup.push_back(make_venv);
  config::SetupStep install;
  install.run = {python, "-m", "pip", "install", "--quiet"};
  for (const auto& r : reqs) {
    install.run.push_back("-r");
    install.run.push_back(r);
  }
  install.inputs = reqs;
  d.setup.push_back(install);
  std::string joined;
  for (const auto& r : reqs) joined += (joined.empty() ? "" : " and ") + r;
  d.setup_why = joined + " with the virtualenv " + venv + "/";
  d.checks.push_back({"unit", "unit", {python, "-m", "pytest", "-q"}, 600, "", {}});
  return true;
}

}  // namespace

CMakeBuild find_cmake_build(const std::string& root) {
  std::vector<std::string> candidates{"build", "_build", "out/build"};
  std::vector<std::string> more;
  std::error_code ec;
  for (const auto& [parent, prefix] :
       std::vector<std::pair<std::string, std::string>>{{"out/build", ""}, {"", "cmake-build-"}}) {
    std::vector<std::string> found;
    fs::path dir = fs::path(root) / parent;
    if (!fs::is_directory(dir, ec)) continue;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (it->is_directory(ec) && util::starts_with(name, prefix))
        found.push_back(parent.empty() ? name : parent + "/" + name);
    }
    std::sort(found.begin(), found.end());
    candidates.insert(candidates.end(), found.begin(), found.end());
  }
  CMakeBuild b;
  for (const auto& c : candidates) {
    std::string cache_path = root + "/" + c + "/CMakeCache.txt";
    if (!fs::is_regular_file(cache_path, ec)) continue;
    std::string cache;
    try {
      cache = util::read_file(cache_path);
    } catch (const Error&) { continue; }
    b.dir = c;
    b.found = true;
    b.generator = cache_value(cache, "CMAKE_GENERATOR");
    if (multi_config(b.generator)) {
      b.config = cache_value(cache, "CMAKE_DEFAULT_BUILD_TYPE");
      if (b.config.empty()) {
        std::string types = cache_value(cache, "CMAKE_CONFIGURATION_TYPES");
        b.config = types.substr(0, types.find(';'));
      }
      if (b.config.empty()) b.config = "Debug";
    } else {
      b.build_type = cache_value(cache, "CMAKE_BUILD_TYPE");
    }
    break;
  }
  return b;
}

Detected detect_project(const std::string& root) {
  Project p{root};
  Detected d;
  d.editable = detect_editable(root);
  std::string cmake = p.has("CMakeLists.txt") ? lower(p.read("CMakeLists.txt")) : "";
  if (!cmake.empty()) {
    for (const auto& [needle, why] :
         std::vector<std::pair<std::string, std::string>>{{"enable_testing", "CMakeLists.txt with enable_testing()"},
                                                          {"include(ctest)", "CMakeLists.txt with include(CTest)"},
                                                          {"add_test", "CMakeLists.txt with add_test()"}})
      if (cmake.find(needle) != std::string::npos) {
        d.why = why;
        cmake_project(p, d);
        return d;
      }
  }
  if (node_project(p, d)) return d;
  if (p.has("Cargo.toml")) {
    // cargo builds what it tests, and fetches what Cargo.lock names.
    d.why = "Cargo.toml";
    d.checks.push_back({"unit", "unit", {"cargo", "test"}, 1800, "", {}});
    return d;
  }
  if (p.has("go.mod")) {
    d.why = "go.mod";
    if (p.has("go.sum")) {
      config::SetupStep download;
      download.run = {"go", "mod", "download"};
      download.inputs = {"go.mod", "go.sum"};
      d.setup.push_back(download);
      d.setup_why = "go.sum";
    }
    d.checks.push_back({"unit", "unit", {"go", "test", "./..."}, 600, "", {}});
    return d;
  }
  if (pytest_project(p, d)) return d;
  for (const char* mk : {"Makefile", "makefile", "GNUmakefile"}) {
    std::string text = p.has(mk) ? p.read(mk) : "";
    if (text.find("\ntest:") != std::string::npos || util::starts_with(text, "test:")) {
      d.why = std::string(mk) + " with a test target";
      d.checks.push_back({"unit", "unit", {"make", "test"}, 600, "", {}});
      return d;
    }
  }
  if (!cmake.empty()) {
    d.why = "CMakeLists.txt";
    cmake_project(p, d);
  }
  return d;
}

std::vector<std::string> detect_editable(const std::string& root) {
  std::vector<std::string> out;
  for (const char* d : {"src", "lib", "app", "pkg", "internal", "cmd", "include"})
    if (fs::is_directory(fs::path(root) / d)) out.push_back(std::string(d) + "/**");
  // Python packages at the top (a flat layout; a src/ layout is src/**
  // above), tests aside: the check's own test files are not the fix's.
  std::vector<std::string> packages;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || name == "test" || name == "tests" || name == "testing") continue;
    const std::string glob = name + "/**";
    if (it->is_directory(ec) && fs::is_regular_file(it->path() / "__init__.py", ec) &&
        std::find(out.begin(), out.end(), glob) == out.end())
      packages.push_back(glob);
  }
  std::sort(packages.begin(), packages.end());
  out.insert(out.end(), packages.begin(), packages.end());
  return out;
}

std::string render_phoenix_json(const Detected& d) {
  using OJ = nlohmann::ordered_json;
  util::JsonComments comments;
  OJ doc = OJ::object();
  comments["setup"] = {"Written by 'phoenix init'. Reference: share/phoenix/templates/phoenix.schema.json",
                       "\"setup\" gives every tree Phoenix makes (its worktrees, a fixer's sandbox) what a fresh",
                       "checkout lacks; a step runs again there only when its \"inputs\" change."};
  OJ setup = OJ::array();
  for (const auto& s : d.setup) {
    OJ step = OJ::object();
    step["run"] = s.run;
    if (!s.inputs.empty()) step["inputs"] = s.inputs;
    if (s.timeout_s != config::SetupStep{}.timeout_s) step["timeout_s"] = s.timeout_s;
    setup.push_back(step);
  }
  if (!d.setup.empty()) comments["setup"].push_back("The setup steps were detected from " + d.setup_why + ".");
  doc["setup"] = setup;
  OJ checks = OJ::array();
  if (d.checks.empty()) {
    comments["checks"] = {
        "No test command was detected: add checks here, for example",
        "{ \"id\": \"unit\", \"kind\": \"command_exit\", \"target\": [\"./run-tests\"], \"editable\": [\"src/**\"] }",
        "A check measures the tree as it is now: one that tests build products builds them first."};
  } else {
    comments["checks"] = {"The test command was detected from " + d.why + "."};
    for (const auto& c : d.checks) {
      OJ check = OJ::object();
      check["id"] = c.id;
      check["kind"] = "command_exit";
      check["type"] = c.type;
      check["target"] = c.argv;
      check["timeout_s"] = c.timeout_s;
      if (!c.select_command.empty()) check["select"] = OJ{{"runner", c.select_runner}, {"command", c.select_command}};
      if (!d.editable.empty()) check["editable"] = d.editable;
      checks.push_back(check);
    }
  }
  doc["checks"] = checks;
  doc["fixers"] = {"journal", "bisect", "harness"};
  comments["budgets"] = {
      "\"harness\": \"claude\",   // or codex, aider, opencode, gemini, or {\"command\": [\"my-agent\", \"{prompt_file}\"]}"};
  doc["budgets"] = OJ::object();
  doc["session_cap"] = 10;
  doc["diff_cap"] = 200;
  doc["circuit_breaker"] = 3;
  doc["hook"] = OJ::object({{"mode", "verify"}});
  return util::prettier_style(doc, comments);
}

}  // namespace phoenix::cli
