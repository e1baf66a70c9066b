// Redaction of secret values before they are written anywhere a person or a
// tool reads later (evidence, incident notes, the trace).
//
// A variable of the current environment "looks secret" when its name
// contains TOKEN, KEY, SECRET or PASSWORD (any case). Every occurrence of
// its value is replaced by "[redacted:NAME]". Values shorter than
// kMinSecretLength characters are left alone: redacting "1" or "on" would
// garble every text without protecting anything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/json.h"

namespace phoenix::util {

inline constexpr size_t kMinSecretLength = 6;

// True when `name` looks like the name of a secret (TOKEN, KEY, SECRET,
// PASSWORD anywhere in it, case-insensitive).
bool secret_name(const std::string& name);

// `text` with every secret value replaced by "[redacted:NAME]".
std::string redact_secrets(const std::string& text);
std::string redact_secrets(const std::string& text, const std::vector<std::pair<std::string, std::string>>& secrets);

// A copy of `j` with every string (values and keys) redacted.
Json redact_secrets(const Json& j);

}  // namespace phoenix::util
