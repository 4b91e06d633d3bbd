//===- ParseExpr.cpp - expressions of the spec language -------------------===//
//
//   expr    := term { ('+' | '-') term }
//   term    := unary { ('*' | '·' | '⊙' | '/' | '%') unary }
//   unary   := '-' unary | postfix
//   postfix := primary { 'ᵀ' | '[' items ']' }
//   primary := number | string | name | name '(' args ')' | '(' expr ')'
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/Parser.h"

using namespace xf::spec;

/// Taller expressions are not written by people; the bound keeps every
/// recursive walk of an expression (Sema, printing, destruction) shallow.
static constexpr unsigned kMaxExprHeight = 512;

ExprPtr Parser::withHeight(ExprPtr e,
                           std::initializer_list<const ExprAST *> children) {
  unsigned height = 0;
  for (const ExprAST *child : children)
    if (child)
      height = std::max(height, child->getHeight());
  if (height + 1 > kMaxExprHeight)
    return error(e->getLoc(), "expression is too long or too deeply nested "
                              "(more than " +
                                  llvm::Twine(kMaxExprHeight) + " levels)"),
           nullptr;
  e->setHeight(height + 1);
  return e;
}

static char additiveOp(TokenKind kind) {
  return kind == TokenKind::Plus ? '+' : kind == TokenKind::Minus ? '-' : 0;
}

static char multiplicativeOp(TokenKind kind) {
  switch (kind) {
  case TokenKind::Star:
    return '*';
  case TokenKind::Hadamard:
    return kHadamardOp;
  case TokenKind::Slash:
    return '/';
  case TokenKind::Percent:
    return '%';
  default:
    return 0;
  }
}

/// `operand { op operand }`, left-associative, for the ops `opOf` names.
ExprPtr Parser::parseLeftAssociative(ExprPtr (Parser::*operand)(),
                                     char (*opOf)(TokenKind)) {
  ExprPtr lhs = (this->*operand)();
  while (lhs && opOf(tok.kind)) {
    Location loc = tok.loc;
    char op = opOf(tok.kind);
    consume();
    ExprPtr rhs = (this->*operand)();
    if (!rhs)
      return nullptr;
    const ExprAST *l = lhs.get(), *r = rhs.get();
    lhs = withHeight(std::make_unique<BinaryExprAST>(loc, op, std::move(lhs),
                                                     std::move(rhs)),
                     {l, r});
  }
  return lhs;
}

ExprPtr Parser::parseExpr() {
  NestingScope scope(*this);
  if (!enterNesting())
    return nullptr;
  return parseLeftAssociative(&Parser::parseTerm, additiveOp);
}

ExprPtr Parser::parseTerm() {
  return parseLeftAssociative(&Parser::parseUnary, multiplicativeOp);
}

ExprPtr Parser::parseUnary() {
  if (!tok.is(TokenKind::Minus))
    return parsePostfix();
  NestingScope scope(*this);
  if (!enterNesting())
    return nullptr;
  Location loc = tok.loc;
  consume();
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  auto zero = std::make_unique<NumberExprAST>(loc, "0", false);
  const ExprAST *o = operand.get();
  return withHeight(std::make_unique<BinaryExprAST>(loc, '-', std::move(zero),
                                                    std::move(operand)),
                    {o});
}

ExprPtr Parser::parsePostfix() {
  ExprPtr e = parsePrimary();
  while (e) {
    Location loc = tok.loc;
    const ExprAST *base = e.get();
    if (consumeIf(TokenKind::Transpose)) {
      e = withHeight(std::make_unique<TransposeExprAST>(loc, std::move(e)),
                     {base});
    } else if (consumeIf(TokenKind::LBracket)) {
      std::vector<IndexItem> items;
      if (!parseIndexItems(items))
        return nullptr;
      unsigned height = base->getHeight();
      for (const IndexItem &item : items)
        for (const ExprPtr &bound : {std::cref(item.lo), std::cref(item.hi)})
          if (bound.get())
            height = std::max(height, bound.get()->getHeight());
      auto index =
          std::make_unique<IndexExprAST>(loc, std::move(e), std::move(items));
      index->setHeight(height);
      const ExprAST *self = index.get();
      e = withHeight(std::move(index), {self});
    } else {
      break;
    }
  }
  return e;
}

ExprPtr Parser::parsePrimary() {
  Token t = tok;
  switch (t.kind) {
  case TokenKind::Integer:
  case TokenKind::Float:
    consume();
    return std::make_unique<NumberExprAST>(t.loc, t.spelling,
                                           t.is(TokenKind::Float));
  case TokenKind::String:
    consume();
    return std::make_unique<StringExprAST>(t.loc, t.spelling);
  case TokenKind::Identifier:
    consume();
    if (tok.is(TokenKind::LParen))
      return parseCall(std::move(t));
    return std::make_unique<NameExprAST>(t.loc, t.spelling);
  case TokenKind::LParen: {
    consume();
    ExprPtr inner = parseExpr();
    if (!inner || !expect(TokenKind::RParen, "to close '('"))
      return nullptr;
    return inner;
  }
  default:
    return errorExpected("an expression", ""), nullptr;
  }
}

ExprPtr Parser::parseCall(Token callee) {
  consume(); // '('
  std::vector<ExprPtr> inputs, params;
  std::vector<OptionAST> options;
  bool afterBar = false;
  if (!tok.is(TokenKind::RParen)) {
    do {
      if (!afterBar && consumeIf(TokenKind::Bar))
        afterBar = true;
      if (!parseCallArg(afterBar ? params : inputs, options))
        return nullptr;
    } while (consumeIf(TokenKind::Comma) ||
             (!afterBar && tok.is(TokenKind::Bar)));
  }
  if (!expect(TokenKind::RParen,
              ("to close the arguments of '" + callee.spelling + "'").c_str()))
    return nullptr;
  unsigned height = 0;
  for (const auto *args : {&inputs, &params})
    for (const ExprPtr &arg : *args)
      height = std::max(height, arg->getHeight());
  for (const OptionAST &option : options)
    height = std::max(height, option.value->getHeight());
  auto call = std::make_unique<CallExprAST>(
      callee.loc, callee.spelling, std::move(inputs), std::move(params),
      std::move(options));
  call->setHeight(height);
  const ExprAST *self = call.get();
  return withHeight(std::move(call), {self});
}

/// `expr`, `expr for h in 1..H`, or an option `name = expr`.
bool Parser::parseCallArg(std::vector<ExprPtr> &args,
                          std::vector<OptionAST> &options) {
  if (tok.is(TokenKind::Identifier) && ahead.is(TokenKind::Assign)) {
    OptionAST option;
    option.name = tok.spelling;
    option.loc = tok.loc;
    consume();
    consume();
    if (!(option.value = parseExpr()))
      return false;
    options.push_back(std::move(option));
    return true;
  }
  ExprPtr arg = parseExpr();
  if (!arg)
    return false;
  if (tok.is(TokenKind::KwFor)) {
    Location loc = tok.loc;
    consume();
    std::optional<std::string> var =
        expectName("a loop variable", "after 'for'");
    RangeAST range;
    if (!var)
      return false;
    if (!expect(TokenKind::KwIn, "after the loop variable") ||
        !parseRange(range))
      return false;
    const ExprAST *body = arg.get();
    arg =
        withHeight(std::make_unique<ComprehensionExprAST>(
                       loc, std::move(arg), std::move(*var), std::move(range)),
                   {body});
    if (!arg)
      return false;
  }
  args.push_back(std::move(arg));
  return true;
}

/// `i`, `:`, `lo:hi` separated by commas, then ']'.
bool Parser::parseIndexItems(std::vector<IndexItem> &items) {
  do {
    IndexItem item;
    item.loc = tok.loc;
    if (!tok.is(TokenKind::Colon) && !(item.lo = parseExpr()))
      return false;
    if (consumeIf(TokenKind::Colon)) {
      item.isRange = true;
      if (!tok.is(TokenKind::Comma) && !tok.is(TokenKind::RBracket) &&
          !(item.hi = parseExpr()))
        return false;
    }
    items.push_back(std::move(item));
  } while (consumeIf(TokenKind::Comma));
  return expect(TokenKind::RBracket, "after the index");
}

bool Parser::parseRange(RangeAST &range) {
  return (range.lo = parseExpr()) &&
         expect(TokenKind::DotDot, "in the range 'first..last'") &&
         (range.hi = parseExpr());
}
