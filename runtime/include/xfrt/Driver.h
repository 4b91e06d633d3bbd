//===- Driver.h - main() of generated executables, as a function -*- C++
//-*-===//
//
// runMain parses the command line, loads or draws the weights, calls prepare
// once, allocates derived buffers and scratch (64-byte aligned), runs the
// forward pass (--repeat times) and writes the outputs. It returns the process
// exit code: 0 success, 1 bad weights / manifest / runtime failure, 2 bad
// command line. Messages go to stderr as "error: <what>".
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DRIVER_H
#define XFRT_DRIVER_H

#include <cstdint>
#include <vector>

namespace xfrt {

struct ModelAbi {
  const char *manifest;
  int32_t (*prepare)(void *const *params, void *const *derived);
  int64_t (*scratchBytes)(int64_t l, int64_t lz);
  int32_t (*forward)(void *const *params, void *const *derived, const int32_t *tokens, int64_t l,
                     const int32_t *source, int64_t lz, float *out, void *scratch);
  int (*setNumThreads)(int); // halide_set_num_threads, or null when not linked in
  // Cached decoding; both null when the model has no cached entry point.
  int64_t (*cacheBytes)(int64_t positions) = nullptr;
  int32_t (*forwardCached)(void *const *params, void *const *derived, const int32_t *tokens,
                           int64_t l, int64_t start, float *out, void *scratch, void *cache,
                           int64_t cachePositions) = nullptr;
  // halide_set_error_handler, or null when not linked in (HalideErrors.h).
  using ErrorHandler = void (*)(void *userContext, const char *message);
  ErrorHandler (*setErrorHandler)(ErrorHandler) = nullptr;
  // Packed batches (docs/abi.md "Packed batches"); null when the model has none.
  int32_t (*forwardPacked)(void *const *params, void *const *derived, const int32_t *tokens,
                           const int64_t *lengths, const int32_t *source,
                           const int64_t *sourceLengths, int64_t n, float *out,
                           void *scratch) = nullptr;
  int32_t (*forwardCachedPacked)(void *const *params, void *const *derived,
                                 const int32_t *tokens, const int64_t *lengths,
                                 const int64_t *starts, int64_t n, float *out, void *scratch,
                                 void *caches, const int64_t *slots,
                                 int64_t cachePositions) = nullptr;
};

struct Options;
struct Manifest;
struct LoadedTokenizer;
struct WeightSet;
// --serve's server (Server.h), linked in from its own archive by main(); null: --serve is an
// error. Returns the exit code.
using ServeMain = int (*)(const Options &options, const Manifest &manifest, const ModelAbi &abi,
                          WeightSet &weights, const LoadedTokenizer &tokenizer);

int runMain(int argc, const char *const *argv, const ModelAbi &abi, ServeMain serve = nullptr);

// Indices of the k largest values of row[0, n), largest first; ties go to the
// lower index and NaN ranks below everything.
std::vector<int64_t> topIndices(const float *row, int64_t n, int k);

} // namespace xfrt

#endif // XFRT_DRIVER_H
