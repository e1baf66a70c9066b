// PNG decode of baselines: any bytes decode or throw ImageError (limits are
// checked before allocating); a decoded image re-encodes, decodes to the
// same pixels and compares equal to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  phoenix::image::Image img;
  try {
    img = phoenix::image::decode_png(bytes, "fuzz", 1 << 20);
  } catch (const phoenix::image::ImageError&) { return 0; }
  if (img.width <= 0 || img.height <= 0 || img.rgba.size() != size_t(img.width) * img.height * 4) std::abort();
  phoenix::image::Image again = phoenix::image::decode_png(phoenix::image::encode_png(img), "round trip", 1 << 20);
  if (again.rgba != img.rgba) std::abort();
  auto cmp = phoenix::image::compare(img, again, {}, false);
  if (cmp.differing != 0 || cmp.size_mismatch) std::abort();
  return 0;
}
