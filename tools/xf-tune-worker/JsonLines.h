//===- JsonLines.h - One JSON object per line on stdout ---------*- C++ -*-===//
//
// In: a function writing the attributes of one object. Out: the object as one
// line on stdout, flushed at once, so that a parent reading the pipe knows
// how far the worker got even if it dies on the next instruction.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_JSONLINES_H
#define XF_TOOLS_XF_TUNE_WORKER_JSONLINES_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"

namespace xftune {

void emitLine(llvm::function_ref<void(llvm::json::OStream &)> attributes);

/// A number attribute; null when not finite (JSON has no NaN or infinity).
void numberAttribute(llvm::json::OStream &json, llvm::StringRef key, double value);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_JSONLINES_H
