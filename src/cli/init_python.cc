#include "cli/init_python.h"

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::cli {

namespace {

// The project's pytest configuration sets `pythonpath` itself.
bool sets_pythonpath(const std::string& root) {
  for (const char* f : {"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"}) {
    try {
      if (util::read_file(root + "/" + f).find("pythonpath") != std::string::npos) return true;
    } catch (const Error&) {}
  }
  return false;
}

// The last non-empty line of a probe's output ("No module named pytest").
std::string last_line(const std::string& output) {
  auto lines = util::split_lines(output);
  while (!lines.empty() && util::trim(lines.back()).empty()) lines.pop_back();
  return lines.empty() ? "" : util::trim(lines.back());
}

}  // namespace

std::string choose_pytest_runner(const std::string& root, Detected& d) {
  const std::vector<std::string> probed{"python3", "-m", "pytest", "-q"};
  DetectedCheck* check = nullptr;
  for (auto& c : d.checks)
    if (c.argv == probed) check = &c;
  if (!check) return "";
  util::ProcessOptions po;
  po.argv = {"python3", "-m", "pytest", "--version"};
  po.cwd = root;
  po.timeout_s = 60;
  const util::ProcessResult pr = util::run_process(po);
  if (pr.exit_code == 0) return "python3 has pytest (python3 -m pytest --version: " + last_line(pr.output) + ")";
  const std::string why = pr.exit_code == 127 ? "there is no python3 on PATH"
                                              : "python3 has no pytest (" + last_line(pr.output) + ")";
  const std::string pytest = util::find_executable("pytest");
  if (pytest.empty()) return why + ", and there is no pytest on PATH: the check stays python3 -m pytest";
  // `python3 -m pytest` puts the top folder on sys.path; the pytest
  // script does not, unless told.
  check->argv = {"pytest", "-q"};
  if (!sets_pythonpath(root)) {
    check->argv.push_back("-o");
    check->argv.push_back("pythonpath=.");
  }
  return why + ": the check runs the pytest on PATH (" + pytest + ")";
}

}  // namespace phoenix::cli
