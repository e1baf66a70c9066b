// Failing-test-name extractors and normalization over arbitrary runner
// output: no crash, no hang, and the issue signature is a stable 64-hex hash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/signature.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string out(reinterpret_cast<const char*>(data), size);
  auto tests = phoenix::engine::extract_failing_tests(out);
  std::string norm = phoenix::engine::normalize(out);
  phoenix::engine::failure_evidence(norm);
  std::string a = phoenix::engine::issue_signature("unit", out);
  if (a.size() != 64 || a != phoenix::engine::issue_signature("unit", out)) std::abort();
  phoenix::engine::attempt_signature(a, tests);
  return 0;
}
