// Internal to src/image: stb_image's PNG decoder, decoding straight into a
// buffer the caller owns when stb's own output has exactly that size (8-bit
// RGBA: the common case), so a decoded picture is never copied.
#pragma once

#include <cstddef>

namespace phoenix::image::detail {

// Decodes `len` bytes to 8-bit RGBA. Returns `target` when the pixels were
// decoded into it, another buffer (free it with stb_free) whose pixels the
// caller copies, or nullptr with stb_failure() saying why.
unsigned char* stb_decode_rgba(const unsigned char* data, int len, int* w, int* h, unsigned char* target,
                               std::size_t target_size);
void stb_free(unsigned char* pixels);

// Below this size a buffer is left to the ordinary 4 KiB pages.
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Asks the kernel for transparent huge pages over the whole 2 MiB pages
// inside [begin, begin + bytes), before they are first touched: a 4K
// picture's buffer is then a few dozen page faults, not eight thousand.
// A hint: where huge pages are off it does nothing.
void advise_huge_pages(void* begin, std::size_t bytes);
const char* stb_failure();

}  // namespace phoenix::image::detail
