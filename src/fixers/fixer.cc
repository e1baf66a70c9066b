#include "fixers/fixer.h"

namespace phoenix::fixers {

const char* status_name(Status s) {
  switch (s) {
    case Status::kProposed: return "proposed";
    case Status::kNothing: return "nothing";
    case Status::kUnavailable: return "unavailable";
    case Status::kRateLimited: return "rate-limited";
    case Status::kQuota: return "quota";
    case Status::kTimeout: return "timeout";
    case Status::kCrashed: return "crashed";
    case Status::kAborted: return "aborted";
  }
  return "?";
}

}  // namespace phoenix::fixers
