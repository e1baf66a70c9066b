// PNG decode and encode. decode_png() is the one entry point for untrusted
// bytes (baselines, screenshots, HTTP bodies, fuzzers): it walks the chunk
// structure itself -- signature, IHDR, every length and CRC, IEND -- and
// refuses a declared size over the limit before stb_image allocates anything.
// stb_image skips CRCs, so without this walk a flipped bit would decode into
// a silently different picture.
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <stb_image_write.h>

#include "image/image.h"
#include "image/stb_decode.h"
#include "util/atomic_file.h"

namespace phoenix::image {

namespace {

constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// CRC-32 (ISO-HDLC, as PNG uses), slice-by-8: every byte of every file we
// read goes through it, so it must not be the slow part of a decode.
struct CrcTables {
  std::uint32_t t[8][256];
  CrcTables() {
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][n] = c;
    }
    for (std::uint32_t n = 0; n < 256; ++n)
      for (int s = 1; s < 8; ++s) t[s][n] = (t[s - 1][n] >> 8) ^ t[0][t[s - 1][n] & 0xff];
  }
};

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  static const CrcTables tables;
  const auto& t = tables.t;
  std::uint32_t c = 0xffffffffu;
  while (n >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian host assumed, as everywhere Phoenix runs
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::string chunk_name(const unsigned char* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    unsigned char ch = p[i];
    s += (ch >= 0x21 && ch < 0x7f) ? static_cast<char>(ch) : '?';
  }
  return s;
}

[[noreturn]] void fail(const std::string& what, const std::string& why) { throw ImageError(what + ": " + why); }

// Checks structure and limits; returns the declared size.
void check_structure(const std::string& bytes, const std::string& what, long long max_pixels, int* width, int* height) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n == 0) fail(what, "not a PNG (empty)");
  if (n < 8 || std::memcmp(p, kSignature, n < 8 ? n : 8) != 0) {
    if (std::memcmp(p, kSignature, n < 8 ? n : 8) == 0)
      fail(what, "truncated PNG (" + std::to_string(n) + " bytes, signature incomplete)");
    fail(what, "not a PNG (no PNG signature)");
  }
  // IHDR: length 13, type, width, height, depth, colour type, ..., CRC.
  if (n < 8 + 8 + 13 + 4) fail(what, "truncated PNG (" + std::to_string(n) + " bytes, no complete IHDR chunk)");
  if (be32(p + 8) != 13 || std::memcmp(p + 12, "IHDR", 4) != 0)
    fail(what, "corrupt PNG (first chunk is not a 13-byte IHDR)");
  const std::uint32_t w = be32(p + 16), h = be32(p + 20);
  if (w == 0 || h == 0) fail(what, "empty image (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  if (w > 0x7fffffffu || h > 0x7fffffffu)
    fail(what, "corrupt PNG (IHDR declares " + std::to_string(w) + "x" + std::to_string(h) + ")");
  const long long pixels = static_cast<long long>(w) * static_cast<long long>(h);
  if (pixels > max_pixels)
    fail(what, "declared size " + std::to_string(w) + "x" + std::to_string(h) + " (" + std::to_string(pixels) +
                   " pixels) is over the limit of " + std::to_string(max_pixels) + " pixels");

  std::size_t pos = 8;
  bool seen_idat = false;
  for (;;) {
    if (pos + 8 > n) fail(what, "truncated PNG (" + std::to_string(n) + " bytes, ends before the IEND chunk)");
    const std::uint32_t len = be32(p + pos);
    const std::string name = chunk_name(p + pos + 4);
    if (len > 0x7fffffffu)
      fail(what, "corrupt PNG (" + name + " chunk at byte " + std::to_string(pos) + " declares length " +
                     std::to_string(len) + ")");
    if (pos + 12 + len > n)
      fail(what, "truncated PNG (" + name + " chunk at byte " + std::to_string(pos) + " needs " +
                     std::to_string(12 + std::size_t{len}) + " bytes, " + std::to_string(n - pos) + " left)");
    const std::uint32_t stored = be32(p + pos + 8 + len);
    if (crc32(p + pos + 4, 4 + std::size_t{len}) != stored)
      fail(what, "corrupt PNG (CRC mismatch in " + name + " chunk at byte " + std::to_string(pos) + ")");
    if (name == "IDAT") seen_idat = true;
    if (name == "IEND") break;
    pos += 12 + std::size_t{len};
  }
  if (!seen_idat) fail(what, "corrupt PNG (no IDAT chunk)");
  *width = static_cast<int>(w);
  *height = static_cast<int>(h);
}

// --- 8-bit RGB and RGBA, not interlaced -------------------------------------
//
// What browsers' screenshots and Phoenix's own encoder make, decoded here
// with zlib's inflate (about three times stb_image's speed) into the rows
// one at a time, each unfiltered straight into the RGBA result. Every other
// kind of PNG goes to stb_image. Called after check_structure(), so every
// chunk is whole and its CRC right.

std::uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return static_cast<std::uint8_t>(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

// Undoes filter `type` of one row of `n` bytes (`bpp` bytes a pixel): `in`
// the filtered bytes, `prev` the row above unfiltered (zeros for the first),
// `out` the result. False for an unknown filter type.
template <int bpp>
bool unfilter(std::uint8_t type, const std::uint8_t* in, const std::uint8_t* prev, std::uint8_t* out, std::size_t n) {
  switch (type) {
    case 0: std::memcpy(out, in, n); return true;
    case 1:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(in[i] + (i >= bpp ? out[i - bpp] : 0));
      return true;
    case 2:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(in[i] + prev[i]);
      return true;
    case 3:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::uint8_t>(in[i] + (((i >= bpp ? out[i - bpp] : 0) + prev[i]) >> 1));
      return true;
    case 4:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::uint8_t>(
            in[i] + (i >= bpp ? paeth(out[i - bpp], prev[i], prev[i - bpp]) : paeth(0, prev[i], 0)));
      return true;
    default: return false;
  }
}

struct Inflater {
  z_stream zs{};
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() { inflateEnd(&zs); }
};

// True when the picture is of the kind decoded here.
bool plain_8bit(const unsigned char* p) {
  const unsigned char depth = p[24], colour = p[25], method = p[26], filter = p[27], interlace = p[28];
  return depth == 8 && (colour == 2 || colour == 6) && method == 0 && filter == 0 && interlace == 0;
}

template <int bpp>
void decode_rows(const std::string& bytes, int width, int height, std::uint8_t* rgba, const std::string& what) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t stride = static_cast<std::size_t>(width) * bpp;
  std::vector<std::uint8_t> line(stride + 1), zeros(stride, 0), rows(bpp == 4 ? 0 : 2 * stride);
  Inflater z;
  if (inflateInit(&z.zs) != Z_OK) fail(what, "cannot start zlib's inflate");
  int row = 0;
  std::size_t filled = 0;
  for (std::size_t pos = 8; row < height;) {
    const std::uint32_t len = be32(p + pos);
    if (std::memcmp(p + pos + 4, "IEND", 4) == 0) break;
    if (std::memcmp(p + pos + 4, "IDAT", 4) == 0) {
      z.zs.next_in = const_cast<Bytef*>(p + pos + 8);
      z.zs.avail_in = len;
      while (z.zs.avail_in > 0 && row < height) {
        z.zs.next_out = line.data() + filled;
        z.zs.avail_out = static_cast<uInt>(line.size() - filled);
        const int rc = inflate(&z.zs, Z_NO_FLUSH);
        filled = line.size() - z.zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
          fail(what, std::string("corrupt PNG data (") + (z.zs.msg ? z.zs.msg : "inflate failed") + ")");
        if (filled == line.size()) {
          std::uint8_t* out =
              bpp == 4 ? rgba + static_cast<std::size_t>(row) * stride : rows.data() + (row & 1) * stride;
          const std::uint8_t* prev = row == 0   ? zeros.data()
                                     : bpp == 4 ? out - stride
                                                : rows.data() + ((row + 1) & 1) * stride;
          if (!unfilter<bpp>(line[0], line.data() + 1, prev, out, stride))
            fail(what,
                 "corrupt PNG data (row " + std::to_string(row) + " has filter type " + std::to_string(line[0]) + ")");
          if (bpp == 3) {
            std::uint8_t* dst = rgba + static_cast<std::size_t>(row) * width * 4;
            for (int x = 0; x < width; ++x, dst += 4, out += 3) {
              dst[0] = out[0];
              dst[1] = out[1];
              dst[2] = out[2];
              dst[3] = 255;
            }
          }
          ++row;
          filled = 0;
        }
        if (rc == Z_STREAM_END) break;
        if (rc == Z_BUF_ERROR && z.zs.avail_in > 0) fail(what, "corrupt PNG data (inflate made no progress)");
      }
    }
    pos += 12 + std::size_t{len};
  }
  if (row < height)
    fail(what,
         "corrupt PNG data (image data ends after " + std::to_string(row) + " of " + std::to_string(height) + " rows)");
}

}  // namespace

Image decode_png(const std::string& bytes, const std::string& what, long long max_pixels) {
  int dw = 0, dh = 0;
  check_structure(bytes, what, max_pixels, &dw, &dh);
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    fail(what, "PNG of " + std::to_string(bytes.size()) + " bytes is too large to decode");
  Image img;
  const std::size_t size = static_cast<std::size_t>(dw) * static_cast<std::size_t>(dh) * 4;
  resize_pixels(img.rgba, size);
  const auto* head = reinterpret_cast<const unsigned char*>(bytes.data());
  if (plain_8bit(head)) {
    if (head[25] == 6) decode_rows<4>(bytes, dw, dh, img.rgba.data(), what);
    else decode_rows<3>(bytes, dw, dh, img.rgba.data(), what);
    img.width = dw;
    img.height = dh;
    return img;
  }
  int w = 0, h = 0;
  unsigned char* px = detail::stb_decode_rgba(reinterpret_cast<const unsigned char*>(bytes.data()),
                                              static_cast<int>(bytes.size()), &w, &h, img.rgba.data(), size);
  if (px == nullptr) {
    const char* why = detail::stb_failure();
    fail(what, std::string("corrupt PNG data (") + (why ? why : "undecodable") + ")");
  }
  if (px != img.rgba.data()) {  // decoded elsewhere (another colour type or depth)
    if (w == dw && h == dh) std::memcpy(img.rgba.data(), px, size);
    detail::stb_free(px);
  }
  if (w != dw || h != dh) fail(what, "corrupt PNG (decoded size differs from IHDR)");
  img.width = w;
  img.height = h;
  return img;
}

void resize_pixels(std::vector<std::uint8_t>& pixels, std::size_t bytes) {
  if (bytes >= 2 * detail::kHugePage && pixels.capacity() < bytes) {
    std::vector<std::uint8_t>().swap(pixels);
    pixels.reserve(bytes);  // not touched yet: no page is there until written
    detail::advise_huge_pages(pixels.data(), bytes);
  }
  pixels.resize(bytes);
}

Image read_png(const std::string& path, long long max_pixels) {
  return decode_png(util::read_file(path), path, max_pixels);
}

std::string encode_png(const Image& img) {
  if (img.width <= 0 || img.height <= 0 ||
      img.rgba.size() != static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4)
    throw ImageError("cannot encode a " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                     " image from " + std::to_string(img.rgba.size()) + " bytes of RGBA");
  std::string out;
  auto sink = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(sink, &out, img.width, img.height, 4, img.rgba.data(), img.width * 4))
    throw ImageError("cannot encode a " + std::to_string(img.width) + "x" + std::to_string(img.height) + " PNG");
  return out;
}

void write_png(const std::string& path, const Image& img) { util::write_file_atomic(path, encode_png(img)); }

}  // namespace phoenix::image
