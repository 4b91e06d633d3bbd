//===- Parser.cpp - sections, declarations and statements -----------------===//
//
// The block structure of a spec: `model`, `hyperparameters`, `parameters`,
// `algorithm`, `for ... end` loops, one statement per line.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/Parser.h"

using namespace xf::spec;

/// Deeper nesting than this is a mistake, not a model; it would only risk
/// exhausting the stack.
static constexpr unsigned kMaxNesting = 200;

Parser::Parser(Lexer &lexer, DiagnosticEngine &diags)
    : lexer(lexer), diags(diags) {
  tok = lexer.next();
  ahead = lexer.next();
}

void Parser::consume() {
  tok = std::move(ahead);
  ahead = tok.is(TokenKind::Eof) ? tok : lexer.next();
}

bool Parser::consumeIf(TokenKind kind) {
  if (!tok.is(kind))
    return false;
  consume();
  return true;
}

bool Parser::error(const Location &loc, const llvm::Twine &message) {
  if (!panicking)
    diags.error(loc, message);
  failed = panicking = true;
  return false;
}

/// Keywords that start a block (or close a loop): recovery never skips them.
static bool startsBlock(const Token &tok) {
  return tok.is(TokenKind::KwHyperparameters) ||
         tok.is(TokenKind::KwParameters) || tok.is(TokenKind::KwAlgorithm);
}
static bool isBlockKeyword(const Token &tok) {
  return startsBlock(tok) || tok.is(TokenKind::KwEnd);
}

void Parser::recover() {
  lexer.closeBrackets();
  while (!tok.is(TokenKind::Eof) && !tok.is(TokenKind::Newline) &&
         !isBlockKeyword(tok))
    consume();
  consumeIf(TokenKind::Newline);
  panicking = false;
}

void Parser::recoverToBlock() {
  while (!tok.is(TokenKind::Eof) && !startsBlock(tok))
    consume();
  panicking = false;
}

/// "expected ')' after the arguments of a call, found 'X'".
bool Parser::errorExpected(llvm::StringRef what, llvm::StringRef context) {
  if (tok.is(TokenKind::Error))
    return error(tok.loc, tok.spelling);
  std::string found;
  switch (tok.kind) {
  case TokenKind::Eof:
  case TokenKind::Newline:
    found = spellTokenKind(tok.kind).str();
    break;
  case TokenKind::String:
    found = "\"" + tok.spelling + "\"";
    break;
  default:
    found = "'" + tok.spelling + "'";
  }
  std::string where = context.empty() ? "" : " " + context.str();
  bool first = !panicking;
  error(tok.loc, "expected " + what + where + ", found " + found);
  // A line break inside brackets joins lines, so an unclosed bracket shows
  // up as an error on a later line: point at the bracket too.
  if (std::optional<Location> bracket = lexer.bracketOpenBefore(tok.loc.line);
      bracket && first)
    diags.note(*bracket, "this bracket is not closed: a line break inside "
                         "brackets continues the statement");
  return false;
}

bool Parser::expect(TokenKind kind, llvm::StringRef context) {
  if (consumeIf(kind))
    return true;
  return errorExpected(spellTokenKind(kind), context);
}

bool Parser::expectEndOfLine(llvm::StringRef context) {
  if (tok.is(TokenKind::Eof) || consumeIf(TokenKind::Newline))
    return true;
  return errorExpected("end of line", context);
}

std::optional<std::string> Parser::expectName(llvm::StringRef what,
                                              llvm::StringRef context) {
  if (!tok.is(TokenKind::Identifier))
    return errorExpected(what, context), std::nullopt;
  std::string name = tok.spelling;
  consume();
  return name;
}

void Parser::skipNewlines() {
  while (consumeIf(TokenKind::Newline)) {
  }
}

bool Parser::enterNesting() {
  if (depth < kMaxNesting)
    return true;
  return error(tok.loc, "nesting is deeper than " + llvm::Twine(kMaxNesting) +
                            " levels");
}

std::unique_ptr<ModuleAST> Parser::parseModule() {
  auto module = std::make_unique<ModuleAST>();
  skipNewlines();
  if (tok.is(TokenKind::KwModel)) {
    module->modelLoc = tok.loc;
    consume();
    std::optional<std::string> name =
        expectName("a model name", "after 'model'");
    if (!name || !expectEndOfLine("after the model name"))
      recover();
    else
      module->modelName = *name;
  }
  bool sawAlgorithm = false;
  while (!tok.is(TokenKind::Eof) && canContinue()) {
    sawAlgorithm |= tok.is(TokenKind::KwAlgorithm);
    Location start = tok.loc;
    if (!parseSection(*module)) {
      if (tok.loc.line == start.line && tok.loc.col == start.col)
        consume(); // a second block of a kind: skipped whole
      recoverToBlock();
    }
    skipNewlines();
  }
  if (!module->algorithm && !sawAlgorithm)
    error(tok.loc, "the spec has no 'algorithm'");
  return failed ? nullptr : std::move(module);
}

bool Parser::parseSection(ModuleAST &module) {
  switch (tok.kind) {
  case TokenKind::KwHyperparameters:
    return parseHyperparameters(module);
  case TokenKind::KwParameters: {
    if (!module.parameters.empty())
      return error(tok.loc, "a second 'parameters' block");
    consume();
    if (!expectEndOfLine("after 'parameters'"))
      return false;
    return parseParameterItems(module.parameters, /*inLoop=*/false);
  }
  case TokenKind::KwAlgorithm:
    return parseAlgorithm(module);
  default:
    return errorExpected("'hyperparameters', 'parameters' or 'algorithm'",
                         "at the start of a block");
  }
}

/// A block ends at the next block keyword (or `end`, or the end of file).
static bool atBlockEnd(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Eof:
  case TokenKind::KwEnd:
  case TokenKind::KwHyperparameters:
  case TokenKind::KwParameters:
  case TokenKind::KwAlgorithm:
    return true;
  default:
    return false;
  }
}

bool Parser::parseHyperparameters(ModuleAST &module) {
  if (!module.hyperparameters.empty())
    return error(tok.loc, "a second 'hyperparameters' block");
  consume();
  if (!expectEndOfLine("after 'hyperparameters'"))
    return false;
  for (skipNewlines(); !atBlockEnd(tok) && canContinue(); skipNewlines()) {
    HyperparameterDecl decl;
    decl.loc = tok.loc;
    std::optional<std::string> name = expectName("a hyperparameter name", "");
    if (!name || !expect(TokenKind::Assign, "after the hyperparameter name") ||
        !(decl.value = parseExpr()) ||
        !expectEndOfLine("after the hyperparameter's value")) {
      recover();
      continue;
    }
    decl.name = *name;
    module.hyperparameters.push_back(std::move(decl));
  }
  if (tok.is(TokenKind::KwEnd)) {
    error(tok.loc, "'end' without a 'for'");
    consume();
    recover();
  }
  return true;
}

bool Parser::parseLoopHeader(std::string &var, RangeAST &range, Location &loc) {
  loc = tok.loc;
  consume(); // 'for'
  std::optional<std::string> name =
      expectName("a loop variable", "after 'for'");
  if (!name)
    return false;
  var = *name;
  // `for l in 1..L`, or the paper's `for l ∈ [L]`.
  if (!consumeIf(TokenKind::KwIn) && !consumeIf(TokenKind::Colon))
    return errorExpected("'in'", "after the loop variable");
  if (tok.is(TokenKind::LBracket)) {
    Location at = tok.loc;
    consume();
    range.lo = std::make_unique<NumberExprAST>(at, "1", false);
    if (!(range.hi = parseExpr()) || !expect(TokenKind::RBracket, "after [N]"))
      return false;
  } else if (!parseRange(range)) {
    return false;
  }
  if (!consumeIf(TokenKind::KwDo))
    consumeIf(TokenKind::Colon);
  return expectEndOfLine("after the loop header");
}

bool Parser::parseParameterItems(std::vector<ParameterItem> &items,
                                 bool inLoop) {
  NestingScope scope(*this);
  if (!enterNesting())
    return false;
  for (skipNewlines(); !atBlockEnd(tok) && canContinue(); skipNewlines()) {
    if (tok.is(TokenKind::KwFor)) {
      // A bad header still opens a loop: its body and `end` are parsed.
      auto loop = std::make_unique<ParameterLoop>();
      bool header = parseLoopHeader(loop->var, loop->range, loop->loc);
      if (!header)
        recover();
      if (parseParameterItems(loop->body, /*inLoop=*/true) && header)
        items.push_back(std::move(loop));
      continue;
    }
    std::optional<ParameterDecl> decl = parseParameterDecl();
    if (!decl) {
      recover();
      continue;
    }
    items.push_back(std::move(*decl));
  }
  if (!inLoop) {
    if (tok.is(TokenKind::KwEnd)) {
      error(tok.loc, "'end' without a 'for'");
      consume();
      recover();
    }
    return true;
  }
  if (!tok.is(TokenKind::KwEnd))
    return errorExpected("'end'", "to close the 'for' loop"), panicking = false,
                                                              false;
  consume();
  if (!expectEndOfLine("after 'end'"))
    recover();
  return true;
}

std::optional<ParameterDecl> Parser::parseParameterDecl() {
  ParameterDecl decl;
  decl.loc = tok.loc;
  std::optional<std::string> name = expectName("a parameter name", "or 'for'");
  if (!name)
    return std::nullopt;
  decl.name = *name;
  if (consumeIf(TokenKind::LBracket)) {
    do {
      std::optional<std::string> index =
          expectName("a loop variable", "in the parameter's index");
      if (!index)
        return std::nullopt;
      decl.indices.push_back(*index);
    } while (consumeIf(TokenKind::Comma));
    if (!expect(TokenKind::RBracket, "after the parameter's index"))
      return std::nullopt;
  }
  if (!expect(TokenKind::Colon, "and a shape after the parameter name") ||
      !expect(TokenKind::LBracket, "to start the shape"))
    return std::nullopt;
  do {
    ExprPtr dim = parseExpr();
    if (!dim)
      return std::nullopt;
    decl.shape.push_back(std::move(dim));
  } while (consumeIf(TokenKind::Comma));
  if (!expect(TokenKind::RBracket, "to end the shape") ||
      !expect(TokenKind::Assign, "and a checkpoint name after the shape") ||
      !(decl.binding = parseExpr()) ||
      !expectEndOfLine("after the parameter declaration"))
    return std::nullopt;
  return decl;
}

bool Parser::parseAlgorithm(ModuleAST &module) {
  if (module.algorithm)
    return error(tok.loc, "a second 'algorithm'");
  AlgorithmAST algorithm;
  algorithm.loc = tok.loc;
  consume();
  std::optional<std::string> name =
      expectName("the algorithm's name", "after 'algorithm'");
  algorithm.name = name.value_or("");
  bool header =
      name && expect(TokenKind::LParen, "before the algorithm's inputs");
  if (header && !tok.is(TokenKind::RParen)) {
    do {
      Location at = tok.loc;
      std::optional<std::string> input =
          expectName("an input name", "in the algorithm's inputs");
      if (!input) {
        header = false;
        break;
      }
      algorithm.inputs.emplace_back(*input, at);
    } while (consumeIf(TokenKind::Comma));
  }
  if (!header) {
    recover(); // the statements are still checked
    parseStatements(algorithm.body, /*inLoop=*/false);
    consumeIf(TokenKind::KwEnd);
    module.algorithm = std::move(algorithm);
    return true;
  }
  if (!expect(TokenKind::RParen, "after the algorithm's inputs") ||
      !expectEndOfLine("after the algorithm's header"))
    recover(); // the statements are still checked
  parseStatements(algorithm.body, /*inLoop=*/false);
  if (consumeIf(TokenKind::KwEnd) && !expectEndOfLine("after 'end'"))
    recover();
  module.algorithm = std::move(algorithm);
  return true;
}

bool Parser::parseStatements(std::vector<StmtPtr> &body, bool inLoop) {
  NestingScope scope(*this);
  if (!enterNesting())
    return false;
  for (skipNewlines(); !atBlockEnd(tok) && canContinue(); skipNewlines()) {
    StmtPtr stmt = parseStatement();
    if (!stmt) {
      if (panicking) // else parseFor has recovered already
        recover();
      continue;
    }
    body.push_back(std::move(stmt));
  }
  if (inLoop && !tok.is(TokenKind::KwEnd))
    return errorExpected("'end'", "to close the 'for' loop"), panicking = false,
                                                              false;
  return true;
}

StmtPtr Parser::parseStatement() {
  Location loc = tok.loc;
  if (tok.is(TokenKind::KwFor))
    return parseFor();
  if (consumeIf(TokenKind::KwReturn)) {
    ExprPtr value = parseExpr();
    if (!value || !expectEndOfLine("after the returned value"))
      return nullptr;
    return std::make_unique<ReturnStmtAST>(loc, std::move(value));
  }
  if (!tok.is(TokenKind::Identifier))
    return errorExpected("a statement", ""), nullptr;
  std::string name = tok.spelling;
  consume();
  if (!expect(TokenKind::Assign, "('←' or '<-') after the name"))
    return nullptr;
  ExprPtr value = parseExpr();
  if (!value || !expectEndOfLine("after the assignment"))
    return nullptr;
  return std::make_unique<AssignStmtAST>(loc, std::move(name),
                                         std::move(value));
}

StmtPtr Parser::parseFor() {
  std::string var;
  RangeAST range;
  Location loc;
  std::vector<StmtPtr> body;
  // A bad header still opens a loop: its body and `end` are parsed.
  bool header = parseLoopHeader(var, range, loc);
  if (!header)
    recover();
  if (!parseStatements(body, /*inLoop=*/true))
    return nullptr; // no `end`: at a block keyword or the end of the file
  consume();        // 'end'
  if (!expectEndOfLine("after 'end'") || !header)
    return nullptr;
  return std::make_unique<ForStmtAST>(loc, std::move(var), std::move(range),
                                      std::move(body));
}

std::unique_ptr<ModuleAST> xf::spec::parseSpec(llvm::StringRef buffer,
                                               llvm::StringRef file,
                                               DiagnosticEngine &diags) {
  Lexer lexer(buffer, std::make_shared<std::string>(file.str()));
  Parser parser(lexer, diags);
  return parser.parseModule();
}
