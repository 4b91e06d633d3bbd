//===- Main.cpp - main() of every generated executable --------------------===//
//
// Compiled into libxfrt_main (target xfRuntimeMain), separate from libxfrt so
// that tests can link the runtime without a main. The generated object provides
// the xf_* symbols; the Halide runtime provides halide_set_num_threads (weak
// here: --threads warns when it is absent). xf_cache_bytes / xf_forward_cached
// are weak too (docs/abi.md, "Cached decoding").
//
//===----------------------------------------------------------------------===//
#include "xfrt/Abi.h"
#include "xfrt/Driver.h"

extern "C" __attribute__((weak)) int halide_set_num_threads(int);
// Present only in models with a cached entry point (manifest "cached": true);
// null otherwise, and then generation re-runs xf_forward on the whole prefix.
#pragma weak xf_cache_bytes
#pragma weak xf_forward_cached

int main(int argc, char **argv) {
  xfrt::ModelAbi abi{xf_model_manifest,       xf_prepare,      xf_scratch_bytes,  xf_forward,
                     &halide_set_num_threads, &xf_cache_bytes, &xf_forward_cached};
  return xfrt::runMain(argc, argv, abi);
}
