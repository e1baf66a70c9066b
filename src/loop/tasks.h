// The tasks file of phoenix-loop: Markdown whose "- [ ] title" lines are the
// open tasks and "- [x] title" lines the done ones ('*' or '+' bullets and
// any indentation too; 'X' counts as done). Every other line is prose the
// loop keeps byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phoenix::loop {

struct Task {
  int index = 0;      // 0-based among the task lines, in file order
  size_t line = 0;    // 0-based line number in the file
  std::string title;  // the text after the box, trimmed
  bool done = false;
  // Stable within one file: "t<index+1>" (the title may be edited by hand).
  std::string id() const { return "t" + std::to_string(index + 1); }
};

std::vector<Task> parse_tasks(std::string_view text);

// `text` with the box of the task on `line` ticked ("[ ]" -> "[x]"); the
// rest unchanged (line endings included). Unchanged when that line is not
// an open task.
std::string tick_task(std::string_view text, size_t line);

}  // namespace phoenix::loop
