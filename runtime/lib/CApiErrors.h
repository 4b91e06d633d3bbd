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
} // namespace xfrt::capi

#endif // XFRT_CAPIERRORS_H
