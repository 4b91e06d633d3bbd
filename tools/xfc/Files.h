//===- Files.h - how xfc reads and writes files -----------------*- C++ -*-===//
//
// The spec is read through xfrt::readTextFile, which checks on the opened descriptor that it
// is a regular file (a FIFO does not block) and bounds its size. Every file xfc writes goes through
// xfrt::AtomicOutputFile (runtime/include/xfrt/ OutputFile.h): a temporary beside the target,
// renamed over it when complete, so a failed compile or link leaves the previous output as it was.
// Text stages may also go to stdout
// ("-") or into a character device or FIFO (`-o /dev/null`), written in place; binaries never
// replace anything but a regular file.
//
//===----------------------------------------------------------------------===//
#ifndef XFC_FILES_H
#define XFC_FILES_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace llvm {
class MemoryBuffer;
}

namespace xfc {

/// The spec at `path` ("-" is stdin), at most `maxBytes`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readSpec(llvm::StringRef path, size_t maxBytes);

/// Whether `path` may be written as the output (checked before compiling): "-", an absent file
/// in an existing directory, or a regular file; a character device or FIFO too when
/// `streamable` (text stages).
llvm::Error checkOutput(llvm::StringRef path, bool streamable);

/// Writes a text stage to `path` ("-" is stdout).
llvm::Error writeText(llvm::StringRef path, llvm::StringRef text);

/// Runs `produce` on a fresh temporary beside `path` (the object writer, the linker), then
/// renames it over `path`; an executable gets 0777 less the umask.
llvm::Error writeThroughTemporary(llvm::StringRef path, bool executable,
                                  llvm::function_ref<llvm::Error(llvm::StringRef)> produce);

} // namespace xfc

#endif // XFC_FILES_H
