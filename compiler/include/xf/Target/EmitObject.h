//===- EmitObject.h - LLVM dialect → object file for the host CPU -*- C++ -*-===//

#ifndef XF_TARGET_EMITOBJECT_H
#define XF_TARGET_EMITOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::xf {

/// Translates a module in the LLVM dialect to LLVM IR, optimizes it at
/// `optLevel` (0–3) for this machine's CPU and features, and returns the IR
/// text (`--emit=llvm`), the assembly (`--emit=asm`) or writes an object.
llvm::Expected<std::string> emitLLVMIR(ModuleOp module, int optLevel);
llvm::Expected<std::string> emitAssembly(ModuleOp module, int optLevel);
llvm::Error emitObjectFile(ModuleOp module, int optLevel, llvm::StringRef path);

} // namespace mlir::xf

#endif // XF_TARGET_EMITOBJECT_H
