// Errors and exit codes: the one vocabulary every command ends with.
//
// Utilities throw phoenix::Error carrying the exit code the top-level catch
// returns; the message is one line that names the file, field or value.
#pragma once

#include <stdexcept>
#include <string>

namespace phoenix {

// Phoenix's exit codes, the one table (the man pages and docs/ list them).
enum ExitCode : int {
  kExitOk = 0,            // success / all green
  kExitRed = 1,           // red, rolled back, needs a person
  kExitEscalated = 2,     // budget exhausted, escalated
  kExitUsage = 64,        // usage error (EX_USAGE)
  kExitConfig = 78,       // configuration error (EX_CONFIG)
  kExitInterrupted = 130  // SIGINT / SIGTERM
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitRed)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// A bad command line: exit 64.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, kExitUsage) {}
};

// A bad phoenix.json or check object: exit 78.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, kExitConfig) {}
};

// "<what>: <strerror(errno)>" as an Error; call right after a failed C call.
[[noreturn]] void throw_errno(const std::string& what);

}  // namespace phoenix
