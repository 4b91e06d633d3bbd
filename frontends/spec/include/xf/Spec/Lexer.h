//===- Lexer.h - the spec language's lexer ----------------------*- C++ -*-===//
//
// Turns a spec file into tokens. Newlines end statements, except inside
// parentheses and brackets; `#` and `▷` start a comment that runs to the end
// of the line. Identifiers may use the paper's Unicode names, which are
// normalised to one ASCII spelling (γ₁ → gamma1, X̃ → X_tilde, ℓ_max → l_max),
// so `γ` and `gamma` are the same name.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_LEXER_H
#define XF_SPEC_LEXER_H

#include "xf/Spec/Token.h"

#include <optional>
#include <vector>

namespace xf::spec {

class Lexer {
public:
  Lexer(llvm::StringRef buffer, std::shared_ptr<std::string> file)
      : buffer(buffer), file(std::move(file)) {}

  /// The next token; at the end, Eof forever. A malformed character yields an
  /// Error token whose spelling says what is wrong.
  Token next();

  /// The innermost bracket still open that was opened on a line before
  /// `line`: a line break inside it joined the lines, so an error there is
  /// most likely a bracket left unclosed.
  std::optional<Location> bracketOpenBefore(int line) const;

  /// Forgets the open brackets, so the next line break ends a statement
  /// again: the parser's error recovery resynchronises at a line.
  void closeBrackets() { open.clear(), deeper = 0; }

private:
  void openBracket(int line, int col);
  void closeBracket();

  Token make(TokenKind kind, std::string spelling, int line, int col) const;
  Token lexIdentifier(int line, int col);
  Token lexNumber(int line, int col);
  Token lexString(int line, int col);
  Token lexUnicode(int line, int col);
  void skipSpaceAndComments();
  void advance(size_t bytes);
  char peek(size_t ahead = 0) const;

  llvm::StringRef buffer;
  std::shared_ptr<std::string> file;
  size_t pos = 0;
  int line = 1, col = 1;
  // Open ( and [ (newlines inside are spaces): where each was opened, the
  // first kMaxOpen of them; `deeper` counts the rest.
  static constexpr size_t kMaxOpen = 256;
  std::vector<Location> open;
  size_t deeper = 0;
  bool lastWasNewline = true; // collapse blank lines into one Newline
};

/// `name` spelled as the lexer spells identifiers (ℓ_max → l_max, γ₁ → gamma1),
/// for names given outside a spec (-D); unchanged when it is not one
/// identifier.
std::string canonicalIdentifier(llvm::StringRef name);

} // namespace xf::spec

#endif // XF_SPEC_LEXER_H
