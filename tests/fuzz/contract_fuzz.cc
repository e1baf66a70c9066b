// Contract shapes: two JSON documents (split at the first NUL byte) are
// inferred and diffed both ways; a shape survives its file format and every
// rendered type parses back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "checks/contract.h"
#include "util/error.h"

namespace contract = phoenix::checks::contract;
using phoenix::util::Json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  Json a = Json::parse(in.substr(0, nul), nullptr, false);
  Json b = nul == std::string::npos ? a : Json::parse(in.substr(nul + 1), nullptr, false);
  if (a.is_discarded() || b.is_discarded()) return 0;
  contract::Shape sa = contract::infer(a), sb = contract::infer(b);
  for (bool strict : {false, true}) {
    auto d = contract::diff(sa, sb, strict);
    contract::signal(d);
    contract::explain(d, sa, sb);
    if (!contract::diff(sa, sa, strict).empty()) std::abort();  // a shape never drifts from itself
  }
  for (const auto& [path, type] : sa) {
    if (!(contract::parse_type(contract::render(type), path) == type)) std::abort();
  }
  contract::Contract c;
  c.url = "http://127.0.0.1/x";
  c.shape = sa;
  try {
    if (!(contract::from_json(contract::to_json(c), "fuzz").shape == sa)) std::abort();
  } catch (const phoenix::Error&) {
    std::abort();  // what to_json writes must load
  }
  return 0;
}
