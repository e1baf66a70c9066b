// Byte-preserving edits of JSON text: see util/json_edit.h.
#include "util/json_edit.h"

#include <cctype>
#include <cstring>

#include "util/error.h"

namespace phoenix::util {

namespace {

// One value of the text: where it is, and for an object or an array where
// its members are (an object's keys with the offset of their opening quote).
struct Node {
  char kind = 's';  // 'o' object, 'a' array, 's' anything else
  size_t begin = 0, end = 0;
  std::vector<std::string> keys;
  std::vector<size_t> key_at;
  std::vector<Node> kids;
};

class Scanner {
 public:
  explicit Scanner(const std::string& t) : t_(t) {}

  Node top() {
    ws();
    return value(0);
  }

 private:
  void ws() {
    for (;;) {
      while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
      if (t_.compare(i_, 2, "//") == 0) {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      } else if (t_.compare(i_, 2, "/*") == 0) {
        const size_t e = t_.find("*/", i_ + 2);
        i_ = e == std::string::npos ? t_.size() : e + 2;
      } else {
        return;
      }
    }
  }

  std::string str() {
    std::string s;
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) {
        s.push_back(t_[i_ + 1]);  // enough to compare keys
        i_ += 2;
        continue;
      }
      s.push_back(t_[i_++]);
    }
    ++i_;
    return s;
  }

  Node value(int depth) {
    Node n;
    n.begin = i_;
    if (i_ >= t_.size() || depth > 128) {
      n.end = i_;
      return n;
    }
    const char c = t_[i_];
    if (c == '{' || c == '[') {
      n.kind = c == '{' ? 'o' : 'a';
      const char close = c == '{' ? '}' : ']';
      ++i_;
      for (;;) {
        ws();
        if (i_ >= t_.size()) break;
        if (t_[i_] == close) {
          ++i_;
          break;
        }
        if (t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (n.kind == 'o') {
          if (t_[i_] != '"') break;  // not JSON: parse_json says so first
          n.key_at.push_back(i_);
          n.keys.push_back(str());
          ws();
          if (i_ < t_.size() && t_[i_] == ':') ++i_;
          ws();
        }
        n.kids.push_back(value(depth + 1));
      }
    } else if (c == '"') {
      str();
    } else {
      while (i_ < t_.size() && !std::strchr(",}] \t\r\n/", t_[i_])) ++i_;
    }
    n.end = i_;
    return n;
  }

  const std::string& t_;
  size_t i_ = 0;
};

// The node at `path` below `n`, or null.
const Node* find_node(const Node& n, const std::vector<std::string>& path, size_t depth = 0) {
  if (depth == path.size()) return &n;
  if (n.kind != 'o') return nullptr;
  for (size_t k = 0; k < n.keys.size(); ++k)
    if (n.keys[k] == path[depth]) return find_node(n.kids[k], path, depth + 1);
  return nullptr;
}

// The blanks that start the line holding offset `at`.
std::string line_indent(const std::string& t, size_t at) {
  size_t start = t.rfind('\n', at == 0 ? 0 : at - 1);
  start = start == std::string::npos || at == 0 ? 0 : start + 1;
  size_t e = start;
  while (e < t.size() && (t[e] == ' ' || t[e] == '\t')) ++e;
  return t.substr(start, e - start);
}

bool newline_between(const std::string& t, size_t a, size_t b) { return t.find('\n', a) < b; }

// The file's indentation unit: the first member of the top value on a line
// of its own says it; else two spaces.
std::string indent_unit(const std::string& t, const Node& top) {
  size_t first = std::string::npos;
  if (top.kind == 'o' && !top.key_at.empty()) first = top.key_at.front();
  if (top.kind == 'a' && !top.kids.empty()) first = top.kids.front().begin;
  if (first != std::string::npos && newline_between(t, top.begin, first)) {
    std::string u = line_indent(t, first).substr(line_indent(t, top.begin).size());
    if (!u.empty()) return u;
  }
  return "  ";
}

// `v` as JSON text indented by `unit`, its lines after the first starting
// with `base`; on one line when `inline_` (or when it is a scalar or empty).
std::string render(const nlohmann::ordered_json& v, const std::string& base, const std::string& unit, bool inline_) {
  if (inline_ || v.empty() || !v.is_structured())
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // dump() indents with one repeated character: a tab unit or spaces.
  const bool tabs = !unit.empty() && unit.front() == '\t';
  std::string text =
      v.dump(static_cast<int>(unit.size()), tabs ? '\t' : ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += base;
  }
  return out;
}

// `text` with [a, b) replaced by `with`.
std::string splice(const std::string& text, size_t a, size_t b, const std::string& with) {
  return text.substr(0, a) + with + text.substr(b);
}

// What goes into container `n` (an object when `key` is set, else an array)
// to add `v` last: the new text of the whole edit.
std::string add_last(const std::string& t, const Node& top, const Node& n, const std::string* key,
                     const nlohmann::ordered_json& v) {
  const std::string unit = indent_unit(t, top);
  const std::string base = line_indent(t, n.begin);
  const std::string quoted_key = key ? nlohmann::json(*key).dump() + ": " : "";
  if (n.kids.empty()) {
    const std::string inner = base + unit;
    const std::string body = "\n" + inner + quoted_key + render(v, inner, unit, false) + "\n" + base;
    return splice(t, n.begin + 1, n.end - 1, body);
  }
  const size_t first = key ? n.key_at.front() : n.kids.front().begin;
  const bool one_line = !newline_between(t, n.begin, first);
  const size_t after = n.kids.back().end;
  if (one_line) return splice(t, after, after, ", " + quoted_key + render(v, "", unit, true));
  const std::string inner = line_indent(t, first);
  return splice(t, after, after, ",\n" + inner + quoted_key + render(v, inner, unit, false));
}

// Container `n` without its member (or element) `k`.
std::string drop(const std::string& t, const Node& n, size_t k) {
  auto start = [&](size_t i) { return n.kind == 'o' ? n.key_at[i] : n.kids[i].begin; };
  if (n.kids.size() == 1) return splice(t, n.begin + 1, n.end - 1, "");
  if (k + 1 == n.kids.size()) return splice(t, n.kids[k - 1].end, n.kids[k].end, "");
  return splice(t, start(k), start(k + 1), "");
}

}  // namespace

std::optional<JsonSpan> json_find(const std::string& text, const std::vector<std::string>& path) {
  const Node top = Scanner(text).top();
  const Node* n = find_node(top, path);
  if (!n) return std::nullopt;
  return JsonSpan{n->begin, n->end};
}

std::vector<JsonSpan> json_elements(const std::string& text, const std::vector<std::string>& path) {
  const Node top = Scanner(text).top();
  const Node* n = find_node(top, path);
  std::vector<JsonSpan> out;
  if (!n || n->kind != 'a') return out;
  for (const Node& k : n->kids) out.push_back({k.begin, k.end});
  return out;
}

std::string json_append(const std::string& text, const std::vector<std::string>& path,
                        const nlohmann::ordered_json& element) {
  const Node top = Scanner(text).top();
  const Node* n = &top;
  for (size_t depth = 0; depth < path.size(); ++depth) {
    if (n->kind != 'o')
      throw Error("cannot add to " + (depth == 0 ? std::string("the top value") : "'" + path[depth - 1] + "'") +
                  ": it is not an object");
    const Node* next = nullptr;
    for (size_t k = 0; k < n->keys.size(); ++k)
      if (n->keys[k] == path[depth]) next = &n->kids[k];
    if (!next) {
      // The rest of the path does not exist: one member holds all of it.
      nlohmann::ordered_json v = nlohmann::ordered_json::array({element});
      for (size_t d = path.size() - 1; d > depth; --d) v = nlohmann::ordered_json{{path[d], v}};
      return add_last(text, top, *n, &path[depth], v);
    }
    n = next;
  }
  if (n->kind != 'a')
    throw Error("cannot add to '" + (path.empty() ? std::string("the top value") : path.back()) +
                "': it is not an array");
  return add_last(text, top, *n, nullptr, element);
}

std::string json_replace(const std::string& text, JsonSpan span, const nlohmann::ordered_json& value) {
  const Node top = Scanner(text).top();
  const std::string unit = indent_unit(text, top);
  return splice(text, span.begin, span.end, render(value, line_indent(text, span.begin), unit, false));
}

std::string json_remove(const std::string& text, const std::vector<std::string>& path, size_t index) {
  Node top = Scanner(text).top();
  const Node* arr = find_node(top, path);
  if (!arr || arr->kind != 'a' || index >= arr->kids.size()) return text;
  std::string out = drop(text, *arr, index);
  // Emptied containers go with their keys, from the innermost outwards.
  for (size_t depth = path.size(); depth > 0; --depth) {
    top = Scanner(out).top();
    const std::vector<std::string> here(path.begin(), path.begin() + static_cast<long>(depth));
    const Node* n = find_node(top, here);
    if (!n || !n->kids.empty()) break;
    const std::vector<std::string> parent_path(path.begin(), path.begin() + static_cast<long>(depth - 1));
    const Node* parent = find_node(top, parent_path);
    if (!parent) break;
    for (size_t k = 0; k < parent->keys.size(); ++k)
      if (parent->keys[k] == path[depth - 1]) {
        out = drop(out, *parent, k);
        break;
      }
  }
  return out;
}

}  // namespace phoenix::util
