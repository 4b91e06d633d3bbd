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
#include "OptionalEntryPoints.h"
#include "xfrt/Abi.h"
#include "xfrt/Driver.h"
#include "xfrt/Server.h"
#include "xfrt/ThreadPool.h"

#include <csignal>


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
