//===- WeightCheck.cpp - NaN and infinities in loaded weights -------------===//
//
// A checkpoint holding NaN or ±Inf runs "successfully" into NaN logits, so every loaded
// parameter is scanned once at load. The scan reads the exponent bits (all ones: NaN or Inf)
// with integer operations the compiler vectorizes. Pages of a mapped checkpoint are dropped
// again after their chunk is scanned (MADV_DONTNEED re-reads them from the file on the next
// access; nothing has written to them yet), so the scan does not make the whole checkpoint
// resident: tensors a run never touches stay out of memory, as before.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Weights.h"

#include <algorithm>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace xfrt {
namespace {

constexpr size_t kChunkBytes = size_t(16) << 20;

// Elements of `count` float32 (or bfloat16) bit patterns whose exponent is all ones.
size_t countNonFinite(const uint8_t *bytes, size_t count, bool bf16, size_t &first) {
  size_t bad = 0;
  if (bf16) {
    const uint16_t *x = reinterpret_cast<const uint16_t *>(bytes);
    for (size_t i = 0; i < count; ++i)
      bad += (x[i] & 0x7f80u) == 0x7f80u;
  } else {
    const uint32_t *x = reinterpret_cast<const uint32_t *>(bytes);
    for (size_t i = 0; i < count; ++i)
      bad += (x[i] & 0x7f800000u) == 0x7f800000u;
  }
  if (bad)
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits = 0;
      if (bf16) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        bits = uint32_t(h) << 16;
      } else {
        std::memcpy(&bits, bytes + 4 * i, 4);
      }
      if ((bits & 0x7f800000u) == 0x7f800000u) {
        first = i;
        break;
      }
    }
  return bad;
}

// Drops the whole pages of [p, p + size) that lie inside one of the mapped files.
void dropMappedPages(const uint8_t *p, size_t size, const WeightSet &weights) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  for (const auto &file : weights.files) {
    const uint8_t *begin = file->data(), *end = begin + file->size();
    if (!begin || p < begin || p + size > end)
      continue;
    uintptr_t from = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    uintptr_t to = (reinterpret_cast<uintptr_t>(p) + size) & ~(page - 1);
    if (to > from)
      (void)::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
    return;
  }
}

} // namespace

std::string findNonFiniteWeights(const Manifest &manifest, const WeightSet &weights) {
  size_t tensors = 0, total = 0;
  std::string firstTensor;
  size_t firstIndex = 0, firstCount = 0;
  for (size_t i = 0; i < manifest.parameters.size() && i < weights.params.size(); ++i) {
    bool bf16 = i < weights.bf16.size() && weights.bf16[i];
    if (i < weights.blocks.size() && weights.blocks[i])
      continue; // ggml blocks: scales only; not checked here
    size_t element = bf16 ? 2 : 4, count = size_t(manifest.parameters[i].numel);
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(weights.params[i]);
    if (!bytes || count == 0)
      continue;
    size_t bad = 0, first = 0;
    for (size_t done = 0; done < count;) {
      size_t n = std::min(count - done, kChunkBytes / element), at = 0;
      size_t found = countNonFinite(bytes + done * element, n, bf16, at);
      if (found && !bad)
        first = done + at;
      bad += found;
      dropMappedPages(bytes + done * element, n * element, weights);
      done += n;
    }
    if (!bad)
      continue;
    if (!tensors)
      firstTensor = manifest.parameters[i].name, firstIndex = first, firstCount = bad;
    ++tensors, total += bad;
  }
  if (!tensors)
    return "";
  std::string line = "tensor '" + firstTensor + "' has " + std::to_string(firstCount) +
                     " NaN/Inf value" + (firstCount == 1 ? "" : "s") + " (the first at element " +
                     std::to_string(firstIndex) + ")";
  if (tensors > 1)
    line += ", " + std::to_string(total - firstCount) + " more in " +
            std::to_string(tensors - 1) + " other tensor" + (tensors == 2 ? "" : "s");
  return line + "; outputs will be NaN";
}

} // namespace xfrt
