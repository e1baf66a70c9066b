// The pre-push shim's text: the shell shim and the direct one (hook/hook.h).
#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>

#include "hook/hook.h"
#include "layout/paths.h"
#include "util/error.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPhoenixPlaceholder = "@PHOENIX@";
constexpr std::string_view kSuffixPlaceholder = "@CHAINED_SUFFIX@";

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

using util::replace_all;

// The inverse of sh_quote for one word as sh_quote writes it.
std::string sh_unquote(std::string_view s) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'') {
      quoted = !quoted;
    } else if (c == '\\' && !quoted && i + 1 < s.size()) {
      out += s[++i];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_shim(std::string_view tmpl, const std::string& phoenix_bin) {
  if (!is_shim(tmpl)) throw Error("the pre-push template lacks its marker line '" + std::string(kShimMarker) + "'");
  if (tmpl.find(kPhoenixPlaceholder) == std::string_view::npos ||
      tmpl.find(kSuffixPlaceholder) == std::string_view::npos)
    throw Error("the pre-push template lacks " + std::string(kPhoenixPlaceholder) + " or " +
                std::string(kSuffixPlaceholder));
  std::string text = replace_all(std::string(tmpl), kPhoenixPlaceholder, sh_quote(phoenix_bin));
  return replace_all(std::move(text), kSuffixPlaceholder, layout::kChainedHookSuffix);
}

bool shebang_safe(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.size() > kMaxShebangPath) return false;
  return std::none_of(path.begin(), path.end(),
                      [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == '\x7f'; });
}

std::string program_copy_path(const std::string& hooks_dir) {
  return (fs::path(hooks_dir) / "pre-push.phoenix-hook").string();
}

std::string render_direct_shim(std::string_view tmpl, const std::string& program, const std::string& source) {
  if (!is_shim(tmpl)) throw Error("the pre-push template lacks its marker line '" + std::string(kShimMarker) + "'");
  if (!util::starts_with(tmpl, "#!@PHOENIX_HOOK@\n") || tmpl.find("@PHOENIX_HOOK_SOURCE@") == std::string_view::npos ||
      tmpl.find(kPhoenixPlaceholder) == std::string_view::npos)
    throw Error("the direct pre-push template lacks #!@PHOENIX_HOOK@ on its first line, @PHOENIX_HOOK_SOURCE@ or " +
                std::string(kPhoenixPlaceholder));
  if (!shebang_safe(program))
    throw Error("cannot name " + program + " on a hook's #! line (it needs an absolute path of at most " +
                std::to_string(kMaxShebangPath) + " bytes without blanks)");
  std::string text = replace_all(std::string(tmpl), "@PHOENIX_HOOK_SOURCE@", source);
  text = replace_all(std::move(text), "@PHOENIX_HOOK@", program);
  text = replace_all(std::move(text), kPhoenixPlaceholder, (fs::path(source).parent_path() / "phoenix").string());
  return replace_all(std::move(text), kSuffixPlaceholder, layout::kChainedHookSuffix);
}

std::string shim_binary(std::string_view content) {
  if (!is_shim(content)) return "";
  if (!shim_interpreter(content).empty()) {
    const std::string source = shim_program_source(content);
    return source.empty() ? "" : (fs::path(source).parent_path() / "phoenix").string();
  }
  for (const auto& line : util::split_lines(content))
    if (util::starts_with(line, "PHOENIX=")) return sh_unquote(std::string_view(line).substr(8));
  return "";
}

}  // namespace phoenix::hook
