// The pre-push hook's stdin: parse_pre_push accepts any bytes and either
// returns refs or throws UsageError; what it returns is well formed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hook/hook.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    auto refs = phoenix::hook::parse_pre_push(in);
    for (const auto& r : refs) {
      if (r.local_ref.empty() || r.remote_ref.empty()) std::abort();
      if (r.local_sha.size() != r.remote_sha.size()) std::abort();
      if (r.local_sha.size() != 40 && r.local_sha.size() != 64) std::abort();
    }
    phoenix::hook::commits_to_measure(refs);
  } catch (const phoenix::UsageError&) {}
  return 0;
}
