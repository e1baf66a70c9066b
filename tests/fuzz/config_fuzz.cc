// phoenix.json parsing: any bytes either load or throw phoenix::Error (a
// ConfigError naming file:line:col or the field); nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    phoenix::config::parse(text, "phoenix.json");
  } catch (const phoenix::Error&) {}
  return 0;
}
