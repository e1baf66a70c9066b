#include "util/hash.h"

// SHA256_Init/Update/Final are deprecated in OpenSSL 3 but kept there, and
// they hash with the same assembly (SHA-NI, AVX2) as the EVP interface. They
// need none of libcrypto's provider start-up, which EVP_MD_fetch runs even
// with every OPENSSL_INIT_NO_* flag: 0.5 ms of CPU and 30 page faults in
// each short command (`phoenix sense`, the hook). Without them (a libcrypto
// that dropped them), the EVP digest is used.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/sha.h>

#include <fstream>
#include <vector>

#include "util/error.h"

#if OPENSSL_VERSION_MAJOR >= 4 || defined(OPENSSL_NO_DEPRECATED_3_0)
#define PHOENIX_SHA256_EVP 1
#endif

namespace phoenix::util {

#ifdef PHOENIX_SHA256_EVP
namespace {

// SHA-256 of libcrypto's default provider, fetched once (not again by every
// digest), without reading the system's openssl.cnf or filling libcrypto's
// tables: Phoenix only hashes with it.
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

EVP_MD_CTX* ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx(ctx_), sha256_md(), nullptr) != 1)
    throw Error("sha256: cannot initialise libcrypto digest");
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx(ctx_)); }
void Sha256::reset() { EVP_DigestInit_ex(ctx(ctx_), sha256_md(), nullptr); }
void Sha256::update(std::string_view data) { EVP_DigestUpdate(ctx(ctx_), data.data(), data.size()); }
static void finish(void* c, unsigned char* md) {
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx(c), md, &len);
}
#else
namespace {
SHA256_CTX* ctx(void* p) { return static_cast<SHA256_CTX*>(p); }
}  // namespace

Sha256::Sha256() : ctx_(new SHA256_CTX) { SHA256_Init(ctx(ctx_)); }
Sha256::~Sha256() { delete ctx(ctx_); }
void Sha256::reset() { SHA256_Init(ctx(ctx_)); }
void Sha256::update(std::string_view data) { SHA256_Update(ctx(ctx_), data.data(), data.size()); }
static void finish(void* c, unsigned char* md) { SHA256_Final(md, ctx(c)); }
#endif

std::string Sha256::hex() {
  unsigned char md[SHA256_DIGEST_LENGTH];
  finish(ctx_, md);
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof md);
  for (unsigned char c : md) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
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
