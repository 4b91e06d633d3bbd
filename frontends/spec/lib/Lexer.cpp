//===- Lexer.cpp - the spec language's lexer ------------------------------===//
//
// Bytes in, tokens out. Columns count bytes, as the diagnostics' carets do.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/Lexer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace xf::spec;

namespace {
bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isIdentBody(char c) { return llvm::isAlnum(c) || c == '_' || c == '\''; }

/// ASCII spelling of a Unicode letter or mark allowed inside identifiers.
llvm::StringRef identifierAlias(llvm::UTF32 cp) {
  switch (cp) {
  case U'α':
    return "alpha";
  case U'β':
    return "beta";
  case U'γ':
    return "gamma";
  case U'δ':
    return "delta";
  case U'ε':
  case U'ϵ':
    return "eps";
  case U'η':
    return "eta";
  case U'θ':
    return "theta";
  case U'λ':
    return "lambda";
  case U'μ':
    return "mu";
  case U'σ':
    return "sigma";
  case U'τ':
    return "tau";
  case U'φ':
    return "phi";
  case U'ω':
    return "omega";
  case U'ℓ':
    return "l"; // the paper's sequence length: ℓ_max is l_max
  case 0x0303:
    return "_tilde"; // combining tilde: X̃
  case 0x0302:
    return "_hat"; // combining circumflex
  default:
    if (cp >= 0x2080 && cp <= 0x2089) // subscript digits: γ₁
      return llvm::StringRef("0123456789").substr(cp - 0x2080, 1);
    return {};
  }
}

/// Decodes one UTF-8 code point at the start of `s`; 0 bytes on bad input.
std::pair<llvm::UTF32, unsigned> decodeUtf8(llvm::StringRef s) {
  auto *begin = reinterpret_cast<const llvm::UTF8 *>(s.data());
  const llvm::UTF8 *cursor = begin;
  llvm::UTF32 cp = 0;
  if (llvm::convertUTF8Sequence(&cursor, begin + s.size(), &cp,
                                llvm::strictConversion) != llvm::conversionOK)
    return {0, 0};
  return {cp, unsigned(cursor - begin)};
}
} // namespace

llvm::StringRef xf::spec::spellTokenKind(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::Identifier:
    return "a name";
  case TokenKind::Integer:
    return "an integer";
  case TokenKind::Float:
    return "a number";
  case TokenKind::String:
    return "a checkpoint name in quotes";
  case TokenKind::KwModel:
    return "'model'";
  case TokenKind::KwHyperparameters:
    return "'hyperparameters'";
  case TokenKind::KwParameters:
    return "'parameters'";
  case TokenKind::KwAlgorithm:
    return "'algorithm'";
  case TokenKind::KwFor:
    return "'for'";
  case TokenKind::KwIn:
    return "'in'";
  case TokenKind::KwDo:
    return "'do'";
  case TokenKind::KwEnd:
    return "'end'";
  case TokenKind::KwReturn:
    return "'return'";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::DotDot:
    return "'..'";
  case TokenKind::Assign:
    return "'<-'";
  case TokenKind::Bar:
    return "'|'";
  case TokenKind::Plus:
    return "'+'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::Star:
    return "'*'";
  case TokenKind::Hadamard:
    return "'⊙'";
  case TokenKind::Slash:
    return "'/'";
  case TokenKind::Percent:
    return "'%'";
  case TokenKind::Transpose:
    return "'^T'";
  case TokenKind::Error:
    return "an invalid character";
  }
  return "a token";
}

char Lexer::peek(size_t ahead) const {
  return pos + ahead < buffer.size() ? buffer[pos + ahead] : '\0';
}

void Lexer::advance(size_t bytes) {
  for (size_t i = 0; i < bytes && pos < buffer.size(); ++i, ++pos) {
    if (buffer[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
}

void Lexer::openBracket(int l, int c) {
  if (open.size() < kMaxOpen)
    open.push_back(Location{file, l, c});
  else
    ++deeper;
}

void Lexer::closeBracket() {
  if (deeper)
    --deeper;
  else if (!open.empty())
    open.pop_back();
}

std::optional<Location> Lexer::bracketOpenBefore(int line) const {
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    if (it->line < line)
      return *it;
  return std::nullopt;
}

Token Lexer::make(TokenKind kind, std::string spelling, int l, int c) const {
  return Token{kind, std::move(spelling), Location{file, l, c}};
}

void Lexer::skipSpaceAndComments() {
  while (pos < buffer.size()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && !open.empty())) {
      advance(1);
    } else if (c == '#' || buffer.substr(pos).starts_with("▷")) {
      while (pos < buffer.size() && peek() != '\n')
        advance(1);
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  while (true) {
    skipSpaceAndComments();
    int l = line, c = col;
    if (pos >= buffer.size())
      return make(TokenKind::Eof, "", l, c);
    char ch = peek();
    if (ch == '\n') {
      advance(1);
      if (lastWasNewline)
        continue;
      lastWasNewline = true;
      return make(TokenKind::Newline, "\n", l, c);
    }
    lastWasNewline = false;
    if (isIdentStart(ch))
      return lexIdentifier(l, c);
    if ((unsigned char)ch >= 0x80)
      return lexUnicode(l, c);
    if (llvm::isDigit(ch))
      return lexNumber(l, c);
    if (ch == '"')
      return lexString(l, c);
    auto single = [&](TokenKind kind, size_t n) {
      std::string s = buffer.substr(pos, n).str();
      advance(n);
      return make(kind, s, l, c);
    };
    switch (ch) {
    case '(':
      openBracket(l, c);
      return single(TokenKind::LParen, 1);
    case '[':
      openBracket(l, c);
      return single(TokenKind::LBracket, 1);
    case ')':
      closeBracket();
      return single(TokenKind::RParen, 1);
    case ']':
      closeBracket();
      return single(TokenKind::RBracket, 1);
    case ',':
      return single(TokenKind::Comma, 1);
    case ':':
      return single(TokenKind::Colon, 1);
    case '|':
      return single(TokenKind::Bar, 1);
    case '+':
      return single(TokenKind::Plus, 1);
    case '-':
      return single(TokenKind::Minus, 1);
    case '*':
      return single(TokenKind::Star, 1);
    case '/':
      return single(TokenKind::Slash, 1);
    case '%':
      return single(TokenKind::Percent, 1);
    case '=':
      return single(TokenKind::Assign, 1);
    case '<':
      if (peek(1) == '-')
        return single(TokenKind::Assign, 2);
      break;
    case '.':
      if (peek(1) == '.')
        return single(TokenKind::DotDot, 2);
      if (peek(1) == '*')
        return single(TokenKind::Hadamard, 2);
      break;
    case '^':
      if (peek(1) == 'T' && !isIdentBody(peek(2)))
        return single(TokenKind::Transpose, 2);
      advance(1);
      return make(TokenKind::Error, "'^' must be followed by T (a transpose)",
                  l, c);
    default:
      break;
    }
    std::string what;
    if (llvm::isPrint(ch))
      what = std::string("unexpected character '") + ch + "'";
    else
      what = llvm::formatv("unexpected byte 0x{0:x-2}", (unsigned char)ch);
    advance(1);
    return make(TokenKind::Error, what, l, c);
  }
}

Token Lexer::lexUnicode(int l, int c) {
  auto [cp, bytes] = decodeUtf8(buffer.substr(pos));
  if (bytes == 0) {
    advance(1);
    return make(TokenKind::Error, "invalid UTF-8", l, c);
  }
  TokenKind kind = TokenKind::Error;
  switch (cp) {
  case U'←':
    kind = TokenKind::Assign;
    break;
  case U'∈':
    kind = TokenKind::Colon;
    break;
  case U'·':
  case U'×':
    kind = TokenKind::Star;
    break;
  case U'ᵀ':
    kind = TokenKind::Transpose;
    break;
  case U'⊙':
    kind = TokenKind::Hadamard;
    break;
  default:
    break;
  }
  if (kind != TokenKind::Error) {
    std::string s = buffer.substr(pos, bytes).str();
    advance(bytes);
    return make(kind, s, l, c);
  }
  bool isMark = cp == 0x0303 || cp == 0x0302 || (cp >= 0x2080 && cp <= 0x2089);
  if (!identifierAlias(cp).empty() && !isMark)
    return lexIdentifier(l, c);
  advance(bytes);
  return make(TokenKind::Error,
              llvm::formatv("character U+{0:X-4} is not part of the language",
                            unsigned(cp)),
              l, c);
}

Token Lexer::lexIdentifier(int l, int c) {
  std::string name;
  while (pos < buffer.size()) {
    char ch = peek();
    if (isIdentBody(ch)) {
      name += ch;
      advance(1);
      continue;
    }
    if ((unsigned char)ch < 0x80)
      break;
    auto [cp, bytes] = decodeUtf8(buffer.substr(pos));
    llvm::StringRef alias = bytes ? identifierAlias(cp) : llvm::StringRef();
    if (alias.empty())
      break;
    name += alias;
    advance(bytes);
  }
  TokenKind kind = llvm::StringSwitch<TokenKind>(name)
                       .Case("model", TokenKind::KwModel)
                       .Case("hyperparameters", TokenKind::KwHyperparameters)
                       .Case("parameters", TokenKind::KwParameters)
                       .Case("algorithm", TokenKind::KwAlgorithm)
                       .Case("for", TokenKind::KwFor)
                       .Case("in", TokenKind::KwIn)
                       .Case("do", TokenKind::KwDo)
                       .Case("end", TokenKind::KwEnd)
                       .Case("return", TokenKind::KwReturn)
                       .Default(TokenKind::Identifier);
  return make(kind, name, l, c);
}

Token Lexer::lexNumber(int l, int c) {
  size_t start = pos;
  bool isFloat = false;
  auto digits = [&] {
    while (llvm::isDigit(peek()))
      advance(1);
  };
  digits();
  // `1..L` is a range, not the float `1.`.
  if (peek() == '.' && peek(1) != '.') {
    isFloat = true;
    advance(1);
    digits();
  }
  if ((peek() == 'e' || peek() == 'E') &&
      (llvm::isDigit(peek(1)) ||
       ((peek(1) == '-' || peek(1) == '+') && llvm::isDigit(peek(2))))) {
    isFloat = true;
    advance(2);
    digits();
  }
  if (isIdentBody(peek())) {
    while (isIdentBody(peek()))
      advance(1);
    return make(TokenKind::Error,
                "malformed number '" + buffer.slice(start, pos).str() + "'", l,
                c);
  }
  return make(isFloat ? TokenKind::Float : TokenKind::Integer,
              buffer.slice(start, pos).str(), l, c);
}

Token Lexer::lexString(int l, int c) {
  advance(1); // opening quote
  size_t start = pos;
  while (pos < buffer.size() && peek() != '"' && peek() != '\n')
    advance(1);
  if (peek() != '"')
    return make(TokenKind::Error, "unterminated string", l, c);
  std::string text = buffer.slice(start, pos).str();
  advance(1);
  return make(TokenKind::String, text, l, c);
}

std::string xf::spec::canonicalIdentifier(llvm::StringRef name) {
  Lexer lexer(name, std::make_shared<std::string>("-D"));
  Token first = lexer.next();
  if (first.kind == TokenKind::Identifier &&
      lexer.next().kind == TokenKind::Eof)
    return first.spelling;
  return name.str();
}
