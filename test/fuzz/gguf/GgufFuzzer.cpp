//===- GgufFuzzer.cpp - libFuzzer target for libxfrt's GGUF reader --------===//
//
// Feeds arbitrary bytes to the GGUF validator; for a file it accepts, reads every metadata
// value through each typed getter, dequantizes every tensor it can (to f32 and bf16, so ASan
// catches any out-of-bounds offset or block), and builds the tokenizer the metadata describes,
// then encodes and decodes a few texts with it.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"
#include "xfrt/GgufTokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

using namespace xfrt;

namespace {

void readAllMetadata(const GgufHeader &h) {
  for (const GgufKeyValue &kv : h.metadata) {
    (void)kv.value.describe();
    (void)h.getU32(kv.key);
    (void)h.getI64(kv.key);
    (void)h.getF32(kv.key);
    (void)h.getBool(kv.key);
    (void)h.getString(kv.key);
    (void)h.getStringArray(kv.key);
    (void)h.getI32Array(kv.key);
    (void)h.getF32Array(kv.key);
  }
}

void dequantizeAll(const GgufHeader &h) {
  std::vector<uint16_t> bf16;
  for (const GgufTensor &t : h.tensors) {
    if (!canDequantize(t.type) || t.numel > (int64_t(1) << 20))
      continue;
    (void)dequantizeTensor(h, t);
    bf16.resize(size_t(t.numel));
    (void)dequantizeToBf16(t.type, t.data, size_t(t.numel), bf16.data());
  }
}

void tokenize(const GgufHeader &h, std::string_view extra) {
  Expected<GgufTokenizer> tok = loadGgufTokenizer(h);
  if (!tok)
    return;
  for (std::string_view text : {std::string_view("<|im_start|>user\nHi 12 there<|im_end|>"),
                                std::string_view("a  1\t\xC3\xA9\xFF"), extra}) {
    Expected<std::vector<int32_t>> ids = tok->tokenizer->encode(text);
    if (ids)
      (void)tok->tokenizer->decode(*ids);
  }
  (void)tok->tokenizer->decode({0, -1, int32_t(tok->tokenizer->vocabSize())});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Expected<GgufHeader> header = parseGguf(data, size, "fuzz.gguf");
  if (!header)
    return 0;
  readAllMetadata(*header);
  dequantizeAll(*header);
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  tokenize(*header, bytes.substr(size > 64 ? size - 64 : 0));
  return 0;
}
