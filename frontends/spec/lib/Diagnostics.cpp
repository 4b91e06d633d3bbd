//===- Diagnostics.cpp - located errors and warnings ----------------------===//

#include "xf/Spec/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Unicode.h"

#include <algorithm>

using namespace xf::spec;

DiagnosticEngine::DiagnosticEngine(llvm::StringRef buffer, llvm::StringRef file,
                                   llvm::raw_ostream &os)
    : os(os) {
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(buffer, file), llvm::SMLoc());
}

/// Display columns before byte `col` of `line` (as printed: printable()'s text): LLVM's
/// terminal widths, so combining marks (X̃) take none and wide characters two, and the caret
/// lands under the text. Text that is not valid UTF-8 counts a column per character start.
static std::string printable(llvm::StringRef text);
static unsigned displayColumn(llvm::StringRef line, int col) {
  std::string before = printable(line.take_front(size_t(std::max(col, 1) - 1)));
  int width = llvm::sys::unicode::columnWidthUTF8(before);
  if (width >= 0)
    return unsigned(width);
  return unsigned(llvm::count_if(before, [](char c) { return (c & 0xC0) != 0x80; }));
}

/// Bytes that would act on a terminal (C0 controls, DEL, the C1 controls
/// U+0080..U+009F) become '?', so a spec cannot send escape sequences through
/// xfc's diagnostics; one column each, so carets stay aligned.
static std::string printable(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    if (c == 0xC2 && i + 1 < text.size() &&
        (unsigned char)text[i + 1] >= 0x80 &&
        (unsigned char)text[i + 1] <= 0x9F) {
      out += '?';
      ++i;
    } else if (c == '\t') {
      out += ' '; // one column per tab
    } else {
      out += c < 0x20 || c == 0x7F ? '?' : char(c);
    }
  }
  return out;
}

/// Messages and source lines are cut to this many bytes: a 10-million-digit
/// literal is not echoed whole.
static constexpr size_t kMaxShownBytes = 240;

/// The start of the UTF-8 character at or before `i`.
static size_t characterStart(llvm::StringRef s, size_t i) {
  while (i > 0 && i < s.size() && ((unsigned char)s[i] & 0xC0) == 0x80)
    --i;
  return i;
}

void DiagnosticEngine::report(const Location &loc,
                              llvm::SourceMgr::DiagKind kind,
                              const llvm::Twine &message) {
  static const char *const kinds[] = {"error", "warning", "remark", "note"};
  if (kind == llvm::SourceMgr::DK_Error)
    ++numErrors;
  llvm::StringRef file = loc.file ? llvm::StringRef(*loc.file) : "<input>";
  os << printable(file) << ":" << loc.line << ":" << loc.col << ": "
     << kinds[kind] << ": " << shownMessage(message) << "\n";
  llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(1, loc.line, 1);
  if (!at.isValid())
    return;
  llvm::StringRef rest(at.getPointer(),
                       sourceMgr.getMemoryBuffer(1)->getBufferEnd() -
                           at.getPointer());
  llvm::StringRef line = rest.take_until([](char c) { return c == '\n'; });
  line = line.rtrim("\r");
  // A long line is shown as a window around the column, marked with "...".
  size_t column = size_t(std::max(loc.col, 1)) - 1;
  size_t begin = 0, end = line.size();
  if (line.size() > kMaxShownBytes) {
    begin = column > kMaxShownBytes / 3
                ? characterStart(line, column - kMaxShownBytes / 3)
                : 0;
    end = characterStart(line, std::min(line.size(), begin + kMaxShownBytes));
  }
  std::string prefix = begin > 0 ? "..." : "";
  llvm::StringRef shown = line.slice(begin, end);
  os << prefix << printable(shown) << (end < line.size() ? "..." : "") << "\n";
  os.indent(prefix.size() +
            displayColumn(shown, int(column - std::min(column, begin)) + 1))
      << "^\n";
}

std::string DiagnosticEngine::shownMessage(const llvm::Twine &message) {
  std::string text = message.str();
  if (text.size() > 4 * kMaxShownBytes)
    text = text.substr(0, characterStart(text, 4 * kMaxShownBytes)) + "... (" +
           std::to_string(text.size()) + " bytes)";
  return printable(text);
}

void DiagnosticEngine::error(const Location &loc, const llvm::Twine &message) {
  // One error per place: an unrolled loop meets the same mistake once per
  // iteration, and a parameter's binding once per use.
  bool repeated = !reportedAt.insert({loc.line, loc.col}).second;
  suppressNotes = repeated || numErrors >= kMaxErrors;
  if (repeated)
    return;
  if (numErrors >= kMaxErrors) {
    if (!limitReported) {
      llvm::StringRef file = loc.file ? llvm::StringRef(*loc.file) : "<input>";
      os << printable(file)
         << ": note: more errors follow; stopping after the first "
         << kMaxErrors << "\n";
    }
    limitReported = true;
    return;
  }
  report(loc, llvm::SourceMgr::DK_Error, message);
}

void DiagnosticEngine::warning(const Location &loc,
                               const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Warning, message);
}

void DiagnosticEngine::note(const Location &loc, const llvm::Twine &message) {
  if (!suppressNotes) // a note belongs to the error before it
    report(loc, llvm::SourceMgr::DK_Note, message);
}

void DiagnosticEngine::error(const llvm::Twine &message) {
  ++numErrors;
  os << "xfc: error: " << shownMessage(message) << "\n";
}
