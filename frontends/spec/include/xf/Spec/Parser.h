//===- Parser.h - recursive-descent parser for spec files -------*- C++ -*-===//
//
// Builds a ModuleAST from tokens. The grammar (docs/language.md) is LL(2):
// one token of lookahead, plus a second one to tell an option `mask = causal`
// from an argument. Nesting is bounded so no input can exhaust the stack.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_PARSER_H
#define XF_SPEC_PARSER_H

#include "xf/Spec/AST.h"
#include "xf/Spec/Diagnostics.h"
#include "xf/Spec/Lexer.h"

namespace xf::spec {

class Parser {
public:
  Parser(Lexer &lexer, DiagnosticEngine &diags);

  /// The module, or null after reporting its syntax errors: after an error
  /// the parser skips to the next line (statement, declaration) or, after a
  /// bad block header, to the next block, and goes on, so each independent
  /// error is reported once (at most DiagnosticEngine::kMaxErrors).
  std::unique_ptr<ModuleAST> parseModule();

private:
  // Sections.
  bool parseSection(ModuleAST &module);
  bool parseHyperparameters(ModuleAST &module);
  bool parseParameterItems(std::vector<ParameterItem> &items, bool inLoop);
  std::optional<ParameterDecl> parseParameterDecl();
  bool parseAlgorithm(ModuleAST &module);
  // Statements.
  bool parseStatements(std::vector<StmtPtr> &body, bool inLoop);
  StmtPtr parseStatement();
  StmtPtr parseFor();
  bool parseLoopHeader(std::string &var, RangeAST &range, Location &loc);
  // Expressions.
  ExprPtr parseExpr();
  ExprPtr parseTerm();
  ExprPtr parseLeftAssociative(ExprPtr (Parser::*operand)(),
                               char (*opOf)(TokenKind));
  ExprPtr parseUnary();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  ExprPtr parseCall(Token callee);
  bool parseCallArg(std::vector<ExprPtr> &args, std::vector<OptionAST> &opts);
  bool parseIndexItems(std::vector<IndexItem> &items);
  bool parseRange(RangeAST &range);

  // Tokens.
  void consume();
  bool consumeIf(TokenKind kind);
  bool expect(TokenKind kind, llvm::StringRef context);
  bool expectEndOfLine(llvm::StringRef context);
  /// An identifier's spelling (consumed), or nullopt after an error.
  std::optional<std::string> expectName(llvm::StringRef what,
                                        llvm::StringRef context);
  void skipNewlines();
  bool error(const Location &loc, const llvm::Twine &message);
  /// After an error: skips to the start of the next line, or to a block
  /// keyword or `end` (kept), and reports again.
  void recover();
  /// After a bad block header: skips to the next block keyword.
  void recoverToBlock();
  /// Whether to go on after an error (not past the error limit).
  bool canContinue() const { return !diags.atErrorLimit(); }
  bool errorExpected(llvm::StringRef what, llvm::StringRef context);
  bool enterNesting();
  /// `e` with its height set from `children`, or null when too tall.
  ExprPtr withHeight(ExprPtr e,
                     std::initializer_list<const ExprAST *> children);

  Lexer &lexer;
  DiagnosticEngine &diags;
  Token tok, ahead;
  unsigned depth = 0;     // nesting of expressions and blocks
  bool failed = false;    // an error was reported: no module
  bool panicking = false; // errors are not reported until recover()

  /// RAII guard for bounded recursion.
  struct NestingScope {
    Parser &p;
    explicit NestingScope(Parser &p) : p(p) { ++p.depth; }
    ~NestingScope() { --p.depth; }
  };
};

/// Parses `buffer` (named `file`); reports syntax errors to `diags`.
std::unique_ptr<ModuleAST> parseSpec(llvm::StringRef buffer,
                                     llvm::StringRef file,
                                     DiagnosticEngine &diags);

} // namespace xf::spec

#endif // XF_SPEC_PARSER_H
