//===- RuntimeLoaderFuzzer.cpp - libFuzzer target for libxfrt's loaders --===//
//
// Feeds arbitrary bytes to the JSON parser, the safetensors header validator (then reads and
// converts every float tensor the header admits, so ASan catches any out-of-bounds offset),
// the manifest parser, the token-list parser, and --serve's request bodies (ServeRequests.h).
//
//===----------------------------------------------------------------------===//
#include "xfrt/Cli.h"
#include "xfrt/Json.h"
#include "xfrt/Manifest.h"
#include "xfrt/Safetensors.h"
#include "xfrt/ServeRequests.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

using namespace xfrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  (void)parseJson(text);

  Expected<SafetensorsHeader> header = parseSafetensors(data, size, "fuzz.safetensors");
  if (header) {
    std::vector<float> buffer;
    for (const TensorEntry &t : header->tensors) {
      if (!isFloatDType(t.dtype) || t.numel > (int64_t(1) << 22))
        continue;
      buffer.resize(size_t(t.numel));
      convertToF32(t.dtype, data + header->dataStart + t.begin, size_t(t.numel), buffer.data());
    }
  }

  Expected<Manifest> manifest = parseManifest(text);
  if (manifest) {
    (void)parseTokenList("1,2,3", "--tokens", *manifest);
    (void)usageText("fuzz", &*manifest);
  }
  Manifest small;
  small.vocab = 100;
  small.maxPositions = 16;
  (void)parseTokenList(text.substr(0, 256), "--tokens", small);

  ServeLimits limits;
  limits.vocab = 100;
  limits.maxTokens = 16;
  CompletionRequest completion;
  (void)parseCompletionRequest(text, limits, CompletionDefaults{}, completion);
  EmbeddingRequest embedding;
  (void)parseEmbeddingRequest(text, limits, embedding);
  return 0;
}
