//===- Driver.cpp - main() of generated executables, as a function --------===//
//
// manifest -> options -> tokenizer -> sequences -> weights -> Session
// (xf_prepare) -> either forward passes over the batch (--repeat times; logits
// / hidden states / embeddings) or generation (Generate.h) per sequence.
// Everything the user controls is validated before the generated code sees it.
// Forward passes over a batch run packed chunks (PackedBatch.h) when the model
// has xf_forward_packed, else one xf_forward per sequence.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Driver.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Chat.h"
#include "xfrt/Cli.h"
#include "xfrt/CudaGraphs.h"
#include "xfrt/Device.h"
#include "xfrt/DeviceCeilings.h"
#include "xfrt/Embeddings.h"
#include "xfrt/Generate.h"
#include "xfrt/HalideErrors.h"
#include "xfrt/Inputs.h"
#include "xfrt/Manifest.h"
#include "xfrt/Memory.h"
#include "xfrt/MessageText.h"
#include "xfrt/Npy.h"
#include "xfrt/BatchFile.h"
#include "xfrt/BatchRun.h"
#include "xfrt/PackedBatch.h"
#include "xfrt/OutputFile.h"
#include "xfrt/Profile.h"
#include "xfrt/Session.h"
#include "xfrt/TextStream.h"
#include "xfrt/Weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <thread>

namespace xfrt {

std::vector<int64_t> topIndices(const float *row, int64_t n, int k) {
  auto better = [row](int64_t a, int64_t b) {
    float x = row[a], y = row[b];
    if (std::isnan(x) != std::isnan(y))
      return std::isnan(y);
    if (!std::isnan(x) && x != y)
      return x > y;
    return a < b;
  };
  std::vector<int64_t> best;
  for (int64_t i = 0; i < n; ++i) {
    auto at = std::upper_bound(best.begin(), best.end(), i, better);
    if (at - best.begin() < k) {
      best.insert(at, i);
      if (int64_t(best.size()) > k)
        best.pop_back();
    }
  }
  return best;
}

namespace {

// One line on stderr, whatever input the message quotes (MessageText.h).
int report(const std::string &message, int code) {
  std::fprintf(stderr, "error: %s\n", printableMessage(message).c_str());
  return code;
}

// A command line that cannot run: one line, pointing at --help rather than printing it.
int usageError(const std::string &message) {
  std::fprintf(stderr, "error: %s (see --help)\n", printableMessage(message).c_str());
  return 2;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

Expected<AlignedBuffer> floats(int64_t a, int64_t b, int64_t c = 1) {
  int64_t count;
  uint64_t bytes;
  if (!checkedMul(a, b, count) || !checkedMul(count, c, count) ||
      !checkedMul(uint64_t(count), uint64_t(sizeof(float)), bytes))
    return makeError("output of " + std::to_string(a) + " x " + std::to_string(b) + " x " +
                     std::to_string(c) + " floats is too large");
  return AlignedBuffer::allocate(bytes);
}

void printTop5(const float *last, int64_t n) {
  std::vector<int64_t> top = topIndices(last, n, 5);
  std::string ids = "top5", values = "top5_values";
  for (int64_t i : top) {
    ids += " " + std::to_string(i);
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.6g", double(last[i]));
    values += buf;
  }
  std::printf("%s\n%s\n", ids.c_str(), values.c_str());
}

// --trace-out, when given; says so when the trace kept only the first kMaxTraceEvents calls.
Status writeTraceFile(const std::string &path, const Manifest &m) {
  if (path.empty())
    return Status::success();
  if (Status s = writeTrace(path, m); !s)
    return s;
  if (int64_t dropped = profileDroppedTraceEvents())
    std::fprintf(stderr, "note: %s holds the first %zu kernel calls; %lld later ones were not "
                 "recorded (the trace's limit)\n", path.c_str(), kMaxTraceEvents,
                 (long long)dropped);
  return Status::success();
}

// The roofline's ceilings: --peak, else measured once per machine (the GPU's for a CUDA
// build) and kept.
MachineCeilings ceilingsFor(const Options &o, const Manifest &m) {
  if (o.peakGflops > 0)
    return {o.peakGflops, o.peakGBs, "--peak"};
  const char *file = std::getenv("XF_MACHINE_FILE");
  std::string cache = file && *file ? file : defaultMachineCacheFile();
  int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::string note;
  MachineCeilings c = m.cuda ? deviceCeilings(cache, note)
                             : machineCeilings(threads, cache, note, profileNeedsProductPeaks(m));
  if (!note.empty())
    std::fprintf(stderr, "note: %s\n", note.c_str());
  return c;
}

// Stops profiling and reports it: --profile's table, --profile-out, --trace-out.
Status reportProfile(const Options &o, const Manifest &m, int64_t l, int64_t lz, int runs) {
  profileStop();
  if (o.profile || !o.profileOut.empty()) {
    MachineCeilings ceilings = ceilingsFor(o, m);
    if (o.profile)
      std::fprintf(stderr, "%s", profileTable(m, l, lz, runs, &ceilings).c_str());
    if (!o.profileOut.empty())
      if (Status s = writeProfileJson(o.profileOut, m, l, lz, runs, &ceilings); !s)
        return Status::failure("--profile-out: " + s.message());
  }
  return writeTraceFile(o.traceOut, m);
}

// --decode-steps: each sequence one token at a time through the KV cache, position t's row
// from the cached call that adds token t (as a decode step computes it).
template <typename OnSequence>
Status decodeEachPosition(Session &session, const std::vector<std::vector<int32_t>> &sequences,
                          float *rows, int64_t dOut, OnSequence &onSequence) {
  for (size_t i = 0; i < sequences.size(); ++i) {
    const std::vector<int32_t> &ids = sequences[i];
    for (size_t t = 0; t < ids.size(); ++t)
      if (Status s = session.forwardCached(&ids[t], 1, int64_t(t), rows + int64_t(t) * dOut); !s)
        return s;
    if (Status s = onSequence(i, rows); !s)
      return s;
  }
  return Status::success();
}

// Forward passes over the batch (packed chunks of --batch sequences when the model has
// xf_forward_packed, else one xf_forward per sequence); writes what the options ask for.
int runForward(const Options &o, const Manifest &m, Session &session, const Batch &batch) {
  int64_t n = int64_t(batch.size()), lMax = 0, lzMax = 0, total = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    lMax = std::max(lMax, int64_t(batch.targets[i].size()));
    total += int64_t(batch.targets[i].size());
    if (!batch.sources.empty())
      lzMax = std::max(lzMax, int64_t(batch.sources[i].size()));
  }
  const std::string &outPath = m.outputIsLogits ? o.logitsOut : o.hiddenOut;
  bool pooling = !o.embeddingsOut.empty() || !o.batchFile.empty();
  // Sequence i's rows live at out + i * lMax * d_out; rows past its length stay
  // zero. Only kept when an output needs every row.
  bool keepRows = !outPath.empty() || o.print;
  Expected<AlignedBuffer> out = floats(keepRows ? n : 0, lMax, m.dOut);
  if (!out)
    return report("output: " + out.message(), 1);
  Expected<AlignedBuffer> e = floats(pooling ? n : 0, m.dOut);
  if (!e)
    return report("embeddings: " + e.message(), 1);
  auto onSequence = [&](size_t i, const float *rows) {
    int64_t l = int64_t(batch.targets[i].size());
    if (keepRows)
      std::memcpy(out->floats() + int64_t(i) * lMax * m.dOut, rows,
                  size_t(l * m.dOut) * sizeof(float));
    if (pooling)
      poolHidden(rows, l, m.dOut, o.pool, o.normalize, e->floats() + int64_t(i) * m.dOut);
    return Status::success();
  };

  int runs = o.repeat > 0 ? o.repeat : 1;
  bool profiling = o.profiling();
  // With --repeat N > 1 the first forward warms up and is not profiled: it pays the first
  // touch of the weights' pages and of the arena, which made the first kernels of a profile
  // look up to twice as slow as they run (GPT-2 small's QKV GEMM: 185-309 against 450
  // GFLOP/s over 3-20 runs on Zen 5).
  const int warmupRuns = profiling && runs > 1 ? 1 : 0;
  std::vector<double> ms;
  AlignedBuffer packedRows; // forwardSequences' rows, kept across runs (allocated once)
  if (o.decodeSteps) {
    session.reserveCache(lMax);
    Expected<AlignedBuffer> rows = floats(1, lMax, m.dOut);
    if (!rows)
      return report("output: " + rows.message(), 1);
    packedRows = rows.take();
  }
  for (int r = 0; r < runs; ++r) {
    if (profiling && r == warmupRuns)
      profileStart(m.kernels.size(), o.traceOut.empty() ? 0 : kMaxTraceEvents);
    auto start = std::chrono::steady_clock::now();
    Status s = o.decodeSteps ? decodeEachPosition(session, batch.targets, packedRows.floats(),
                                                  m.dOut, onSequence)
                             : forwardSequences(session, batch.targets,
                                                o.batchSize > 0 ? o.batchSize : kDefaultBatchChunk,
                                                onSequence, 0, batch.sources, &packedRows);
    if (!s)
      return report(s.message(), 1);
    auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  if (profiling) {
    // With several sequences the summary line shows the mean length (the
    // FLOP and byte counts use each call's own rows).
    int64_t l = n == 1 ? lMax : (total + n - 1) / n;
    if (warmupRuns && o.profile)
      std::fprintf(stderr, "profile of runs 2-%d (the first warmed the caches and pages up)\n",
                   runs);
    if (Status s = reportProfile(o, m, l, lzMax, (runs - warmupRuns) * int(n)); !s)
      return report(s.message(), 1);
  }
  if (o.repeat > 0) {
    std::sort(ms.begin(), ms.end());
    std::string threads = o.threads > 0 ? std::to_string(o.threads) : "default";
    if (n == 1)
      std::fprintf(stderr, "%s: l=%lld l_z=%lld threads=%s runs=%d min %.3f ms median %.3f ms\n",
                   m.model.c_str(), (long long)lMax, (long long)lzMax, threads.c_str(), runs,
                   ms.front(), median(ms));
    else
      std::fprintf(stderr,
                   "%s: %lld sequences, %lld tokens, l_max=%lld threads=%s "
                   "runs=%d min %.3f ms "
                   "median %.3f ms\n",
                   m.model.c_str(), (long long)n, (long long)total, (long long)lMax,
                   threads.c_str(), runs, ms.front(), median(ms));
  }

  if (!outPath.empty()) {
    Status s = n == 1 ? writeNpy(outPath, out->floats(), lMax, m.dOut)
                      : writeNpy(outPath, out->floats(), {n, lMax, m.dOut});
    if (!s)
      return report(s.message(), 1);
  }
  if (!o.embeddingsOut.empty())
    if (Status s = writeNpy(o.embeddingsOut, e->floats(), n, m.dOut); !s)
      return report(s.message(), 1);
  if (!o.batchFile.empty())
    for (int64_t i = 0; i < n; ++i)
      writeEmbeddingLine(stdout, size_t(i), batch.lines[size_t(i)],
                         int64_t(batch.targets[size_t(i)].size()), e->floats() + i * m.dOut,
                         m.dOut);
  if (o.print)
    for (int64_t i = 0; i < n; ++i)
      printTop5(out->floats() + (i * lMax + int64_t(batch.targets[i].size()) - 1) * m.dOut, m.dOut);
  return 0;
}

// With `chat`, each reply ends at the template's end-of-turn token (unless --eos says
// otherwise), which is not printed.
int runGeneration(const Options &o, const Manifest &m, Session &session, const Batch &batch,
                  const Tokenizer *tok, const ChatSetup *chat) {
  GenerateOptions g;
  g.maxNewTokens = o.maxNewTokens > 0 ? o.maxNewTokens
                   : chat             ? kDefaultChatTokens
                                      : kDefaultNewTokens;
  g.sampling = o.sampling;
  g.useCache = !o.noCache;
  if (o.eos)
    g.eos = int32_t(*o.eos);
  else if (!o.noEos && chat)
    g.eos = chat->endOfTurn;
  else if (!o.noEos && tok)
    if (std::optional<int32_t> end = tok->endOfText(); end && *end < m.vocab)
      g.eos = *end;
  bool profiling = o.profiling();
  if (profiling)
    profileStart(m.kernels.size(), o.traceOut.empty() ? 0 : kMaxTraceEvents);
  static const std::vector<int32_t> noSource;
  int64_t steps = 0, tokens = 0;
  // Sequences decoding together (BatchRun.h) when the model can; else one at a time.
  bool together = canDecodeTogether(o, session, batch, chat != nullptr);
  if (together)
    if (int code = runBatchedGeneration(o, m, session, batch, tok, g); code != 0)
      return code;
  for (size_t i = 0; i < (together ? 0 : batch.size()); ++i) {
    // Every sequence gets its own generator, so a batch samples what single
    // runs sample.
    Pcg32 rng(o.samplingSeed, fnv1a64("xfrt.sampling"));
    const Tokenizer *textTok = o.textTokenizer(tok); // none for --output ids
    TextStream text(textTok);
    bool first = true;
    bool jsonLines = o.jsonGeneration(); // one line per sequence when it is done
    auto onToken = [&](int32_t id) {
      if (jsonLines || (chat && g.eos && id == *g.eos && id == chat->endOfTurn))
        return;
      if (textTok)
        text.add(id);
      else
        std::printf(first ? "%d" : ",%d", id);
      first = false;
      std::fflush(stdout);
    };
    const std::vector<int32_t> &source = batch.sources.empty() ? noSource : batch.sources[i];
    Expected<GenerateResult> r = generate(session, batch.targets[i], source, g, rng, onToken);
    if (!r) {
      std::printf("\n");
      return report(r.message(), 1);
    }
    if (jsonLines) {
      std::optional<std::string> decoded;
      if (tok)
        if (Expected<std::string> t = tok->decode(r->newTokens); t)
          decoded = t.take();
      writeGenerationLine(stdout, i, batch.lines.empty() ? -1 : batch.lines[i], r->promptTokens,
                          r->newTokens, decoded,
                          r->hitPositionLimit ? "position limit" : r->stopReason);
    } else {
      if (textTok)
        text.finish();
      std::printf("\n");
      std::fflush(stdout);
      if (textTok)
        warnMissingIds(text);
    }
    int64_t decodeSteps = int64_t(r->newTokens.size()) - 1;
    steps += int64_t(r->newTokens.size()) + r->promptTokens;
    tokens += int64_t(r->newTokens.size());
    if (r->hitPositionLimit)
      std::fprintf(stderr, "stopped: %s\n", r->stopReason.c_str());
    std::fprintf(stderr,
                 "%s: %zu new tokens (stop: %s, %s); prefill %lld tokens in %.2f ms "
                 "(%.1f tokens/s)",
                 m.model.c_str(), r->newTokens.size(),
                 r->hitPositionLimit ? "position limit" : r->stopReason.c_str(),
                 r->cached ? "KV cache" : "re-running the prefix", (long long)r->promptTokens,
                 r->prefillMs,
                 r->prefillMs > 0 ? 1e3 * double(r->promptTokens) / r->prefillMs : 0.0);
    if (decodeSteps > 0)
      std::fprintf(stderr, "; decode %lld tokens in %.2f ms (%.3f ms/token, %.1f tokens/s)",
                   (long long)decodeSteps, r->decodeMs, r->decodeMs / double(decodeSteps),
                   r->decodeMs > 0 ? 1e3 * double(decodeSteps) / r->decodeMs : 0.0);
    std::fprintf(stderr, "\n");
  }
  if (profiling) {
    if (Status s = reportProfile(o, m, 1, 0, int(std::max<int64_t>(steps, 1))); !s)
      return report(s.message(), 1);
  }
  if (batch.size() > 1 && !together)
    std::fprintf(stderr, "%s: %zu sequences, %lld new tokens\n", m.model.c_str(), batch.size(),
                 (long long)tokens);
  return 0;
}

} // namespace

int runMain(int argc, const char *const *argv, const ModelAbi &abi, ServeMain serve) {
  std::string program = argc > 0 && argv[0] ? argv[0] : "xf-model";
  Expected<Manifest> manifest = parseManifest(abi.manifest ? abi.manifest : "");
  if (!manifest)
    return report(manifest.message(), 1);
  const Manifest &m = *manifest;

  Expected<Options> parsed = parseCommandLine(argc, argv);
  if (!parsed)
    return usageError(parsed.message());
  const Options &o = *parsed;
  if (o.help) {
    std::fputs(usageText(program, &m).c_str(), stdout);
    return 0;
  }
  if (Status s = checkOptions(o, m); !s)
    return usageError(s.message());
  // Outputs are checked before any work: each must be writable, none may be an input, and no
  // two may share a file (the shards of an index are checked again once known).
  std::vector<NamedPath> outputs, inputs = {{"--weights", o.weights},
                                            {"--tokenizer", o.tokenizer},
                                            {"--vocab", o.vocab},
                                            {"--merges", o.merges},
                                            {"--batch-file", o.batchFile},
                                            runningExecutable()};
  for (const NamedPath &p : {NamedPath{"--save-weights", o.saveWeights},
                             NamedPath{"--logits-out", o.logitsOut},
                             NamedPath{"--hidden-out", o.hiddenOut},
                             NamedPath{"--embeddings-out", o.embeddingsOut},
                             NamedPath{"--trace-out", o.traceOut},
                             NamedPath{"--profile-out", o.profileOut}})
    if (!p.path.empty()) {
      if (Status s = checkOutputTarget(p.path); !s)
        return usageError(p.option + ": " + s.message());
      outputs.push_back(p);
    }
  if (Status s = checkDistinctPaths(outputs, inputs); !s)
    return usageError(s.message());
  Expected<LoadedTokenizer> tokenizer = loadTokenizer(o);
  if (!tokenizer)
    return report(tokenizer.message(), 1);
  const Tokenizer *tok = tokenizer->tokenizer.get();
  std::optional<ChatSetup> chat;
  if (o.chat || o.interactive) {
    Expected<ChatSetup> setup = chatSetup(o, *tokenizer, m);
    if (!setup)
      return report(setup.message(), 1);
    chat = setup.take();
  }
  Expected<Batch> batch =
      buildBatch(o, m, tok, chat ? &chat->chatTemplate : nullptr, tokenizer->bos);
  if (!batch)
    return usageError(batch.message());

  if (abi.setErrorHandler)
    abi.setErrorHandler(halideErrorHandler);
  if (o.threads > 0) {
    if (abi.setNumThreads)
      abi.setNumThreads(o.threads);
    else
      std::fprintf(stderr, "warning: --threads ignored: no halide_set_num_threads linked in\n");
  }

  // A CUDA build without a usable GPU says so before seconds of loading (or drawing) weights.
  if (m.cuda && (batch->size() > 0 || o.interactive))
    if (Status ok = checkCudaDevice(); !ok)
      return report(ok.message(), 1);
  Expected<WeightSet> weights =
      o.randomWeights ? randomWeights(o.seed, m) : loadWeights(o.weights, m);
  if (!weights)
    return report(weights.message(), 1);
  for (const auto &file : weights->files)
    inputs.push_back({"--weights (shard)", file->path()});
  if (Status s = checkDistinctPaths(outputs, inputs); !s)
    return report(s.message(), 1);
  if (!o.randomWeights)
    if (std::string bad = findNonFiniteWeights(m, *weights); !bad.empty())
      std::fprintf(stderr, "warning: %s: %s\n", o.weights.c_str(), bad.c_str());
  if (!o.saveWeights.empty())
    if (Status s = saveWeights(o.saveWeights, m, *weights); !s)
      return report(s.message(), 1);
  if (m.cuda) { // before --serve too: its steps go through this copy's graphs (DeviceLinks.h)
    if (o.profiling() && !o.cudaGraphs)
      std::fprintf(stderr, "note: CUDA graphs off under --profile, so that every kernel call "
                           "is timed (--cuda-graphs on replays steps as graphs, untimed)\n");
    setCudaGraphs(o.cudaGraphsOn(), o.verbose);
  }
  if (o.serve) {
    if (!serve)
      return report("--serve: this executable was linked without the server", 1);
    return serve(o, m, abi, *weights, *tokenizer);
  }
  int code = 0;
  int64_t readyBytes = -1;
  if (batch->size() > 0 || o.interactive) {
    Expected<Session> session = Session::create(m, abi, *weights);
    if (!session)
      return report(session.message(), 1);
    session->releaseUnreadParameters(*weights);
    readyBytes = residentBytes();
    code = o.interactive ? runInteractive(o, m, *session, *tok, *chat, stdin)
           : o.generating()
               ? runGeneration(o, m, *session, *batch, tok, chat ? &*chat : nullptr)
               : runForward(o, m, *session, *batch);
  }
  if (code == 0 && (o.printMemory || o.generating())) {
    int64_t fileBytes = 0, paramBytes = 0;
    for (const auto &f : weights->files)
      fileBytes += int64_t(f->size());
    for (const ParameterSpec &p : m.parameters)
      paramBytes += p.numel * int64_t(sizeof(float));
    std::string report = memoryReport(fileBytes, paramBytes, readyBytes);
    if (m.cuda) { // weights, derived weights, scratch, KV cache, ids and outputs on the GPU
      char gpu[64];
      std::snprintf(gpu, sizeof gpu, ", GPU memory peak %.1f MiB",
                    double(deviceBytesPeak()) / (1024.0 * 1024.0));
      report += gpu;
    }
    std::fprintf(stderr, "%s\n", report.c_str());
  }
  return code;
}

} // namespace xfrt
