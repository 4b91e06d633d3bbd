//===- Abi.h - The C ABI a generated model object exports --------*- C++
//-*-===//
//
// docs/abi.md. The generated object defines these symbols; libxfrt's main()
// calls them through a ModelAbi so that tests can substitute a fake model.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_ABI_H
#define XFRT_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const char xf_model_manifest[];
int32_t xf_prepare(void *const *params, void *const *derived);
int64_t xf_scratch_bytes(int64_t l, int64_t l_z);
int32_t xf_forward(void *const *params, void *const *derived, const int32_t *tokens, int64_t l,
                   const int32_t *source, int64_t l_z, float *out, void *scratch);

// Cached decoding (docs/abi.md, "Cached decoding"). Only models whose manifest
// says "cached": true define these; libxfrt's main() references them weakly.
int64_t xf_cache_bytes(int64_t positions);
int32_t xf_forward_cached(void *const *params, void *const *derived, const int32_t *tokens,
                          int64_t l, int64_t start, float *out, void *scratch, void *cache,
                          int64_t cache_positions);

// Packed batches (docs/abi.md, "Packed batches"): n sequences of lengths[i] tokens in one call
// (an encoder-decoder's with n sources of source_lengths[i] tokens; else both null).
// Models whose manifest says "packed": true define them; main() references them weakly.
int32_t xf_forward_packed(void *const *params, void *const *derived, const int32_t *tokens,
                          const int64_t *lengths, const int32_t *source,
                          const int64_t *source_lengths, int64_t n, float *out, void *scratch);
int32_t xf_forward_cached_packed(void *const *params, void *const *derived,
                                 const int32_t *tokens, const int64_t *lengths,
                                 const int64_t *starts, int64_t n, float *out, void *scratch,
                                 void *caches, const int64_t *slots, int64_t cache_positions);

#ifdef __cplusplus
}
#endif

#endif // XFRT_ABI_H
