//===- Diagnostics.cpp - located errors and warnings ----------------------===//

#include "xf/Spec/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace xf::spec;

DiagnosticEngine::DiagnosticEngine(llvm::StringRef buffer,
                                   llvm::StringRef file, llvm::raw_ostream &os)
    : os(os) {
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(buffer, file), llvm::SMLoc());
}

void DiagnosticEngine::report(const Location &loc,
                              llvm::SourceMgr::DiagKind kind,
                              const llvm::Twine &message) {
  if (kind == llvm::SourceMgr::DK_Error)
    ++numErrors;
  llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(1, loc.line, loc.col);
  if (!at.isValid()) // at the very end of the file
    at = llvm::SMLoc::getFromPointer(
        sourceMgr.getMemoryBuffer(1)->getBufferEnd());
  sourceMgr.PrintMessage(os, at, kind, message);
}

void DiagnosticEngine::error(const Location &loc, const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Error, message);
}

void DiagnosticEngine::warning(const Location &loc,
                               const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Warning, message);
}

void DiagnosticEngine::note(const Location &loc, const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Note, message);
}

void DiagnosticEngine::error(const llvm::Twine &message) {
  ++numErrors;
  os << "xfc: error: " << message << "\n";
}
