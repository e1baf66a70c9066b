// SHA-256 through OpenSSL's libcrypto, as lowercase hex.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace phoenix::util {

std::string sha256_hex(std::string_view data);

// Hash of a file's bytes, streamed; throws Error when it cannot be read.
std::string sha256_file(const std::string& path);

// Incremental hashing for data that arrives in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  std::string hex();  // finishes; call reset() before reusing
  void reset();

 private:
  void* ctx_;
};

}  // namespace phoenix::util
