//===- Diagnostics.h - located errors and warnings --------------*- C++ -*-===//
//
// Every problem with a spec is reported as `file:line:col: error: message`,
// followed by the offending source line and a caret under the column. The
// engine counts errors; phases return failure() after reporting once. What a
// spec supplies is shown inert and bounded: control characters become '?',
// long lines a window around the column, long messages are cut. The
// frontend goes on after an error (Parser.h, Elaborator.h), so the engine
// keeps the report readable: one error per source location (with its
// notes), and at most kMaxErrors of them.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_DIAGNOSTICS_H
#define XF_SPEC_DIAGNOSTICS_H

#include "xf/Spec/Token.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <utility>

namespace xf::spec {

class DiagnosticEngine {
public:
  static constexpr unsigned kMaxErrors = 20;

  /// Reports about `buffer` (named `file`) go to `os`.
  DiagnosticEngine(llvm::StringRef buffer, llvm::StringRef file,
                   llvm::raw_ostream &os);

  void error(const Location &loc, const llvm::Twine &message);
  void warning(const Location &loc, const llvm::Twine &message);
  void note(const Location &loc, const llvm::Twine &message);
  /// A problem with no place in the file, e.g. a bad `-D` value.
  void error(const llvm::Twine &message);

  unsigned getNumErrors() const { return numErrors; }
  /// An error past kMaxErrors came (and a note said so): phases stop rather
  /// than look for more.
  bool atErrorLimit() const { return limitReported; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }
  llvm::raw_ostream &getStream() { return os; }

  /// `message` as printed: control characters replaced, cut when very long.
  static std::string shownMessage(const llvm::Twine &message);

private:
  void report(const Location &loc, llvm::SourceMgr::DiagKind kind,
              const llvm::Twine &message);

  llvm::SourceMgr sourceMgr;
  llvm::raw_ostream &os;
  unsigned numErrors = 0;
  std::set<std::pair<int, int>> reportedAt; // (line, column) of errors
  bool suppressNotes = false, limitReported = false;
};

} // namespace xf::spec

#endif // XF_SPEC_DIAGNOSTICS_H
