//===- CheckFaults.h - faults --check must find (test only) -----*- C++ -*-===//
//
// The faults --check-fault builds into the checked executable (CheckFaults.cpp says what
// each breaks), so the tests can check that --check names the kernel that differs.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CHECK_CHECKFAULTS_H
#define XF_CHECK_CHECKFAULTS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
class ModuleOp;
}

namespace mlir::xf::check {

/// The faults --check-fault injects, as "name: what it breaks" lines.
extern const char *const kCheckFaultHelp;

/// The fault `name` put into `kernels` (the copy that is built); `what` says what was changed.
llvm::Error injectFault(llvm::StringRef name, mlir::ModuleOp kernels, std::string &what);
bool isCheckFault(llvm::StringRef name);
/// The faults of the host code (`packed`, `cached-packed`), put into the lowered host module
/// that is built.
bool isHostFault(llvm::StringRef name);
llvm::Error injectHostFault(llvm::StringRef name, mlir::ModuleOp host, std::string &what);

} // namespace mlir::xf::check

#endif // XF_CHECK_CHECKFAULTS_H
