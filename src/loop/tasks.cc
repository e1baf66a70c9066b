#include "loop/tasks.h"

#include "util/text.h"

namespace phoenix::loop {

namespace {

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

}  // namespace

std::vector<Task> parse_tasks(std::string_view text) {
  std::vector<Task> out;
  auto lines = lines_of(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    size_t b = box_at(lines[n]);
    if (b == std::string_view::npos) continue;
    Task t;
    t.index = static_cast<int>(out.size());
    t.line = n;
    t.done = lines[n][b + 1] != ' ';
    t.title = util::trim(lines[n].substr(b + 3));
    if (t.title.empty()) continue;  // an empty box is not a task anyone can do
    out.push_back(t);
  }
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

}  // namespace phoenix::loop
