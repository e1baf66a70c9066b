#include "util/error.h"

#include <cerrno>
#include <cstring>

namespace phoenix {

void throw_errno(const std::string& what) {
  int e = errno;
  throw Error(what + ": " + std::strerror(e));
}

}  // namespace phoenix
