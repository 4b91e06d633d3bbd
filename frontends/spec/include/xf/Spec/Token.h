//===- Token.h - tokens and source locations of the spec language -*- C++
//-*-===//
//
// A token is a kind, its spelling and where it starts. Unicode spellings of
// the paper (←, ∈, ·, ᵀ) arrive here already mapped to their ASCII kind.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_TOKEN_H
#define XF_SPEC_TOKEN_H

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace xf::spec {

/// A position in a spec file: `file:line:col`, both counted from 1.
struct Location {
  std::shared_ptr<std::string> file;
  int line = 0;
  int col = 0;
};

enum class TokenKind {
  Eof,
  Newline,
  Identifier,
  Integer,
  Float,
  String,
  // Keywords.
  KwModel,
  KwHyperparameters,
  KwParameters,
  KwAlgorithm,
  KwFor,
  KwIn,
  KwDo,
  KwEnd,
  KwReturn,
  // Punctuation and operators.
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Colon,  // `:` or `∈`
  DotDot, // `..`
  Assign, // `<-`, `←` or `=`
  Bar,    // `|`
  Plus,
  Minus,
  Star,     // `*`, `·` or `×`
  Hadamard, // `⊙` or `.*`: elementwise product
  Slash,
  Percent,
  Transpose, // `^T` or `ᵀ`
  Error,     // the lexer's own diagnostic is in the spelling
};

/// Name of a token kind as the parser's diagnostics spell it: "'('".
llvm::StringRef spellTokenKind(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string spelling; // identifiers are normalised to ASCII (γ → gamma)
  Location loc;

  bool is(TokenKind k) const { return kind == k; }
};

} // namespace xf::spec

#endif // XF_SPEC_TOKEN_H
