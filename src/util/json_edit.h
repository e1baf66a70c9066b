// Edits of JSON text that leave every byte outside the edit as it was, so a
// person's settings file keeps its order of keys, its spacing and its
// comments (// and /* */, which some CLIs allow) when a program adds or
// removes one entry. An edit appended and then removed gives back the text
// it started from, byte for byte.
//
// The text given must parse (util::parse_json first: that is where a file
// that does not parse is named, with its line and column); these functions
// read its structure, they do not validate it. New text is indented like
// its neighbours (the file's own indentation unit, two spaces where the
// file does not show one); an object or array written on one line gets new
// members on that line.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace phoenix::util {

// [begin, end) of a value's text.
struct JsonSpan {
  size_t begin = 0;
  size_t end = 0;
};

// The value at `path` (keys of nested objects, from the top value), or
// nullopt where a key is missing or a value on the way is not an object.
std::optional<JsonSpan> json_find(const std::string& text, const std::vector<std::string>& path);

// The elements of the array at `path`, in order; empty when there is none.
std::vector<JsonSpan> json_elements(const std::string& text, const std::vector<std::string>& path);

// `element` appended to the array at `path`; the objects and the array on
// the way that are missing are added as the last members of their parents.
// Throws Error when a value on the way is there but is not an object (or,
// at the end, not an array).
std::string json_append(const std::string& text, const std::vector<std::string>& path,
                        const nlohmann::ordered_json& element);

// The value at `span` replaced by `value`, indented like the line it is on.
std::string json_replace(const std::string& text, JsonSpan span, const nlohmann::ordered_json& value);

// The element `index` of the array at `path` removed, with the comma that
// joined it to its neighbours. An array left empty is removed with its key,
// and so is an object left empty, up to the top value (which stays, `{}`
// at the least). Returns `text` unchanged when there is no such element.
std::string json_remove(const std::string& text, const std::vector<std::string>& path, size_t index);

}  // namespace phoenix::util
