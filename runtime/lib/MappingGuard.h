//===- MappingGuard.h - A clear error instead of SIGBUS on mapped files -*- C++ -*-===//
//
// Internal to libxfrt. Reading a mapped page past the end of a file that was truncated or
// rewritten while mapped raises SIGBUS. Mapped checkpoints are registered here; a SIGBUS inside
// one prints "error: <file>: the file shrank while in use ..." and exits with status 1 (the
// runtime's exit code for bad weights). A SIGBUS anywhere else keeps its default action.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_MAPPINGGUARD_H
#define XFRT_LIB_MAPPINGGUARD_H

#include <cstddef>
#include <string>

namespace xfrt {

// Registers [start, start + size) as the mapping of `path` (installs the handler once).
void guardMapping(const void *start, size_t size, const std::string &path);
void unguardMapping(const void *start);

} // namespace xfrt

#endif // XFRT_LIB_MAPPINGGUARD_H
