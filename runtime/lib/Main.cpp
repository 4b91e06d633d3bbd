//===- Main.cpp - main() of every generated executable --------------------===//
//
// Compiled into libxfrt_main (target xfRuntimeMain), separate from libxfrt so
// that tests can link the runtime without a main. The generated object provides
// the xf_* symbols; the Halide runtime provides halide_set_num_threads (weak
// here: --threads warns when it is absent) and halide_set_error_handler.
// xf_cache_bytes / xf_forward_cached are weak too (docs/abi.md, "Cached decoding").
// --serve's server is loaded from libxfrt_serve.so when asked for (Server.h).
//
//===----------------------------------------------------------------------===//
#include "xfrt/Abi.h"
#include "xfrt/Driver.h"
#include "xfrt/Server.h"
#include "xfrt/ThreadPool.h"

#include <csignal>

extern "C" __attribute__((weak)) int halide_set_num_threads(int);
// Weak too: its default handler would abort the process (xfrt/HalideErrors.h).
using HalideErrorHandler = void (*)(void *, const char *);
extern "C" __attribute__((weak)) HalideErrorHandler
halide_set_error_handler(HalideErrorHandler handler);
// Present only in models with a cached entry point (manifest "cached": true);
// null otherwise, and then generation re-runs xf_forward on the whole prefix.
#pragma weak xf_cache_bytes
#pragma weak xf_forward_cached
// Packed batches (older executables' objects lack them: sequences then run one by one).
#pragma weak xf_forward_packed
#pragma weak xf_forward_cached_packed

int main(int argc, char **argv) {
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and is reported as an error,
  // rather than SIGXFSZ killing the process with a half-written temporary.
  std::signal(SIGXFSZ, SIG_IGN);
  xfrt::ModelAbi abi{xf_model_manifest,       xf_prepare,      xf_scratch_bytes,  xf_forward,
                     &halide_set_num_threads, &xf_cache_bytes, &xf_forward_cached,
                     &halide_set_error_handler, &xf_forward_packed, &xf_forward_cached_packed};
  // Every halide_do_par_for on libxfrt's pool; --threads sets its count and Halide's.
  xfrt::installKernelThreadPool(abi.setNumThreads);
  return xfrt::runMain(argc, argv, abi, &xfrt::runServerLibrary);
}
