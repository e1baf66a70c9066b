// Real projects for end-to-end tests: the small CMake, npm and Python
// projects under tests/fixtures/real-projects/, copied into throwaway git
// repositories, and the environment their real toolchains need on a machine
// that reaches no network at test time. Header-only: tests/CMakeLists.txt
// builds tests/**/*_test.cc and test_util.cc.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "util/subprocess.h"

namespace phoenix::test {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// tests/fixtures/real-projects/<name> (cmake, npm, python).
inline std::string real_project_dir(const std::string& name) { return fixtures_dir() + "/real-projects/" + name; }

// Copies the fixture `name` (dot-files included) into `dest`, made if missing.
inline void copy_real_project(const std::string& name, const std::string& dest) {
  namespace fs = std::filesystem;
  fs::create_directories(dest);
  fs::copy(real_project_dir(name), dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

// The npm cache that scripts/deps.sh fills with prettier 3.6.2
// (/opt/phoenix-test-tools/npm-cache, or $PHOENIX_TEST_TOOLS_DIR/npm-cache).
inline std::string npm_cache_dir() {
  const char* d = std::getenv("PHOENIX_TEST_TOOLS_DIR");
  return std::string(d && *d ? d : "/opt/phoenix-test-tools") + "/npm-cache";
}

// Why the npm fixture cannot run here ("" when it can): npm or node missing,
// or the cache without prettier 3.6.2 in it.
inline std::string npm_unavailable() {
  namespace fs = std::filesystem;
  if (util::find_executable("npm").empty()) return "npm is not installed";
  if (util::find_executable("node").empty()) return "node is not installed";
  std::error_code ec;
  std::string index = npm_cache_dir() + "/_cacache/index-v5";
  if (fs::is_directory(index, ec))
    for (auto it = fs::recursive_directory_iterator(index, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec) &&
          read(it->path().string()).find("prettier/-/prettier-3.6.2.tgz") != std::string::npos)
        return "";
  return npm_cache_dir() + " does not hold prettier 3.6.2 (scripts/deps.sh fills it with `npm cache add`)";
}

// What makes `npm ci` and `npm test` work offline, from the cache alone, in
// every process that inherits it (Phoenix's setup steps and checks, the hook
// run by `git push`): npm reads npm_config_* variables as its settings, so
// phoenix.json keeps the plain `npm ci` that `phoenix init` writes.
inline EnvVars npm_offline_env() {
  return {{"npm_config_cache", npm_cache_dir()},   {"npm_config_offline", "true"},
          {"npm_config_audit", "false"},           {"npm_config_fund", "false"},
          {"npm_config_update_notifier", "false"}, {"npm_config_loglevel", "error"}};
}

// An interpreter that can `import pytest` ("" when none): `python3` on PATH
// first, then Debian's /usr/bin/python3 (python3-pytest, from
// scripts/deps.sh). On this project's machines `python3` on PATH may be a
// pyenv build without pytest.
inline std::string python_with_pytest() {
  namespace fs = std::filesystem;
  for (std::string py : {util::find_executable("python3"), std::string("/usr/bin/python3")}) {
    if (py.empty() || !fs::exists(py)) continue;
    if (run({py, "-c", "import pytest"}, "", {}, 60).exit_code == 0) return py;
  }
  return "";
}

// The pytest tests of the verdict suites (real suites are never all
// green): one that fails every third run of itself, its count kept in the
// file the Python expression `counter_path` names (outside the trees, so
// every tree counts together); one that needs the network (192.0.2.1,
// which no route reaches: red here as everywhere). The test file imports
// os and socket.
inline std::string pytest_flaky_every_third_run(const std::string& counter_path) {
  return "def test_flaky_every_third_run():\n"
         "    path = " +
         counter_path +
         "\n"
         "    n = int(open(path).read()) + 1 if os.path.exists(path) else 1\n"
         "    open(path, 'w').write(str(n))\n"
         "    assert n % 3 != 0, f'timing limit exceeded on run {n}'\n";
}
inline std::string pytest_needs_network() {
  return "def test_fetch_needs_network():\n"
         "    socket.create_connection(('192.0.2.1', 80), timeout=0.3)\n";
}

// The value of $PATH with `dir` in front.
inline std::string path_with(const std::string& dir) {
  const char* p = std::getenv("PATH");
  return dir + ":" + (p && *p ? p : "/usr/local/bin:/usr/bin:/bin");
}

}  // namespace phoenix::test
