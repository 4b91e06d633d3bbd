//===- HalideErrors.h - Halide runtime failures as xf errors ------*- C++ -*-===//
//
// The Halide runtime reports a failed kernel (out of memory in halide_malloc, a bad buffer)
// through halide_error, whose default handler prints to stdout and aborts. main() installs
// halideErrorHandler instead (halide_set_error_handler): it keeps the first message and
// returns, so the pipeline returns its error code, xf_forward returns nonzero, and the
// run ends with one "error: …" line naming Halide's reason and exit status 1.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_HALIDEERRORS_H
#define XFRT_HALIDEERRORS_H

#include <string>

namespace xfrt {

// halide_error_handler_t; safe to call from Halide's worker threads.
void halideErrorHandler(void *userContext, const char *message);

// The first message recorded since the last call ("" if none), with its trailing newline
// removed; clears it.
std::string takeHalideError();

} // namespace xfrt

#endif // XFRT_HALIDEERRORS_H
