#include "util/hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "util/error.h"

namespace phoenix::util {

namespace {

// SHA-256 of libcrypto's default provider, fetched once (not again by every
// digest). libcrypto is started without reading the system's openssl.cnf
// and without filling its tables of every cipher, digest and error string
// (the fetch needs none of them): Phoenix only hashes with it, and that
// start-up was a fifth of a short command's CPU.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                            OPENSSL_INIT_NO_ADD_ALL_DIGESTS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS,
                        nullptr);
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched ? fetched : EVP_sha256();
  }();
  return md;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), sha256_md(), nullptr) != 1)
    throw Error("sha256: cannot initialise libcrypto digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::reset() { EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), sha256_md(), nullptr); }

void Sha256::update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(digits[md[i] >> 4]);
    out.push_back(digits[md[i] & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  Sha256 h;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  return h.hex();
}

}  // namespace phoenix::util
