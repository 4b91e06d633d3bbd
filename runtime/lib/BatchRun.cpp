//===- BatchRun.cpp - Generation for a batch of prompts, decoding together ===//
#include "xfrt/BatchRun.h"

#include "xfrt/BatchFile.h"
#include "xfrt/BatchGenerate.h"
#include "xfrt/MessageText.h"
#include "xfrt/PackedBatch.h"
#include "xfrt/TextStream.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace xfrt {

bool canDecodeTogether(const Options &o, const Session &session, const Batch &batch,
                       bool chat) {
  // A decoder on its KV caches; an encoder-decoder re-running its prefixes.
  bool packed = batch.sources.empty() ? session.canPackCached() && !o.noCache
                                      : session.manifest().encoderDecoder && session.canPack();
  return packed && !chat && batch.size() > 1 && o.batchSize != 1;
}

int runBatchedGeneration(const Options &o, const Manifest &m, Session &session,
                         const Batch &batch, const Tokenizer *tok, const GenerateOptions &g) {
  // Every cache holds what the longest request can reach.
  bool rerun = !batch.sources.empty();
  int64_t limit = positionLimit(session, !rerun), capacity = 1;
  for (const auto &prompt : batch.targets)
    capacity = std::max(capacity, std::min(limit, int64_t(prompt.size()) +
                                                      std::max<int64_t>(g.maxNewTokens, 1)));
  int64_t places = o.batchSize > 0 ? o.batchSize : kDefaultBatchChunk;
  BatchDecoder decoder = rerun ? BatchDecoder::rerunning(session, places)
                               : BatchDecoder(session, places, capacity);
  size_t n = batch.size();
  std::vector<std::optional<GenerateResult>> done(n);
  size_t printed = 0;
  bool jsonLines = o.jsonGeneration();
  const Tokenizer *textTok = o.textTokenizer(tok); // none for --output ids
  // Finished sequences are printed in input order, as one run per sequence prints them.
  auto flush = [&]() {
    for (; printed < n && done[printed]; ++printed) {
      const GenerateResult &r = *done[printed];
      if (jsonLines) {
        std::optional<std::string> text;
        if (tok)
          if (Expected<std::string> t = tok->decode(r.newTokens); t)
            text = t.take();
        writeGenerationLine(stdout, printed, batch.lines.empty() ? -1 : batch.lines[printed],
                            r.promptTokens, r.newTokens, text,
                            r.hitPositionLimit ? "position limit" : r.stopReason);
        continue;
      }
      if (textTok) {
        TextStream text(textTok);
        for (int32_t id : r.newTokens)
          text.add(id);
        text.finish();
        std::printf("\n");
        std::fflush(stdout);
        warnMissingIds(text);
      } else {
        for (size_t k = 0; k < r.newTokens.size(); ++k)
          std::printf(k ? ",%d" : "%d", r.newTokens[k]);
        std::printf("\n");
        std::fflush(stdout);
      }
      if (r.hitPositionLimit)
        std::fprintf(stderr, "stopped: %s\n", r.stopReason.c_str());
      std::fprintf(stderr, "%s: sequence %zu: %zu new tokens (stop: %s, %s, decoding "
                   "together)\n", m.model.c_str(), printed + 1, r.newTokens.size(),
                   r.hitPositionLimit ? "position limit" : r.stopReason.c_str(),
                   r.cached ? "KV cache" : "re-running the prefix");
    }
  };
  for (size_t i = 0; i < n; ++i) {
    BatchRequest request;
    request.prompt = batch.targets[i];
    if (rerun)
      request.source = batch.sources[i];
    request.options = g;
    request.seed = o.samplingSeed;
    request.onDone = [&, i](const GenerateResult &r) { done[i] = r; };
    if (Status s = decoder.add(std::move(request)); !s) {
      std::fprintf(stderr, "error: %s\n", printableMessage(s.message()).c_str());
      return 1;
    }
  }
  while (!decoder.idle()) {
    if (Status s = decoder.step(); !s) {
      flush();
      std::fprintf(stderr, "error: %s\n", printableMessage(s.message()).c_str());
      return 1;
    }
    flush();
  }
  const BatchStats &st = decoder.stats();
  std::fprintf(stderr,
               "%s: %zu sequences, up to %lld decoding together: %lld new tokens in %lld steps, "
               "%.2f ms; decode %lld tokens in %.2f ms (%.1f tokens/s)\n",
               m.model.c_str(), n, (long long)st.maxActive, (long long)st.tokens,
               (long long)st.steps, st.ms, (long long)st.decodeTokens, st.decodeMs,
               st.decodeMs > 0 ? 1e3 * double(st.decodeTokens) / st.decodeMs : 0.0);
  return 0;
}

} // namespace xfrt
