//===- Parameters.cpp - parameter declarations and checkpoint bindings ----===//
//
// A declaration inside `for l in 1..L` declares one tensor per layer. Each is
// made on first use: its shape is evaluated with `l` bound, and its binding is
// either a checkpoint tensor name ("h.{l}.ln_1.weight", `{l}` counting from
// 0 as checkpoints do), possibly stored transposed (`"..."ᵀ`), or a view of
// other parameters (a slice, a row, a concat, a transpose).
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "llvm/ADT/STLExtras.h"

using namespace xf::spec;

/// A chain of views deeper than this is not a model.
static constexpr unsigned kMaxBindingDepth = 64;

bool Elaborator::declareParameters(const std::vector<ParameterItem> &items,
                                   std::vector<LoopRange> &loops) {
  // A declaration that fails is reported and its name poisoned; the others go
  // on.
  for (const ParameterItem &item : items) {
    if (diags.atErrorLimit())
      return false;
    if (auto *decl = std::get_if<ParameterDecl>(&item)) {
      if (!declareParameter(*decl, loops) && !isGlobalName(decl->name))
        poisoned.insert(decl->name);
      continue;
    }
    const ParameterLoop &loop = *std::get<std::unique_ptr<ParameterLoop>>(item);
    bool shadows = isGlobalName(loop.var) || llvm::any_of(loops, [&](auto &l) {
                     return l.var == loop.var;
                   });
    std::optional<LoopRange> range;
    if (shadows)
      error(loop.loc,
            "loop variable '" + loop.var + "' is already a name in scope");
    else
      range = evalRange(loop.range, loop.var, loop.loc);
    if (!range) {
      poisonDeclarations(loop.body);
      continue;
    }
    loops.push_back(*range);
    bool ok = declareParameters(loop.body, loops);
    loops.pop_back();
    if (!ok)
      return false;
  }
  return true;
}

void Elaborator::poisonDeclarations(const std::vector<ParameterItem> &items) {
  for (const ParameterItem &item : items) {
    if (auto *decl = std::get_if<ParameterDecl>(&item))
      poisoned.insert(decl->name);
    else
      poisonDeclarations(std::get<std::unique_ptr<ParameterLoop>>(item)->body);
  }
}

bool Elaborator::declareParameter(const ParameterDecl &decl,
                                  const std::vector<LoopRange> &loops) {
  if (isGlobalName(decl.name)) {
    error(decl.loc, "'" + decl.name + "' is declared twice");
    auto family = families.find(decl.name);
    if (family != families.end())
      diags.note(family->second.decl->loc, "first declared here");
    else if (hyperparameterLocs.count(decl.name))
      diags.note(hyperparameterLocs[decl.name], "first declared here");
    return false;
  }
  std::vector<std::string> expected;
  for (const LoopRange &loop : loops)
    expected.push_back(loop.var);
  if (decl.indices != expected) {
    std::string want = expected.empty() ? "without an index"
                                        : "as " + decl.name + "[" +
                                              llvm::join(expected, ", ") + "]";
    return error(decl.loc, "'" + decl.name + "' must be written " + want +
                               ", after the loops it is declared in");
  }
  ParameterFamily &family = families[decl.name];
  family.decl = &decl;
  family.loops = loops;
  parameterOrder.push_back(&family);
  return true;
}

MaybeValue Elaborator::instantiate(ParameterFamily &family,
                                   llvm::ArrayRef<int64_t> indices,
                                   const Location &useLoc) {
  const ParameterDecl &decl = *family.decl;
  for (auto [index, loop] : llvm::zip(indices, family.loops))
    if (index < loop.lo || index > loop.hi)
      return error(useLoc, "index " + llvm::Twine(index) + " of '" + decl.name +
                               "' is outside 'for " + loop.var + " in " +
                               llvm::Twine(loop.lo) + ".." +
                               llvm::Twine(loop.hi) + "'"),
             std::nullopt;
  std::vector<int64_t> key(indices.begin(), indices.end());
  family.used = true;
  if (auto it = family.instances.find(key); it != family.instances.end())
    return Value::ofTensor(it->second);
  if (family.inProgress.count(key) || bindingDepth >= kMaxBindingDepth)
    return error(decl.loc,
                 "parameter '" + decl.name + "' is defined in terms of itself"),
           std::nullopt;

  // A binding is evaluated in its declaration's scope: its loops, no others.
  std::string label = decl.name;
  std::vector<std::pair<std::string, int64_t>> scope, positions;
  for (auto [index, loop] : llvm::zip(indices, family.loops)) {
    scope.emplace_back(loop.var, index);
    positions.emplace_back(loop.var, index - loop.lo);
  }
  if (!indices.empty())
    label +=
        "[" +
        llvm::join(llvm::map_range(indices,
                                   [](int64_t i) { return std::to_string(i); }),
                   ", ") +
        "]";
  std::swap(loopVars, scope);
  std::swap(templateIndices, positions);
  bool savedInBinding = std::exchange(inBinding, true);
  family.inProgress.insert(key);
  ++bindingDepth;

  std::optional<int> result;
  TensorType declared;
  bool shapeOk = true;
  for (const ExprPtr &dim : decl.shape) {
    std::optional<int64_t> size = evalInt(*dim, "a dimension");
    if (!size ||
        (*size < 1 &&
         !error(dim->getLoc(), "dimension " + llvm::Twine(*size) + " of '" +
                                   label + "' must be at least 1"))) {
      shapeOk = false;
      break;
    }
    declared.dims.push_back(Dim{*size, -1});
  }
  if (shapeOk &&
      checkElementCount(declared, decl.loc, "parameter '" + label + "'"))
    result = bindParameter(family, declared, label);

  --bindingDepth;
  family.inProgress.erase(key);
  inBinding = savedInBinding;
  std::swap(templateIndices, positions);
  std::swap(loopVars, scope);
  if (!result)
    return std::nullopt;
  family.instances[key] = *result;
  return Value::ofTensor(*result);
}

std::optional<int> Elaborator::bindParameter(ParameterFamily &family,
                                             const TensorType &declared,
                                             const std::string &label) {
  const ParameterDecl &decl = *family.decl;
  const ExprAST *binding = decl.binding.get();
  bool transposed = false;
  if (auto *t = llvm::dyn_cast<TransposeExprAST>(binding);
      t && llvm::isa<StringExprAST>(t->getOperand())) {
    binding = &t->getOperand();
    transposed = true;
  }
  if (auto *name = llvm::dyn_cast<StringExprAST>(binding))
    return bindCheckpoint(*name, transposed, declared, label, decl.loc);

  std::optional<int> view = evalTensor(*binding, "a parameter's binding");
  if (!view)
    return std::nullopt;
  if (typeOf(*view) != declared)
    return error(binding->getLoc(),
                 "parameter '" + label + "' is declared " + format(declared) +
                     " but its binding has shape " + format(typeOf(*view))),
           std::nullopt;
  return view;
}

std::optional<int> Elaborator::bindCheckpoint(const StringExprAST &name,
                                              bool transposed,
                                              const TensorType &declared,
                                              const std::string &label,
                                              const Location &declLoc) {
  std::optional<std::string> tensor = expandTemplate(name);
  if (!tensor)
    return std::nullopt;
  if (transposed && declared.rank() != 2)
    return error(name.getLoc(),
                 "only a matrix can be stored transposed, but '" + label +
                     "' is " + format(declared)),
           std::nullopt;
  TensorType stored = declared;
  if (transposed)
    std::swap(stored.dims[0], stored.dims[1]);

  int param;
  if (auto it = checkpoints.find(*tensor); it != checkpoints.end()) {
    param = it->second;
    if (typeOf(param) != stored) {
      error(name.getLoc(), "checkpoint tensor '" + *tensor +
                               "' is bound here with stored shape " +
                               format(stored) + " but before with " +
                               format(typeOf(param)));
      diags.note(node(param).loc, "first bound here");
      return std::nullopt;
    }
  } else {
    Node n;
    n.kind = OpKind::Parameter;
    n.type = stored;
    n.loc = declLoc;
    n.name = *tensor;
    n.origin = "parameter '" + label + "' declared at " + at(declLoc);
    std::optional<int> id = addNode(std::move(n));
    if (!id)
      return std::nullopt;
    param = checkpoints[*tensor] = *id;
  }
  if (!transposed)
    return param;
  return makeTranspose(param, declLoc);
}

std::optional<std::string>
Elaborator::expandTemplate(const StringExprAST &name) {
  llvm::StringRef text = name.getText();
  auto errorAt = [&](size_t offset, const llvm::Twine &message) {
    Location loc = name.getLoc();
    loc.col += 1 + int(offset); // past the opening quote
    error(loc, message);
    return std::nullopt;
  };
  if (!inBinding)
    return errorAt(0, "checkpoint names belong in the 'parameters' block");
  if (text.empty())
    return errorAt(0, "a checkpoint tensor name cannot be empty");
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}')
      return errorAt(i, "'}' without '{' in a checkpoint name");
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    size_t close = text.find('}', i);
    if (close == llvm::StringRef::npos)
      return errorAt(i, "'{' without '}' in a checkpoint name");
    llvm::StringRef var = text.slice(i + 1, close).trim();
    auto it =
        llvm::find_if(templateIndices, [&](auto &p) { return p.first == var; });
    if (it == templateIndices.end())
      return errorAt(i + 1, "'{" + var +
                                "}' is not a loop variable of this parameter");
    out += std::to_string(it->second);
    i = close;
  }
  return out;
}

void Elaborator::warnUnusedParameters() {
  for (const ParameterFamily *family : parameterOrder)
    if (!family->used)
      diags.warning(family->decl->loc, "parameter '" + family->decl->name +
                                           "' is declared but never used");
}
