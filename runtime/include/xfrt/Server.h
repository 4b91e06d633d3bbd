//===- Server.h - --serve: the model behind an HTTP API ------------*- C++ -*-===//
//
// runServer listens on --host:--port and answers (docs/serving.md):
//   POST /v1/completions  decoders: a prompt (text or ids) continued, whole or streamed as
//                         server-sent events; requests decode together (ServeScheduler.h)
//   POST /v1/embeddings   encoders: pooled vectors of one or more inputs, batched with the
//                         other requests queued at the time
//   GET  /v1/models, /metrics (Prometheus), /health, /ready
// Bad requests get a JSON error object and a 4xx status (400 bad JSON or parameters, 401 no or
// a wrong API key, 403 a Host or Origin not allowed, 404 unknown path or an endpoint the model
// does not serve, 405 wrong method, 413 a body over kMaxServeBodyBytes, 415 a body not declared
// JSON, 503 + Retry-After when full or shutting down). SIGINT/SIGTERM stop accepting requests,
// finish those that run (a second signal does not wait), and return 0.
//
// The HTTP layer is our own (HttpServer.h, HttpParser.h; docs/dependencies.md says why): every
// limit enforced while reading, a deadline per request, bounded connections, workers and queue.
//
// The server lives in its own shared object, libxfrt_serve.so (Server.cpp and the HTTP layer
// with a private copy of libxfrt), which an executable loads only for --serve
// (runServerLibrary, ServerLoader.cpp), so that code facing the network is mapped only into
// processes that serve.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SERVER_H
#define XFRT_SERVER_H

#include "xfrt/Cli.h"
#include "xfrt/DeviceLinks.h"
#include "xfrt/Inputs.h"
#include "xfrt/Manifest.h"
#include "xfrt/Session.h"
#include "xfrt/Weights.h"

#include <string>

namespace xfrt {

// The process exit code: 0 after a signal, 1 when the port cannot be bound or the model cannot
// be served (an encoder-decoder, a decoder without xf_forward_cached_packed).
// It creates the Session itself, after blocking SIGINT/SIGTERM, so that no thread (the
// kernels' thread pool included) can take a signal meant for the graceful shutdown.
int runServer(const Options &options, const Manifest &manifest, const ModelAbi &abi,
              WeightSet &weights, const LoadedTokenizer &tokenizer);

// runServer from libxfrt_serve.so, loaded now: $XF_SERVE_LIBRARY if set, else the one in the
// xf build that linked it (never one beside the executable), if it is owned by the user or root
// and writable by no one else. A library that cannot be loaded, or that was built from other
// runtime sources (its identity differs), is one error line and exit code 1.
int runServerLibrary(const Options &options, const Manifest &manifest, const ModelAbi &abi,
                     WeightSet &weights, const LoadedTokenizer &tokenizer);

// The library's entry point (extern "C", so dlsym finds it by this name) and what both sides
// must agree on: the layouts of the objects passed (the library has its own copy of the
// runtime's code, compiled from the same headers). `links`: the executable's GPU runtime, which
// the library's copy uses for a CUDA build's session (DeviceLinks.h).
inline constexpr const char *kServeLibraryEntry = "xfrt_serve_library_run";
inline std::string serveLibraryIdentity() {
  return "xfrt-serve 3 " + std::to_string(sizeof(DeviceLinks)) + " " +
         std::to_string(sizeof(Options)) + " " +
         std::to_string(sizeof(Manifest)) + " " + std::to_string(sizeof(ModelAbi)) + " " +
         std::to_string(sizeof(WeightSet)) + " " + std::to_string(sizeof(LoadedTokenizer));
}
using ServeLibraryEntry = int (*)(const char *identity, const Options *options,
                                  const Manifest *manifest, const ModelAbi *abi,
                                  WeightSet *weights, const LoadedTokenizer *tokenizer,
                                  const DeviceLinks *links);

} // namespace xfrt

#endif // XFRT_SERVER_H
