#include "loop/tasks.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "util/error.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

namespace {

const std::vector<std::string> kFields{"id", "after", "check"};
constexpr std::string_view kEmDash = "\xE2\x80\x94";  // U+2014

// Where the box starts on a task line ("- [" after indentation), or npos.
size_t box_at(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i + 5 > line.size()) return std::string_view::npos;
  if (line[i] != '-' && line[i] != '*' && line[i] != '+') return std::string_view::npos;
  if (line[i + 1] != ' ' || line[i + 2] != '[' || line[i + 4] != ']') return std::string_view::npos;
  char c = line[i + 3];
  if (c != ' ' && c != 'x' && c != 'X') return std::string_view::npos;
  // "- [ ]" must be followed by a space or the end: "- [x]abc" is prose.
  if (i + 5 < line.size() && line[i + 5] != ' ' && line[i + 5] != '\t' && line[i + 5] != '\r')
    return std::string_view::npos;
  return i + 2;
}

// The lines of text, each without its '\n' (a '\r' stays, trimmed later).
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

bool is_json_file(const std::string& file) { return util::ends_with(file, ".json"); }

// --- where an error points ---------------------------------------------------

// Names a task's field in errors: "TASKS.md:7: after" or, for tasks.json,
// "tasks.json:12: tasks[2].after" (the line of the field, else the task's).
struct Source {
  std::string file;
  bool json = false;
  std::map<std::string, size_t> paths;  // tasks.json: byte offset by path
  std::string text;

  std::string where(const Task& t, const std::string& field) const {
    if (!json) return file + ":" + std::to_string(t.line + 1) + ": " + field;
    std::string task_path = "tasks[" + std::to_string(t.index) + "]";
    std::string path = task_path + (field.empty() ? "" : "." + field);
    auto it = paths.find(path);
    if (it == paths.end()) it = paths.find(task_path);
    std::string line = it == paths.end() ? "1" : util::line_col(text, it->second);
    return file + ":" + line.substr(0, line.find(':')) + ": " + path;
  }
};

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ConfigError(where + ": " + what); }

// --- one task's fields ---------------------------------------------------------

bool valid_id(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

// The acceptance check from its tasks-file form: a command string, an argv
// array or a check object; its id is "task:<task id>" unless it names one.
checks::CheckSpec acceptance_from(const Json& c, const std::string& task_id, const std::string& where) {
  Json obj = c;
  if (c.is_string()) {
    std::vector<std::string> argv;
    try {
      argv = util::split_words(c.get<std::string>());
    } catch (const Error& e) {  // an unterminated quote
      fail(where, e.what());
    }
    obj = Json{{"kind", "command_exit"}, {"target", argv}};
  } else if (c.is_array()) {
    obj = Json{{"kind", "command_exit"}, {"target", c}};
  } else if (!c.is_object()) {
    fail(where, "must be a command, an argv array or a check object");
  }
  if (!obj.contains("id")) obj["id"] = "task:" + task_id;
  return checks::parse_check(obj, where, true);
}

void set_after(Task& t, const Json& v, const std::string& where) {
  if (!v.is_array()) fail(where, "must be a list of task ids");
  for (const auto& a : v) {
    if (!a.is_string() || util::trim(a.get<std::string>()).empty()) fail(where, "an empty task id");
    t.after.push_back(util::trim(a.get<std::string>()));
  }
}

// --- Markdown ------------------------------------------------------------------

// A field starting at `at` (just after a separator): its name and where its
// value starts. A near miss of a field name ("chek:", "After:") is an error.
std::optional<std::pair<std::string, size_t>> field_at(std::string_view s, size_t at, const std::string& where) {
  while (at < s.size() && s[at] == ' ') ++at;
  size_t k = at;
  while (k < s.size() && (std::isalpha(static_cast<unsigned char>(s[k])) || s[k] == '_')) ++k;
  size_t colon = k;
  while (colon < s.size() && s[colon] == ' ') ++colon;
  if (k == at || colon >= s.size() || s[colon] != ':') return std::nullopt;
  std::string key(s.substr(at, k - at));
  for (const auto& f : kFields)
    if (f == key) return std::make_pair(key, colon + 1);
  std::string lower = key;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string near = util::nearest(lower, kFields);
  if (!near.empty() && (lower == near || (key.size() >= 4 && util::edit_distance(lower, near) <= 2)))
    fail(where, "unknown field '" + key + "' (did you mean '" + near + "'?)");
  return std::nullopt;
}

// Splits "title — id: x — check: cmd" into the title and its fields.
void read_fields(Task& t, std::string_view s, const Source& src) {
  const std::string at_line = src.file + ":" + std::to_string(t.line + 1);
  struct Mark {
    size_t sep, value;
    std::string key;
  };
  std::vector<Mark> marks;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t len = 0;
    if (s.compare(i, 1, " ") == 0 && s.compare(i + 1, kEmDash.size(), kEmDash) == 0 &&
        s.compare(i + 1 + kEmDash.size(), 1, " ") == 0)
      len = kEmDash.size() + 2;
    else if (s.compare(i, 4, " -- ") == 0) len = 4;
    if (len == 0) continue;
    if (auto f = field_at(s, i + len, at_line)) marks.push_back({i, f->second, f->first});
  }
  t.title = util::trim(s.substr(0, marks.empty() ? s.size() : marks[0].sep));
  std::set<std::string> seen;
  std::string check, check_where;
  for (size_t m = 0; m < marks.size(); ++m) {
    size_t end = m + 1 < marks.size() ? marks[m + 1].sep : s.size();
    std::string value = util::trim(s.substr(marks[m].value, end - marks[m].value));
    std::string where = src.where(t, marks[m].key);
    if (!seen.insert(marks[m].key).second) fail(where, "given twice");
    if (value.empty()) fail(where, "no value");
    if (marks[m].key == "id") {
      t.name = value;
    } else if (marks[m].key == "after") {
      Json list = Json::array();
      for (size_t a = 0, c; a <= value.size(); a = c + 1) {
        c = value.find(',', a);
        if (c == std::string::npos) c = value.size();
        list.push_back(value.substr(a, c - a));
      }
      set_after(t, list, where);
    } else {
      check = value;
      check_where = where;
    }
  }
  // After the loop: the check's id names the task, whose "id:" may come later.
  if (!check.empty()) t.check = acceptance_from(Json(check), t.id(), check_where);
}

std::vector<Task> parse_markdown(std::string_view text, const Source& src) {
  std::vector<Task> out;
  auto lines = lines_of(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    size_t b = box_at(lines[n]);
    if (b == std::string_view::npos) continue;
    Task t;
    t.index = static_cast<int>(out.size());
    t.line = n;
    t.done = lines[n][b + 1] != ' ';
    std::string_view rest = lines[n].substr(b + 3);
    if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
    read_fields(t, rest, src);
    if (t.title.empty() && !t.check && t.name.empty()) continue;  // an empty box is not a task anyone can do
    if (t.title.empty()) fail(src.where(t, "title"), "the task has fields but no title");
    out.push_back(std::move(t));
  }
  return out;
}

// --- tasks.json ----------------------------------------------------------------

Task json_task(const Json& j, int index, const Source& src) {
  Task t;
  t.index = index;
  std::string task_path = "tasks[" + std::to_string(index) + "]";
  auto at = src.paths.find(task_path);
  if (at != src.paths.end()) {
    std::string lc = util::line_col(src.text, at->second);
    t.line = std::stoul(lc.substr(0, lc.find(':'))) - 1;
  }
  if (!j.is_object()) fail(src.where(t, ""), "must be an object with a \"title\"");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const std::vector<std::string> keys{"id", "title", "done", "after", "check"};
    if (std::find(keys.begin(), keys.end(), it.key()) != keys.end()) continue;
    std::string near = util::nearest(it.key(), keys);
    fail(src.where(t, it.key()), "unknown key" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  if (!j.contains("title") || !j["title"].is_string() || util::trim(j["title"].get<std::string>()).empty())
    fail(src.where(t, "title"), "must be a non-empty string");
  t.title = util::trim(j["title"].get<std::string>());
  if (j.contains("id")) {
    if (!j["id"].is_string()) fail(src.where(t, "id"), "must be a string");
    t.name = j["id"].get<std::string>();
  }
  if (j.contains("done")) {
    if (!j["done"].is_boolean()) fail(src.where(t, "done"), "must be true or false");
    t.done = j["done"].get<bool>();
  }
  if (j.contains("after"))
    set_after(t, j["after"].is_string() ? Json::array({j["after"]}) : j["after"], src.where(t, "after"));
  if (j.contains("check")) t.check = acceptance_from(j["check"], t.id(), src.where(t, "check"));
  return t;
}

std::vector<Task> parse_json_tasks(std::string_view text, const Source& src) {
  Json j = util::parse_json(std::string(text), src.file);  // line:col on malformed JSON
  if (!j.is_object()) fail(src.file + ":1", "must hold an object {\"tasks\": [...]}");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "tasks" && it.key() != "$schema") {
      auto p = src.paths.find(it.key());
      std::string line = p == src.paths.end() ? "1" : util::line_col(src.text, p->second);
      fail(src.file + ":" + line.substr(0, line.find(':')) + ": " + it.key(), "unknown key (expected \"tasks\")");
    }
  if (!j.contains("tasks") || !j["tasks"].is_array()) fail(src.file + ":1: tasks", "must be an array of tasks");
  std::vector<Task> out;
  for (size_t i = 0; i < j["tasks"].size(); ++i) out.push_back(json_task(j["tasks"][i], static_cast<int>(i), src));
  return out;
}

// --- the file as a whole -------------------------------------------------------

// Ids unique and well formed; every `after` names another task; no cycles.
void validate(const std::vector<Task>& tasks, const Source& src) {
  std::map<std::string, const Task*> by_id;
  std::vector<std::string> ids;
  for (const auto& t : tasks) {
    if (!t.name.empty() && !valid_id(t.name))
      fail(src.where(t, "id"), "'" + t.name + "' may contain only letters, digits, '.', '_' and '-'");
    auto [it, fresh] = by_id.emplace(t.id(), &t);
    if (!fresh)
      fail(src.where(t, "id"),
           "'" + t.id() + "' is also the id of the task on line " + std::to_string(it->second->line + 1));
    ids.push_back(t.id());
  }
  for (const auto& t : tasks)
    for (const auto& a : t.after) {
      if (a == t.id()) fail(src.where(t, "after"), "a task cannot come after itself");
      if (by_id.count(a)) continue;
      std::string near = util::nearest(a, ids);
      fail(src.where(t, "after"),
           "no task with id '" + a + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
  // Depth-first over `after`: a task met again while on the path closes a cycle.
  std::map<std::string, int> color;  // 0 new, 1 on the path, 2 finished
  std::vector<std::string> path;
  std::function<void(const Task&)> visit = [&](const Task& t) {
    color[t.id()] = 1;
    path.push_back(t.id());
    for (const auto& a : t.after) {
      if (color[a] == 1) {
        std::string cycle;
        for (auto p = std::find(path.begin(), path.end(), a); p != path.end(); ++p) cycle += *p + " -> ";
        fail(src.where(*by_id[a], "after"), "a cycle: " + cycle + a);
      }
      if (color[a] == 0) visit(*by_id[a]);
    }
    path.pop_back();
    color[t.id()] = 2;
  };
  for (const auto& t : tasks)
    if (color[t.id()] == 0) visit(t);
}

// tasks.json: the byte range of the value of "done" in the task's object, or
// npos when the object has no "done".
std::pair<size_t, size_t> done_value(const std::string& text, const std::map<std::string, size_t>& paths, int index) {
  auto it = paths.find("tasks[" + std::to_string(index) + "].done");
  if (it == paths.end()) return {std::string::npos, 0};
  size_t colon = text.find(':', it->second + 6);  // past "done"
  size_t v = text.find_first_not_of(" \t\r\n", colon + 1);
  size_t e = v;
  while (e < text.size() && std::isalpha(static_cast<unsigned char>(text[e]))) ++e;
  return {v, e - v};
}

}  // namespace

std::vector<Task> parse_tasks(std::string_view text, const std::string& file) {
  Source src;
  src.file = file;
  src.json = is_json_file(file);
  if (src.json) {
    src.text = std::string(text);
    src.paths = util::json_paths(src.text);
  }
  std::vector<Task> tasks = src.json ? parse_json_tasks(text, src) : parse_markdown(text, src);
  validate(tasks, src);
  return tasks;
}

std::vector<Task> parse_tasks(std::string_view text) { return parse_tasks(text, "tasks file"); }

std::string tick_task(std::string_view text, const Task& task, const std::string& file) {
  if (!is_json_file(file)) return tick_task(text, task.line);
  std::string out(text);
  auto paths = util::json_paths(out);
  auto [at, len] = done_value(out, paths, task.index);
  if (at != std::string::npos) {
    if (out.compare(at, len, "false") == 0) out.replace(at, len, "true");
    return out;
  }
  auto obj = paths.find("tasks[" + std::to_string(task.index) + "]");
  if (obj == paths.end() || out[obj->second] != '{') return out;
  out.insert(obj->second + 1, "\"done\": true, ");
  return out;
}

std::string tick_task(std::string_view text, size_t line) {
  std::string out(text);
  size_t start = 0;
  for (size_t n = 0; n < line; ++n) {
    size_t nl = out.find('\n', start);
    if (nl == std::string::npos) return out;
    start = nl + 1;
  }
  size_t nl = out.find('\n', start);
  std::string_view l(out.data() + start, (nl == std::string::npos ? out.size() : nl) - start);
  size_t b = box_at(l);
  if (b != std::string_view::npos && l[b + 1] == ' ') out[start + b + 1] = 'x';
  return out;
}

const Task* next_ready(const std::vector<Task>& tasks, const std::set<int>& skip) {
  std::map<std::string, bool> done;
  for (const auto& t : tasks) done[t.id()] = t.done;
  for (const auto& t : tasks) {
    if (t.done || skip.count(t.index)) continue;
    bool ready = true;
    for (const auto& a : t.after) ready = ready && done[a];
    if (ready) return &t;
  }
  return nullptr;
}

std::vector<int> blocked_by_skipped(const std::vector<Task>& tasks, const std::set<int>& skipped) {
  std::map<std::string, const Task*> by_id;
  for (const auto& t : tasks) by_id[t.id()] = &t;
  std::set<int> blocked;
  // A fixed point: blocked when a task it comes after is skipped or blocked
  // (no cycles: validate() refused them).
  for (bool more = true; more;) {
    more = false;
    for (const auto& t : tasks) {
      if (t.done || skipped.count(t.index) || blocked.count(t.index)) continue;
      for (const auto& a : t.after) {
        const Task* dep = by_id.count(a) ? by_id[a] : nullptr;
        if (dep && !dep->done && (skipped.count(dep->index) || blocked.count(dep->index))) {
          blocked.insert(t.index);
          more = true;
          break;
        }
      }
    }
  }
  return std::vector<int>(blocked.begin(), blocked.end());
}

}  // namespace phoenix::loop
