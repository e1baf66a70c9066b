#include "util/gitfile.h"

#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::util {

std::optional<std::string> gitdir_of_file(const std::string& dotgit) {
  std::optional<std::string> text;
  try {
    text = read_file_if_exists(dotgit);
  } catch (const Error&) { return std::nullopt; }
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!text || !starts_with(*text, kPrefix)) return std::nullopt;
  std::filesystem::path dir = trim(text->substr(kPrefix.size()));
  if (dir.is_relative()) dir = std::filesystem::path(dotgit).parent_path() / dir;
  return dir.string();
}

}  // namespace phoenix::util
