// What `phoenix init` asks the machine about a Python project: which
// interpreter has the test runner. init_detect.h reads files only; this
// runs a program, so it is kept apart.
#pragma once

#include <string>

#include "cli/init_detect.h"

namespace phoenix::cli {

// For a detected `python3 -m pytest -q` check (pytest configuration, no
// virtualenv with a requirements file): probes `python3 -m pytest
// --version` in `root`. python3 has pytest: kept. It has not, and a
// `pytest` is on PATH: the check runs that `pytest` instead (with
// `-o pythonpath=.` unless the project sets pythonpath itself, so the
// project's top folder is importable as under `python3 -m pytest`).
// Neither: kept, and the proof that follows shows it red. Returns one line
// saying which was chosen and why ("" when `d` has no such check).
std::string choose_pytest_runner(const std::string& root, Detected& d);

}  // namespace phoenix::cli
