//===- Diagnostics.cpp - located errors and warnings ----------------------===//

#include "xf/Spec/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace xf::spec;

DiagnosticEngine::DiagnosticEngine(llvm::StringRef buffer, llvm::StringRef file,
                                   llvm::raw_ostream &os)
    : os(os) {
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(buffer, file), llvm::SMLoc());
}

/// Display columns before byte `col` of `line`: UTF-8 continuation bytes and
/// combining marks (X̃) take no room, so the caret lands under the text.
static unsigned displayColumn(llvm::StringRef line, int col) {
  unsigned width = 0;
  for (size_t i = 0; i < line.size() && int(i) + 1 < col; ++i) {
    unsigned char c = line[i];
    bool isContinuation = (c & 0xC0) == 0x80;
    bool isCombining = c == 0xCC || (c == 0xCD && i + 1 < line.size() &&
                                     (unsigned char)line[i + 1] < 0xB0);
    if (!isContinuation && !isCombining)
      ++width;
  }
  return width;
}

void DiagnosticEngine::report(const Location &loc,
                              llvm::SourceMgr::DiagKind kind,
                              const llvm::Twine &message) {
  static const char *const kinds[] = {"error", "warning", "remark", "note"};
  if (kind == llvm::SourceMgr::DK_Error)
    ++numErrors;
  llvm::StringRef file = loc.file ? llvm::StringRef(*loc.file) : "<input>";
  os << file << ":" << loc.line << ":" << loc.col << ": " << kinds[kind] << ": "
     << message << "\n";
  llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(1, loc.line, 1);
  if (!at.isValid())
    return;
  llvm::StringRef rest(at.getPointer(),
                       sourceMgr.getMemoryBuffer(1)->getBufferEnd() -
                           at.getPointer());
  llvm::StringRef line = rest.take_until([](char c) { return c == '\n'; });
  line = line.rtrim("\r");
  std::string text;
  for (char c : line)
    text += c == '\t' ? ' ' : c; // keep one column per tab
  os << text << "\n";
  os.indent(displayColumn(line, loc.col)) << "^\n";
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
