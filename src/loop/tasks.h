// The tasks file of phoenix-loop, in one of two forms (docs/loop.md "Tasks"):
//
// Markdown: "- [ ] title" lines are the open tasks and "- [x] title" lines
// the done ones ('*' or '+' bullets and any indentation too; 'X' counts as
// done). Every other line is prose the loop keeps byte for byte. A title may
// end in fields, each introduced by " — " (an em dash) or " -- ":
//
//   - [ ] export CSV — id: csv — after: schema, t1 — check: ./scripts/check-export.sh --strict
//
//   id     the task's name (letters, digits, '.', '_', '-'); default t<N>
//          for the N-th task line, which moves when a line is inserted
//   after  ids of tasks that must be done first, comma-separated
//   check  the task's acceptance check: a command (split into words like a
//          shell would, without one) that must exit 0 in the loop's tree
//          before the task is ticked
//
// A separator counts only when a field name and ':' follow it, so
// "npm test -- --grep x" stays one command and "fix — see notes" stays a
// title. A misspelt field ("chek:") is an error, as are a duplicate id, an
// unknown or circular `after`, and a field given twice.
//
// tasks.json (a file whose name ends in ".json"; templates/tasks.schema.json):
//   {"tasks": [{"id": "csv", "title": "export CSV", "done": false,
//               "after": ["schema"], "check": "./scripts/check-export.sh"}]}
// where "check" is a command string, an argv array, or a check object of
// phoenix.json's form ({"kind": "regex_in_file", ...}).
//
// Errors are ConfigError (exit 78), one line naming the file, the line and
// the field: "TASKS.md:7: after: no task with id 'shema' (did you mean 'schema'?)".
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.h"

namespace phoenix::loop {

struct Task {
  int index = 0;      // 0-based among the tasks, in file order
  size_t line = 0;    // 0-based line number in the file
  std::string title;  // the text after the box (without its fields), trimmed
  bool done = false;
  std::string name;                // "id: ..." when given, else ""
  std::vector<std::string> after;  // ids of the tasks this one comes after
  // The acceptance check, id "task:<id>" unless its object names one:
  // measured with every check before the task is ticked.
  std::optional<checks::CheckSpec> check;
  // Stable within one file: the given name, else "t<index+1>".
  std::string id() const { return name.empty() ? "t" + std::to_string(index + 1) : name; }
};

// Parses a tasks file's text; `file` names it in errors and picks the form
// (".json": tasks.json, anything else: Markdown). Throws ConfigError.
std::vector<Task> parse_tasks(std::string_view text, const std::string& file);

// The Markdown form with the file named "tasks file" in errors.
std::vector<Task> parse_tasks(std::string_view text);

// `text` with `task` ticked, everything else unchanged byte for byte:
// Markdown "[ ]" -> "[x]" on its line; tasks.json "done": false -> true
// (or "done": true added to its object). Unchanged when already done.
std::string tick_task(std::string_view text, const Task& task, const std::string& file);

// Markdown only: the box of the task on `line` ticked; unchanged when that
// line is not an open task.
std::string tick_task(std::string_view text, size_t line);

// The first open task, not in `skip`, whose `after` tasks are all done;
// nullptr when there is none.
const Task* next_ready(const std::vector<Task>& tasks, const std::set<int>& skip);

// The open tasks that can never start because a task they come after
// (directly or through others) is in `skipped`, by index.
std::vector<int> blocked_by_skipped(const std::vector<Task>& tasks, const std::set<int>& skipped);

}  // namespace phoenix::loop
