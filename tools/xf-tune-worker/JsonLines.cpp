//===- JsonLines.cpp - One JSON object per line on stdout -----------------===//

#include "JsonLines.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace xftune {

void emitLine(llvm::function_ref<void(llvm::json::OStream &)> attributes) {
  llvm::raw_ostream &os = llvm::outs();
  {
    llvm::json::OStream json(os);
    json.object([&] { attributes(json); });
  }
  os << '\n';
  os.flush();
}

void numberAttribute(llvm::json::OStream &json, llvm::StringRef key, double value) {
  if (std::isfinite(value))
    json.attribute(key, value);
  else
    json.attribute(key, nullptr);
}

} // namespace xftune
