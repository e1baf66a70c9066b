// The terminal: whether output is one, whether to colour it, and a progress
// line for long waits. Knows nothing of Phoenix.
//
// Colour policy (https://no-color.org, https://bixense.com/clicolors):
// NO_COLOR set and non-empty never colours; otherwise CLICOLOR_FORCE set and
// not "0" always colours; otherwise colour only when the stream is a TTY.
// Progress is drawn only on a TTY, never with colour forced into a pipe.
#pragma once

#include <memory>
#include <string>

namespace phoenix::util::term {

bool is_tty(int fd);
bool color_enabled(int fd);

// `s` in the SGR colour `code` ("32" green, "31;1" bold red) when `on`,
// else as it is.
std::string paint(bool on, const char* code, const std::string& s);

// While it lives, redraws one line on stderr every `period_ms`:
// "<label> 12.3s" — but only when stderr is a TTY, and only after
// `delay_ms` (short waits print nothing). The destructor erases the line.
class Progress {
 public:
  explicit Progress(std::string label, int delay_ms = 1000, int period_ms = 200);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void set_label(std::string label);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phoenix::util::term
