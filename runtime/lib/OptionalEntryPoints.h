//===- OptionalEntryPoints.h - symbols a model may not have -----*- C++ -*-===//
//
// Included once by each program-level file that binds a model's objects (the executables'
// main, the C API's session): the Halide runtime's hooks, weak so that a program without a
// Halide runtime still links (its default error handler would abort the process:
// xfrt/HalideErrors.h), and the entry points only some models have (manifest "cached": true;
// packed batches, absent from older objects): null where missing, checked before each use.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_OPTIONALENTRYPOINTS_H
#define XFRT_LIB_OPTIONALENTRYPOINTS_H

#include "xfrt/Abi.h"

extern "C" __attribute__((weak)) int halide_set_num_threads(int);
using HalideErrorHandler = void (*)(void *, const char *);
extern "C" __attribute__((weak)) HalideErrorHandler
halide_set_error_handler(HalideErrorHandler handler);
#pragma weak xf_cache_bytes
#pragma weak xf_forward_cached
#pragma weak xf_forward_packed
#pragma weak xf_forward_cached_packed

#endif // XFRT_LIB_OPTIONALENTRYPOINTS_H
