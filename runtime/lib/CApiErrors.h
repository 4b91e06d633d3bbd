//===- CApiErrors.h - xf/xf.h: the per-thread error message -------*- C++ -*-===//
//
// Calls of the public C API that have no session to hold their message (creating one,
// tokenizers) keep it per thread, for xf_last_error().
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CAPIERRORS_H
#define XFRT_CAPIERRORS_H

#include "xf/xf.h"

#include <string>

namespace xfrt::capi {
// Records `message` as this thread's last error; returns `code`.
xf_status fail(xf_status code, std::string message);
// Inside a catch handler: the exception being handled (std::bad_alloc, ...) as a message and
// XF_ERROR_RUNTIME. Every C API call catches what libxfrt or the standard library throws: a C
// caller cannot, and an exception leaving an extern "C" function terminates the process.
xf_status caughtException(std::string &message);
// The same, recorded as this thread's last error.
xf_status caughtExceptionOnThread();
} // namespace xfrt::capi

#endif // XFRT_CAPIERRORS_H
