// What `phoenix init` finds in a project, and the phoenix.json it writes
// for it. Pure: a root folder in (only read, never written), the setup
// steps and checks out; the text out. cmd_init.cc writes it and measures it.
//
// The rule every detected check follows: a check
// measures the tree it runs in as it is now. So a check builds what it
// tests (cmake --build before ctest, npm run build before npm test), and
// what a fresh checkout lacks (a configured build folder, installed
// dependencies) comes from `setup` steps, which Phoenix runs in every tree
// of its own before measuring there.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace phoenix::cli {

struct DetectedCheck {
  std::string id;                 // "unit", "build"
  std::string type;               // failure type
  std::vector<std::string> argv;  // the check's target
  double timeout_s = 600;
  // "select" (engine/selection.h): for a target a shell runs, how its
  // runner runs some tests alone (the selection's arguments as "$@").
  std::string select_runner;
  std::vector<std::string> select_command;
};

struct Detected {
  std::vector<config::SetupStep> setup;
  std::string setup_why;              // what the setup steps were read from ("" without steps)
  std::vector<DetectedCheck> checks;  // in the order they run; empty: nothing detected
  std::string why;                    // "CMakeLists.txt with enable_testing()"
  std::vector<std::string> editable;  // globs a fix may touch
};

// A configured CMake build folder found in the project.
struct CMakeBuild {
  std::string dir = "build";  // relative to the root
  bool found = false;         // a CMakeCache.txt was there
  std::string generator;      // CMAKE_GENERATOR from the cache ("" when not found)
  std::string build_type;     // CMAKE_BUILD_TYPE from the cache (single-config generators)
  std::string config;         // multi-config generators: the configuration built and tested
};

// The first of build, _build, out/build, out/build/*, cmake-build-* that
// holds a CMakeCache.txt, with its generator and build type; else `build`.
CMakeBuild find_cmake_build(const std::string& root);

// The project's setup and checks. Detection order: CMake/CTest,
// package.json (npm, pnpm, yarn), Cargo, Go, pytest, a Makefile with a test
// target, a CMakeLists.txt without tests.
Detected detect_project(const std::string& root);

// Top-level source folders a fix may touch: "src/**", "lib/**", ... and
// each top-level Python package ("mypkg/**": a folder with an __init__.py,
// tests/ aside).
std::vector<std::string> detect_editable(const std::string& root);

// The phoenix.json `phoenix init` writes for `d`: commented, formatted as
// prettier formats JSON (util/json_pretty.h), loadable by config::parse.
std::string render_phoenix_json(const Detected& d);

}  // namespace phoenix::cli
