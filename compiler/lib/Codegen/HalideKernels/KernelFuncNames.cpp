//===- KernelFuncNames.cpp - Funcs and GPU kernels named after their kernel ===//
//
// KernelFuncNames.h says why. Halide's Func(name) and its GPU offload both pass names through
// Internal::unique_name, whose counters are process-wide (one per 14-bit hash of a name, so
// even a name never used before can come back suffixed). The Funcs sidestep it by building
// their Internal::Function by name; the kernels, whose names the offload pass picks, are
// renamed in the lowered module: in each launch (halide_cuda_run's kernel argument) and in
// the PTX the module carries as a constant buffer.
//
//===----------------------------------------------------------------------===//

#include "KernelFuncNames.h"

#include "KernelPipelines.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

using namespace Halide;
using namespace Halide::Internal;

namespace mlir::xf {
namespace {

thread_local KernelFuncScope *innermostScope = nullptr;

} // namespace

KernelFuncScope::KernelFuncScope(std::string function)
    : function(std::move(function)), outer(innermostScope) {
  innermostScope = this;
}

KernelFuncScope::~KernelFuncScope() { innermostScope = outer; }

std::string KernelFuncScope::nameFor(llvm::StringRef role) {
  std::string base = function + "_" + role.str(), name = base;
  for (int n = 2; !used.insert(name).second; ++n)
    name = base + "_" + std::to_string(n);
  return name;
}

Func kernelFunc(llvm::StringRef role) {
  if (!innermostScope)
    return Func(role.str());
  return Func(Function(innermostScope->nameFor(role)));
}

namespace {

/// The GPU kernels' block loops in the order the offload pass meets them (the outermost
/// GPU loop of each kernel).
class KernelLoops : public IRVisitor {
public:
  std::vector<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const For *loop) override {
    if (loop->for_type == ForType::GPUBlock || loop->for_type == ForType::GPUThread ||
        loop->for_type == ForType::GPULane) {
      names.push_back(loop->name); // the kernel's loop: what is inside is the kernel's
      return;
    }
    IRVisitor::visit(loop);
  }
};

/// halide_cuda_run's kernel names, in the order of the launches in the code.
class KernelLaunches : public IRVisitor {
public:
  std::vector<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const Call *call) override {
    if (call->name == "halide_cuda_run" && call->args.size() > 1)
      if (const auto *name = call->args[1].as<StringImm>())
        names.push_back(name->value);
    IRVisitor::visit(call);
  }
};

/// The launches with their kernels renamed, and the PTX buffer's uses swapped for `ptx`.
class RenameKernels : public IRMutator {
public:
  RenameKernels(const std::map<std::string, std::string> &renamed, Buffer<> oldPtx, Buffer<> newPtx)
      : renamed(renamed), oldPtx(std::move(oldPtx)), newPtx(std::move(newPtx)) {}

private:
  using IRMutator::visit;
  Expr visit(const Call *call) override {
    Expr mutated = IRMutator::visit(call);
    const auto *c = mutated.as<Call>();
    if (!c || (c->name != "halide_cuda_run" && c->name != "halide_cuda_initialize_kernels"))
      return mutated;
    std::vector<Expr> args = c->args;
    if (c->name == "halide_cuda_run") {
      if (const auto *name = args[1].as<StringImm>(); name && renamed.count(name->value))
        args[1] = StringImm::make(renamed.at(name->value));
    } else if (args.size() == 3) { // (state, source, size): the PTX's size
      args[2] = make_const(args[2].type(), int64_t(newPtx.number_of_elements()));
    }
    return Call::make(c->type, c->name, args, c->call_type, c->func, c->value_index, c->image,
                      c->param);
  }
  Expr visit(const Variable *v) override {
    if (oldPtx.defined() && v->image.defined() && v->image.same_as(oldPtx))
      return Variable::make(v->type, v->name, newPtx, v->param, v->reduction_domain);
    // A parallel task is referred to as the variable ::<closure>.
    if (llvm::StringRef(v->name).starts_with("::"))
      if (auto it = renamed.find(v->name.substr(2)); it != renamed.end())
        return Variable::make(v->type, "::" + it->second, v->image, v->param, v->reduction_domain);
    return v;
  }

  const std::map<std::string, std::string> &renamed;
  Buffer<> oldPtx, newPtx;
};

/// Halide's name `base` or `base__<counter>` as (base, counter), the counter -1 without one.
std::pair<std::string, long> splitCounter(llvm::StringRef name) {
  size_t at = name.rfind("__");
  long counter = 0;
  if (at == llvm::StringRef::npos || at + 2 == name.size() ||
      name.drop_front(at + 2).getAsInteger(10, counter))
    return {name.str(), -1};
  return {name.take_front(at).str(), counter};
}

/// The parallel loops' closures (CPU: `<function>_par_for_<loop>`, with Halide's counter
/// where the process had made the name before) renamed: per base name in the order of
/// Halide's counters, the first without a suffix and the n-th repeat with `__<n>`.
void nameClosures(const Module &lowered, std::map<std::string, std::string> &renamed) {
  std::map<std::string, std::vector<std::pair<long, std::string>>> byBase;
  for (const LoweredFunc &f : lowered.functions())
    if (f.name.find("_par_for_") != std::string::npos) {
      auto [base, counter] = splitCounter(f.name);
      byBase[base].push_back({counter, f.name});
    }
  for (auto &[base, names] : byBase) {
    std::sort(names.begin(), names.end());
    for (size_t n = 0; n < names.size(); ++n)
      renamed[names[n].second] = n == 0 ? base : base + "__" + std::to_string(n);
  }
}

bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_' || c == '$'; }

/// `ptx` with each identifier `old` or `old_param_N` of `renamed` renamed.
std::string renameInPtx(llvm::StringRef ptx, const std::map<std::string, std::string> &renamed) {
  std::string out;
  out.reserve(ptx.size());
  for (size_t i = 0; i < ptx.size();) {
    if (!isIdentifierChar(ptx[i])) {
      out += ptx[i++];
      continue;
    }
    size_t end = i;
    while (end < ptx.size() && isIdentifierChar(ptx[end]))
      ++end;
    llvm::StringRef token = ptx.slice(i, end);
    std::string replaced = token.str();
    for (const auto &[from, to] : renamed) {
      if (token == from) {
        replaced = to;
        break;
      }
      if (token.starts_with(from + "_param_")) {
        replaced = to + token.drop_front(from.size()).str();
        break;
      }
    }
    out += replaced;
    i = end;
  }
  return out;
}

llvm::Error namingError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "naming the functions of '" + message);
}

/// The GPU kernels' new names into `renamed` (deterministicKernelNames), or an error.
llvm::Error nameGpuKernels(const Module &lowered, const std::vector<std::string> &launched,
                           std::map<std::string, std::string> &renamed) {
  KernelLoops loops;
  if (lowered.get_conceptual_stmt().defined())
    lowered.get_conceptual_stmt().accept(&loops);
  if (loops.names.size() != launched.size())
    return namingError(lowered.name() + "': " + llvm::Twine(launched.size()) + " launches but " +
                       llvm::Twine(loops.names.size()) + " GPU loops");
  // Halide's name of a kernel: c_print_name(unique_name("kernel_" + loop)), i.e. the prefix
  // as it is, or with '$' made '_' and "$<counter>" appended. Ours: a loop's first kernel
  // takes the former, its n-th repeat the latter with n (a fresh process's names).
  std::map<std::string, int> repeats;
  for (size_t i = 0; i < loops.names.size(); ++i) {
    std::string prefix = "kernel_" + loops.names[i], sanitized = prefix;
    std::replace(sanitized.begin(), sanitized.end(), '$', '_');
    const std::string &halide = launched[i];
    std::string suffixed = c_print_name(sanitized) + "__";
    if (halide != c_print_name(prefix) &&
        !(llvm::StringRef(halide).starts_with(suffixed) &&
          llvm::all_of(llvm::StringRef(halide).drop_front(suffixed.size()), llvm::isDigit)))
      return namingError(lowered.name() + "': launch " + halide + " is not of loop " +
                         loops.names[i]);
    int n = repeats[prefix]++;
    std::string name = n == 0 ? c_print_name(prefix) : suffixed + std::to_string(n);
    if (!renamed.emplace(halide, name).second)
      return namingError(lowered.name() + "': kernel " + halide + " launched twice");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Module> deterministicKernelNames(const Module &lowered) {
  KernelLaunches launches;
  for (const LoweredFunc &f : lowered.functions())
    f.body.accept(&launches);
  std::map<std::string, std::string> renamed;
  nameClosures(lowered, renamed);
  Buffer<> ptx, newPtx;
  if (!launches.names.empty()) {
    if (llvm::Error err = nameGpuKernels(lowered, launches.names, renamed))
      return std::move(err);
    ptx = lowered.get_device_code_buffer();
    if (!ptx.defined())
      return namingError(lowered.name() + "': no PTX in the module");
    llvm::StringRef text(reinterpret_cast<const char *>(ptx.data()), ptx.size_in_bytes());
    const bool terminated = text.ends_with(llvm::StringRef("\0", 1));
    std::string newText = renameInPtx(terminated ? text.drop_back() : text, renamed);
    if (terminated)
      newText.push_back('\0');
    Buffer<uint8_t> renamedPtx(int(newText.size()), ptx.name());
    std::memcpy(renamedPtx.data(), newText.data(), newText.size());
    newPtx = renamedPtx;
  }
  if (renamed.empty())
    return lowered;

  RenameKernels rename(renamed, ptx, newPtx);
  Module result(lowered.name(), lowered.target(), lowered.get_metadata_name_map());
  for (const Buffer<> &b : lowered.buffers())
    result.append(ptx.defined() && b.same_as(ptx) ? newPtx : b);
  for (const LoweredFunc &f : lowered.functions()) {
    LoweredFunc copy = f;
    if (auto it = renamed.find(f.name); it != renamed.end())
      copy.name = it->second;
    copy.body = rename.mutate(f.body);
    result.append(copy);
  }
  for (const Module &sub : lowered.submodules())
    result.append(sub);
  result.set_any_strict_float(lowered.any_strict_float());
  result.set_conceptual_code_stmt(lowered.get_conceptual_stmt());
  return result;
}

llvm::Expected<Module> lowerCudaPipeline(Pipeline pipeline, const std::vector<Argument> &arguments,
                                         const std::string &function, const Target &target) {
  std::optional<Module> lowered;
  if (llvm::Error err = catchHalideErrors("lowering kernel '" + function + "'", [&] {
        lowered.emplace(pipeline.compile_to_module(arguments, function, target));
      }))
    return std::move(err);
  return deterministicKernelNames(*lowered);
}

} // namespace mlir::xf
