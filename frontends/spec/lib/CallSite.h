//===- CallSite.h - checking one call of a primitive ------------*- C++ -*-===//
//
// Arity, options (eps, heads, mask, scale, ...) and operand kinds of one
// `f(inputs | parameters, options)` call, with diagnostics at the call.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_LIB_CALLSITE_H
#define XF_SPEC_LIB_CALLSITE_H

#include "Elaborator.h"

namespace xf::spec {

/// One call being checked: its arguments, options and the elaborator.
class CallSite {
public:
  CallSite(Elaborator &s, const CallExprAST &call, llvm::StringRef usage)
      : s(s), call(call), usage(usage) {}

  /// Arity of the data inputs (before `|`) and the parameters (after it).
  bool arity(size_t minIn, size_t maxIn, size_t minParams, size_t maxParams);
  bool allowOptions(std::initializer_list<llvm::StringRef> allowed);
  const OptionAST *option(llvm::StringRef name) const;

  std::optional<int> tensor(const ExprPtr &e, llvm::StringRef what);
  std::optional<int> input(size_t i) {
    return tensor(call.getInputs()[i], "an input");
  }
  std::optional<int> param(size_t i) {
    return tensor(call.getParams()[i], "a parameter");
  }
  std::optional<int> matrix(const ExprPtr &e, llvm::StringRef what);

  std::optional<double> epsilon();
  std::optional<int64_t> heads();
  std::optional<MaskKind> mask();
  bool scale(Node &n);
  std::optional<llvm::StringRef>
  word(llvm::StringRef name, std::initializer_list<llvm::StringRef> words,
       llvm::StringRef fallback);

  Node node(OpKind kind, llvm::ArrayRef<int> operands, TensorType type) const;
  bool error(const Location &loc, const llvm::Twine &message) {
    return s.error(loc, message);
  }

  Elaborator &s;
  const CallExprAST &call;
  llvm::StringRef usage;
};
/// attention(Q, K, V, ...) and mhattention(X [, Z] | ...), Attention.cpp.
std::optional<int> buildAttention(CallSite &c);
std::optional<int> buildMultiHeadAttention(CallSite &c);

} // namespace xf::spec

#endif // XF_SPEC_LIB_CALLSITE_H
