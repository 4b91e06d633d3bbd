//===- PublicLibrary.h - xfc --emit=lib's exports and archive ---*- C++ -*-===//
//
// A model library exports the public C API of xf/xf.h alone (docs/c-api.md): a shared object
// through a linker version script, a static archive through one partially linked object whose
// other symbols are made local. Both get xf.h copied next to them.
//
//===----------------------------------------------------------------------===//
#ifndef XF_PIPELINES_PUBLICLIBRARY_H
#define XF_PIPELINES_PUBLICLIBRARY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::xf {

class ScratchDirectory;

/// The linker version script of a shared model library: xf.h's functions global, all else local.
std::string publicApiVersionScript();

/// `output` (a .a): the objects, libxfrt_capi whole and the libxfrt members they use, linked
/// by `driver -r` into one object whose global definitions are xf.h's functions alone (so the
/// generated entry points, libxfrt and the Halide runtime cannot clash with the program's
/// own symbols), then archived.
llvm::Error archivePublicLibrary(llvm::StringRef driver, llvm::ArrayRef<std::string> objects,
                                 llvm::StringRef output, ScratchDirectory &dir);

/// xf.h next to a model library: `DIR/xf.h` beside `DIR/libm.so`.
llvm::Error copyPublicHeader(llvm::StringRef library);

/// Writes `text` to `path`.
llvm::Error writeTextFile(llvm::StringRef path, llvm::StringRef text);

} // namespace mlir::xf

#endif // XF_PIPELINES_PUBLICLIBRARY_H
