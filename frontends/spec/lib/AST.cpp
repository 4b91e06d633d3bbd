//===- AST.cpp - printing the AST for `xfc --emit=ast` --------------------===//
//
// One node per line, indented by depth, each with its `@line:col`.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/AST.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace xf::spec;

namespace {
class ASTDumper {
public:
  explicit ASTDumper(llvm::raw_ostream &os) : os(os) {}

  void dump(const ModuleAST &module);

private:
  void dump(const HyperparameterDecl &decl);
  void dump(const ParameterItem &item);
  void dump(const AlgorithmAST &algorithm);
  void dump(const StmtAST &stmt);
  void dump(const ExprAST &expr);
  void dump(const RangeAST &range);

  llvm::raw_ostream &line() { return os.indent(2 * indent); }
  static std::string at(const Location &loc) {
    return " @" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }

  /// Indents everything printed while it lives.
  struct Nested {
    ASTDumper &d;
    explicit Nested(ASTDumper &d) : d(d) { ++d.indent; }
    ~Nested() { --d.indent; }
  };

  llvm::raw_ostream &os;
  unsigned indent = 0;
};
} // namespace

void ASTDumper::dump(const ModuleAST &module) {
  line() << "Module "
         << (module.modelName.empty() ? "<unnamed>" : module.modelName) << "\n";
  Nested n(*this);
  for (const HyperparameterDecl &decl : module.hyperparameters)
    dump(decl);
  for (const ParameterItem &item : module.parameters)
    dump(item);
  if (module.algorithm)
    dump(*module.algorithm);
}

void ASTDumper::dump(const HyperparameterDecl &decl) {
  line() << "Hyperparameter " << decl.name << at(decl.loc) << "\n";
  Nested n(*this);
  dump(*decl.value);
}

void ASTDumper::dump(const ParameterItem &item) {
  if (auto *loop = std::get_if<std::unique_ptr<ParameterLoop>>(&item)) {
    line() << "ParameterLoop " << (*loop)->var << at((*loop)->loc) << "\n";
    Nested n(*this);
    dump((*loop)->range);
    for (const ParameterItem &inner : (*loop)->body)
      dump(inner);
    return;
  }
  const auto &decl = std::get<ParameterDecl>(item);
  line() << "Parameter " << decl.name;
  if (!decl.indices.empty())
    os << "[" << llvm::join(decl.indices, ", ") << "]";
  os << at(decl.loc) << "\n";
  Nested n(*this);
  line() << "Shape\n";
  {
    Nested shape(*this);
    for (const ExprPtr &dim : decl.shape)
      dump(*dim);
  }
  line() << "Binding\n";
  Nested binding(*this);
  dump(*decl.binding);
}

void ASTDumper::dump(const AlgorithmAST &algorithm) {
  line() << "Algorithm " << algorithm.name << "(";
  llvm::interleaveComma(algorithm.inputs, os,
                        [&](const auto &input) { os << input.first; });
  os << ")" << at(algorithm.loc) << "\n";
  Nested n(*this);
  for (const StmtPtr &stmt : algorithm.body)
    dump(*stmt);
}

void ASTDumper::dump(const RangeAST &range) {
  line() << "Range\n";
  Nested n(*this);
  dump(*range.lo);
  dump(*range.hi);
}

void ASTDumper::dump(const StmtAST &stmt) {
  llvm::TypeSwitch<const StmtAST *>(&stmt)
      .Case([&](const AssignStmtAST *s) {
        line() << "Assign " << s->getName() << at(s->getLoc()) << "\n";
        Nested n(*this);
        dump(s->getValue());
      })
      .Case([&](const ForStmtAST *s) {
        line() << "For " << s->getVar() << at(s->getLoc()) << "\n";
        Nested n(*this);
        dump(s->getRange());
        for (const StmtPtr &inner : s->getBody())
          dump(*inner);
      })
      .Case([&](const ReturnStmtAST *s) {
        line() << "Return" << at(s->getLoc()) << "\n";
        Nested n(*this);
        dump(s->getValue());
      });
}

void ASTDumper::dump(const ExprAST &expr) {
  llvm::TypeSwitch<const ExprAST *>(&expr)
      .Case([&](const NumberExprAST *e) {
        line() << "Number " << e->getSpelling() << at(e->getLoc()) << "\n";
      })
      .Case([&](const NameExprAST *e) {
        line() << "Name " << e->getName() << at(e->getLoc()) << "\n";
      })
      .Case([&](const StringExprAST *e) {
        line() << "Checkpoint \"" << e->getText() << "\"" << at(e->getLoc())
               << "\n";
      })
      .Case([&](const BinaryExprAST *e) {
        line() << "Binary " << e->getOpSpelling() << at(e->getLoc()) << "\n";
        Nested n(*this);
        dump(e->getLHS());
        dump(e->getRHS());
      })
      .Case([&](const TransposeExprAST *e) {
        line() << "Transpose" << at(e->getLoc()) << "\n";
        Nested n(*this);
        dump(e->getOperand());
      })
      .Case([&](const IndexExprAST *e) {
        line() << "Index" << at(e->getLoc()) << "\n";
        Nested n(*this);
        dump(e->getBase());
        for (const IndexItem &item : e->getItems()) {
          line() << (item.isRange ? "Slice" : "At") << at(item.loc) << "\n";
          Nested inner(*this);
          if (item.lo)
            dump(*item.lo);
          if (item.hi)
            dump(*item.hi);
        }
      })
      .Case([&](const CallExprAST *e) {
        line() << "Call " << e->getCallee() << at(e->getLoc()) << "\n";
        Nested n(*this);
        for (const ExprPtr &input : e->getInputs())
          dump(*input);
        if (!e->getParams().empty()) {
          line() << "Parameters\n";
          Nested params(*this);
          for (const ExprPtr &param : e->getParams())
            dump(*param);
        }
        for (const OptionAST &option : e->getOptions()) {
          line() << "Option " << option.name << at(option.loc) << "\n";
          Nested value(*this);
          dump(*option.value);
        }
      })
      .Case([&](const ComprehensionExprAST *e) {
        line() << "Comprehension " << e->getVar() << at(e->getLoc()) << "\n";
        Nested n(*this);
        dump(e->getRange());
        dump(e->getBody());
      });
}

void xf::spec::dump(const ModuleAST &module, llvm::raw_ostream &os) {
  ASTDumper(os).dump(module);
}
