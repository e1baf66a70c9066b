// JSON text as prettier 3 formats a .json file, so a file Phoenix writes
// for a person (phoenix.json from `phoenix init`) passes `prettier --check`
// and a formatter run on it changes nothing:
//   - two spaces of indentation, a final newline, no trailing commas;
//   - a non-empty object always expanded, one key per line (prettier keeps
//     an object expanded when its source has a newline after the '{');
//     `{}` and `[]` stay as they are;
//   - an array of scalars (and of such arrays) on one line when that whole
//     line, with the comma after it, fits in `width` columns; otherwise one
//     element per line, except an array of numbers, which is filled (as many
//     per line as fit);
//   - an array holding a non-empty object, or holding two or more arrays of
//     two or more elements each, one element per line;
//   - numbers as prettier prints them (lowercase, no "+" or leading zeros
//     in an exponent, no trailing zeros after a decimal point);
//   - `// comment` lines on their own lines, indented like the line that
//     follows them.
// Widths count code points, East Asian wide characters as two columns.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace phoenix::util {

// Comment lines (without the leading "// ") keyed by the path of the member
// they precede: "checks" (a key of the top object), "checks[0]",
// "checks[0].target". "<path>/end" (or "/end" for the top object) holds the
// lines after the last member of that object or array.
using JsonComments = std::map<std::string, std::vector<std::string>>;

std::string prettier_style(const nlohmann::ordered_json& j, const JsonComments& comments = {}, size_t width = 80);

}  // namespace phoenix::util
