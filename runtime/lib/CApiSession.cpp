//===- CApiSession.cpp - xf/xf.h: sessions of a model library -------------===//
//
// The public C API's sessions over xfrt::Session (docs/c-api.md): linked into a model
// library (`xfc --emit=lib`) from libxfrt_capi, never into an executable. Every argument is
// checked here as the executables' command line checks it (Cli.h, Inputs.cpp) before the
// generated code sees it; failures become a status and a message, never an exit.
//
//===----------------------------------------------------------------------===//
#include "xf/xf.h"

#include "CApiErrors.h"

#include "OptionalEntryPoints.h"
#include "xfrt/Abi.h"
#include "xfrt/CudaGraphs.h"
#include "xfrt/Driver.h"
#include "xfrt/Embeddings.h"
#include "xfrt/Generate.h"
#include "xfrt/HalideErrors.h"
#include "xfrt/Manifest.h"
#include "xfrt/Session.h"
#include "xfrt/ThreadPool.h"
#include "xfrt/Weights.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>


using xfrt::capi::caughtException;
using xfrt::capi::caughtExceptionOnThread;
using xfrt::capi::fail;

struct xf_session {
  xfrt::WeightSet weights; // outlives `session`, which points into it
  xfrt::Session session;
  std::string error;
  // Positions 0 .. computed - 1 of the KV cache hold the current sequence's keys and values
  // (written by decode and by a cached generate): a decode may start at most there.
  int64_t computed = 0;
};

namespace {

// The library's model: its manifest parsed once, its entry points, the kernel thread pool
// and Halide's error handler installed (Halide's default one aborts the process).
struct Library {
  xfrt::Expected<xfrt::Manifest> manifest = xfrt::makeError("not parsed");
  xfrt::ModelAbi abi{};
};

const Library &library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    lib.manifest = xfrt::parseManifest(xf_model_manifest);
    lib.abi = {xf_model_manifest,       xf_prepare,
               xf_scratch_bytes,        xf_forward,
               &halide_set_num_threads, &xf_cache_bytes,
               &xf_forward_cached,      &halide_set_error_handler,
               &xf_forward_packed,      &xf_forward_cached_packed};
    if (lib.abi.setErrorHandler)
      lib.abi.setErrorHandler(xfrt::halideErrorHandler);
    xfrt::installKernelThreadPool(lib.abi.setNumThreads);
  });
  return lib;
}

// A CUDA build's calls reach the device one at a time: sessions share the runtime's stream and
// its CUDA graphs (CudaGraphs.h), whose capture would take another thread's launches. The
// lock is empty for a CPU build, whose sessions run side by side (docs/c-api.md, "Threads").
std::unique_lock<std::mutex> deviceCallLock() {
  static std::mutex device;
  const Library &lib = library();
  return lib.manifest && lib.manifest->cuda ? std::unique_lock<std::mutex>(device)
                                            : std::unique_lock<std::mutex>();
}

// xf_set_cuda_graphs' choice, applied to the runtime before a CUDA build's first session.
std::atomic<bool> cudaGraphsWanted{true};

xf_status sessionFailure(xf_session *s, xf_status code, std::string message) {
  s->error = std::move(message);
  return code;
}

xf_status create(xfrt::Expected<xfrt::WeightSet> weights, xf_session **out) {
  if (!out)
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_session_create: null output pointer");
  *out = nullptr;
  const Library &lib = library();
  if (!lib.manifest)
    return fail(XF_ERROR_LOAD, "the library's manifest: " + lib.manifest.message());
  if (!weights)
    return fail(XF_ERROR_LOAD, weights.message());
  auto s = std::make_unique<xf_session>();
  s->weights = weights.take();
  std::unique_lock<std::mutex> device = deviceCallLock();
  if (lib.manifest->cuda) // decode steps replayed as CUDA graphs, as the executables do
    xfrt::setCudaGraphs(cudaGraphsWanted, /*verbose=*/false);
  xfrt::Expected<xfrt::Session> session = xfrt::Session::create(*lib.manifest, lib.abi, s->weights);
  if (!session)
    return fail(XF_ERROR_RUNTIME, session.message());
  s->session = session.take();
  s->session.releaseUnreadParameters(s->weights);
  *out = s.release();
  return XF_OK;
}

// Ids as the command line checks them (Inputs.cpp): 1 <= n <= max_positions, each < vocab.
xf_status checkIds(xf_session *s, const char *what, const int32_t *ids, int64_t n,
                   bool positionLimit = true) {
  const xfrt::Manifest &m = s->session.manifest();
  if (!ids || n < 1)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                          std::string(what) + ": expected at least one id");
  if (positionLimit && m.maxPositions > 0 && n > m.maxPositions)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                          std::string(what) + ": " + std::to_string(n) + " ids exceed the " +
                              std::to_string(m.maxPositions) + " positions of model '" + m.model +
                              "'");
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= m.vocab)
      return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                            std::string(what) + ": id " + std::to_string(ids[i]) + " at " +
                                std::to_string(i) + " is outside the vocabulary [0, " +
                                std::to_string(m.vocab) + ")");
  return XF_OK;
}

// The source of an encoder-decoder, and none for other models.
xf_status checkSource(xf_session *s, const int32_t *source, int64_t sourceN) {
  const xfrt::Manifest &m = s->session.manifest();
  if (!m.encoderDecoder)
    return source || sourceN ? sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                                              "model '" + m.model + "' takes no source ids")
                             : XF_OK;
  return checkIds(s, "source", source, sourceN);
}

// Decoding n ids at `start`: within the cache (the model's cache_positions for a sequence
// begun by a decode at 0; a cached generate sizes it for its prompt and new tokens) and
// right after positions the cache holds (an earlier position rewrites from there).
xf_status checkDecodePositions(xf_session *s, int64_t start, int64_t n) {
  std::string range = "positions " + std::to_string(start) + ".." + std::to_string(start + n - 1);
  if (start > s->computed)
    return sessionFailure(
        s, XF_ERROR_INVALID_ARGUMENT,
        range + (s->computed == 0
                     ? ": the KV cache holds no sequence; decode from 0 begins one"
                     : ": the KV cache holds positions 0.." + std::to_string(s->computed - 1) +
                           " of this sequence; decode from " + std::to_string(s->computed) +
                           " at most (0 begins one)"));
  int64_t capacity = start == 0 ? s->session.cachePositions() : s->session.cacheCapacity();
  if (start < 0 || start > capacity - n)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                          range + " exceed the KV cache's " + std::to_string(capacity) +
                              (start == 0 ? ""
                                          : " (sized by the sequence's first call: a decode "
                                            "from 0 takes the model's cache_positions)"));
  return XF_OK;
}

xf_status checkCapacity(xf_session *s, const void *out, int64_t capacity, int64_t needed,
                        const char *unit) {
  if (!out)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT, "null output buffer");
  if (capacity < needed)
    return sessionFailure(s, XF_ERROR_BUFFER_TOO_SMALL,
                          "the output holds " + std::to_string(capacity) + " " + unit +
                              "; the call writes " + std::to_string(needed));
  return XF_OK;
}

xf_status runtimeFailure(xf_session *s, const xfrt::Status &status) {
  return sessionFailure(s, XF_ERROR_RUNTIME, status.message());
}

} // namespace

#define XF_CHECK(call)                                                                             \
  do {                                                                                             \
    if (xf_status rc_ = (call); rc_ != XF_OK)                                                      \
      return rc_;                                                                                  \
  } while (0)

extern "C" {

int32_t xf_api_version(void) { return XF_API_VERSION; }

const char *xf_manifest_json(void) { return xf_model_manifest; }

xf_status xf_set_threads(int32_t threads) try {
  if (threads < 0 || threads > 256)
    return fail(XF_ERROR_INVALID_ARGUMENT,
                "xf_set_threads: " + std::to_string(threads) + " is outside 0..256");
  const Library &lib = library();
  if (threads > 0 && lib.abi.setNumThreads)
    lib.abi.setNumThreads(threads);
  return XF_OK;
} catch (...) {
  return caughtExceptionOnThread();
}

xf_status xf_set_cuda_graphs(int32_t on) try {
  if (on != 0 && on != 1)
    return fail(XF_ERROR_INVALID_ARGUMENT,
                "xf_set_cuda_graphs: " + std::to_string(on) + " is not 0 (off) or 1 (on)");
  cudaGraphsWanted = on == 1;
  const Library &lib = library();
  if (lib.manifest && lib.manifest->cuda) {
    std::unique_lock<std::mutex> device = deviceCallLock();
    xfrt::setCudaGraphs(on == 1, /*verbose=*/false);
  }
  return XF_OK;
} catch (...) {
  return caughtExceptionOnThread();
}

xf_status xf_session_create(const char *weightsPath, xf_session **out) try {
  if (!weightsPath || !*weightsPath)
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_session_create: no weights path");
  const Library &lib = library();
  if (!lib.manifest)
    return create(lib.manifest.status(), out);
  return create(xfrt::loadWeights(weightsPath, *lib.manifest), out);
} catch (...) {
  return caughtExceptionOnThread();
}

xf_status xf_session_create_random(uint64_t seed, xf_session **out) try {
  const Library &lib = library();
  if (!lib.manifest)
    return create(lib.manifest.status(), out);
  return create(xfrt::randomWeights(seed, *lib.manifest), out);
} catch (...) {
  return caughtExceptionOnThread();
}

void xf_session_destroy(xf_session *session) {
  std::unique_lock<std::mutex> device = deviceCallLock(); // frees device memory
  delete session;
}

const char *xf_session_error(const xf_session *session) {
  return session ? session->error.c_str() : "null session";
}

xf_status xf_session_forward(xf_session *s, const int32_t *ids, int64_t n, const int32_t *source,
                             int64_t sourceN, float *out, int64_t outCapacity) try {
  if (!s)
    return fail(XF_ERROR_INVALID_ARGUMENT, "null session");
  s->error.clear();
  const xfrt::Manifest &m = s->session.manifest();
  XF_CHECK(checkIds(s, "ids", ids, n));
  XF_CHECK(checkSource(s, source, sourceN));
  XF_CHECK(checkCapacity(s, out, outCapacity, n * m.dOut, "floats"));
  std::vector<int32_t> tokens(ids, ids + n), sourceIds(source, source + (source ? sourceN : 0));
  std::unique_lock<std::mutex> device = deviceCallLock();
  if (xfrt::Status st = s->session.forward(tokens, sourceIds, out); !st)
    return runtimeFailure(s, st);
  return XF_OK;
} catch (...) {
  return s ? caughtException(s->error) : caughtExceptionOnThread();
}

xf_status xf_session_decode(xf_session *s, const int32_t *ids, int64_t n, int64_t start, float *out,
                            int64_t outCapacity) try {
  if (!s)
    return fail(XF_ERROR_INVALID_ARGUMENT, "null session");
  s->error.clear();
  const xfrt::Manifest &m = s->session.manifest();
  if (!s->session.canCache())
    return sessionFailure(s, XF_ERROR_UNSUPPORTED,
                          "model '" + m.model + "' has no cached entry point (decode)");
  XF_CHECK(checkIds(s, "ids", ids, n, /*positionLimit=*/false));
  XF_CHECK(checkDecodePositions(s, start, n));
  XF_CHECK(checkCapacity(s, out, outCapacity, m.dOut, "floats"));
  std::unique_lock<std::mutex> device = deviceCallLock();
  // A sequence's first call takes the largest cache: a generate() before may have sized it
  // for its own prompt and tokens only.
  if (start == 0)
    s->session.reserveCache(s->session.cachePositions());
  s->computed = std::min(s->computed, start); // positions from start on are rewritten
  if (xfrt::Status st = s->session.forwardCached(ids, n, start, out); !st)
    return runtimeFailure(s, st);
  s->computed = start + n;
  return XF_OK;
} catch (...) {
  return s ? caughtException(s->error) : caughtExceptionOnThread();
}

xf_status xf_session_embed(xf_session *s, const int32_t *ids, int64_t n, int32_t pooling,
                           int32_t normalize, float *out, int64_t outCapacity) try {
  if (!s)
    return fail(XF_ERROR_INVALID_ARGUMENT, "null session");
  s->error.clear();
  const xfrt::Manifest &m = s->session.manifest();
  if (m.outputIsLogits || m.encoderDecoder)
    return sessionFailure(s, XF_ERROR_UNSUPPORTED,
                          "model '" + m.model +
                              "' outputs logits; embeddings pool an encoder's hidden states");
  if (pooling != XF_POOL_MEAN && pooling != XF_POOL_CLS)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT,
                          "pooling " + std::to_string(pooling) +
                              ": expected XF_POOL_MEAN (0) or XF_POOL_CLS (1)");
  XF_CHECK(checkIds(s, "ids", ids, n));
  XF_CHECK(checkCapacity(s, out, outCapacity, m.dOut, "floats"));
  std::vector<float> hidden(size_t(n * m.dOut));
  std::unique_lock<std::mutex> device = deviceCallLock();
  if (xfrt::Status st = s->session.forward(std::vector<int32_t>(ids, ids + n), {}, hidden.data());
      !st)
    return runtimeFailure(s, st);
  xfrt::poolHidden(hidden.data(), n, m.dOut,
                   pooling == XF_POOL_CLS ? xfrt::Pooling::Cls : xfrt::Pooling::Mean,
                   normalize != 0, out);
  return XF_OK;
} catch (...) {
  return s ? caughtException(s->error) : caughtExceptionOnThread();
}

xf_generate_options xf_generate_defaults(void) {
  xf_generate_options o;
  o.max_new_tokens = 16;
  o.temperature = 0;
  o.top_k = 0;
  o.top_p = 1;
  o.seed = 0;
  o.eos = -1;
  o.use_cache = 1;
  return o;
}

} // extern "C"

namespace {
// xf_generate_options as generate() takes them, or a message naming the bad field.
xfrt::Expected<xfrt::GenerateOptions> generateOptions(const xf_generate_options &o,
                                                      const xfrt::Manifest &m) {
  if (o.max_new_tokens < 1)
    return xfrt::makeError("max_new_tokens " + std::to_string(o.max_new_tokens) + " is below 1");
  if (!(o.temperature >= 0))
    return xfrt::makeError("temperature must be >= 0");
  if (o.top_k < 0)
    return xfrt::makeError("top_k " + std::to_string(o.top_k) + " is negative");
  if (!(o.top_p > 0 && o.top_p <= 1))
    return xfrt::makeError("top_p must be in (0, 1]");
  if (o.eos < -1 || o.eos >= m.vocab)
    return xfrt::makeError("eos " + std::to_string(o.eos) + " is outside the vocabulary [0, " +
                           std::to_string(m.vocab) + ") (-1: none)");
  xfrt::GenerateOptions g;
  g.maxNewTokens = o.max_new_tokens;
  g.sampling.temperature = o.temperature;
  g.sampling.topK = o.top_k;
  g.sampling.topP = o.top_p;
  if (o.eos >= 0)
    g.eos = o.eos;
  g.useCache = o.use_cache != 0;
  return g;
}
} // namespace

extern "C" xf_status xf_session_generate(xf_session *s, const int32_t *prompt, int64_t n,
                                         const int32_t *source, int64_t sourceN,
                                         const xf_generate_options *options, int32_t *outIds,
                                         int64_t outCapacity, int64_t *outCount) try {
  if (!s)
    return fail(XF_ERROR_INVALID_ARGUMENT, "null session");
  s->error.clear();
  const xfrt::Manifest &m = s->session.manifest();
  if (!m.outputIsLogits)
    return sessionFailure(s, XF_ERROR_UNSUPPORTED,
                          "model '" + m.model + "' outputs hidden states; generation needs logits");
  xf_generate_options defaults = xf_generate_defaults();
  xfrt::Expected<xfrt::GenerateOptions> g = generateOptions(options ? *options : defaults, m);
  if (!g)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT, g.message());
  XF_CHECK(checkIds(s, "prompt", prompt, n));
  XF_CHECK(checkSource(s, source, sourceN));
  XF_CHECK(checkCapacity(s, outIds, outCapacity, g->maxNewTokens, "ids"));
  if (!outCount)
    return sessionFailure(s, XF_ERROR_INVALID_ARGUMENT, "null count pointer");
  xfrt::Pcg32 rng((options ? *options : defaults).seed, xfrt::fnv1a64("xfrt.sampling"));
  std::vector<int32_t> ids(prompt, prompt + n), sourceIds(source, source + (source ? sourceN : 0));
  if (g->useCache && s->session.canCache() && sourceIds.empty())
    s->computed = 0; // generate() starts a sequence on the cache
  std::unique_lock<std::mutex> device = deviceCallLock();
  xfrt::Expected<xfrt::GenerateResult> r =
      xfrt::generate(s->session, ids, sourceIds, *g, rng, [](int32_t) {});
  if (!r)
    return runtimeFailure(s, r.status());
  // The cached path ran the prompt and every new id but the last through the cache.
  if (r->cached)
    s->computed = n + int64_t(r->newTokens.size()) - 1;
  std::copy(r->newTokens.begin(), r->newTokens.end(), outIds);
  *outCount = int64_t(r->newTokens.size());
  return XF_OK;
} catch (...) {
  return s ? caughtException(s->error) : caughtExceptionOnThread();
}
