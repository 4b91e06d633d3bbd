//===- SpecText.cpp - an imported model, written as a spec ----------------===//

#include "SpecText.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace xf::hf;

Parameter xf::hf::weight(std::string name, std::string shape,
                         std::string tensor, bool perLayer, bool transposed,
                         std::string comment) {
  Parameter p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.tensor = std::move(tensor);
  p.perLayer = perLayer;
  p.transposed = transposed;
  p.comment = std::move(comment);
  return p;
}

std::string xf::hf::formatNumber(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  std::string s = text;
  // Whole numbers up to 10^15 in full (100000.0, not 1e+05); exponents without
  // '+' and leading zeros (1e-5, not 1e-05).
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
    s = text;
  }
  size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
    bool negative = exponent[0] == '-';
    size_t digits = exponent.find_first_not_of("+-0");
    s = mantissa + "e" + (negative ? "-" : "") + exponent.substr(digits);
  }
  // The spec reads an integer-looking value as a size; a float stays a float.
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

/// Columns on screen: UTF-8 continuation bytes and combining marks (X̃'s tilde)
/// take none.
static size_t displayWidth(const std::string &s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    bool continuation = (c & 0xC0) == 0x80;
    bool combining =
        (c == 0xCC || (c == 0xCD && i + 1 < s.size() &&
                       (unsigned char)s[i + 1] < 0xB0)); // U+0300..U+036F
    if (!continuation && !combining)
      ++width;
  }
  return width;
}

/// Lines with their comments aligned one column past the longest code.
static void
writeAligned(llvm::raw_ostream &os,
             const std::vector<std::pair<std::string, std::string>> &lines) {
  size_t column = 0;
  for (const auto &[code, comment] : lines)
    if (!comment.empty())
      column = std::max(column, displayWidth(code));
  for (const auto &[code, comment] : lines) {
    os << code;
    if (!comment.empty())
      os.indent(column - displayWidth(code) + 2) << "# " << comment;
    os << "\n";
  }
}

static std::string declaration(const Parameter &p) {
  std::string text =
      p.name + (p.perLayer ? "[l]" : "") + " ∈ [" + p.shape + "] = ";
  if (p.tensor.empty())
    return text + p.view;
  return text + "\"" + p.tensor + "\"" + (p.transposed ? "ᵀ" : "");
}

std::string SpecText::render() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  for (const std::string &line : header)
    os << (line.empty() ? "#" : "# " + line) << "\n";
  os << "model " << model << "\n\nhyperparameters\n";
  std::vector<std::pair<std::string, std::string>> lines;
  for (const Hyperparameter &h : hyperparameters)
    lines.push_back({"  " + h.name + " = " + h.value, h.comment});
  writeAligned(os, lines);

  os << "\nparameters\n";
  lines.clear();
  bool inLoop = false;
  for (const Parameter &p : parameters) {
    if (p.perLayer != inLoop)
      lines.push_back({inLoop ? "  end" : "  for l in 1..L", ""});
    inLoop = p.perLayer;
    lines.push_back(
        {std::string(inLoop ? "    " : "  ") + declaration(p), p.comment});
  }
  if (inLoop)
    lines.push_back({"  end", ""});
  writeAligned(os, lines);

  os << "\nalgorithm " << algorithm << "\n";
  for (const std::string &line : body)
    os << "  " << line << "\n";
  os << "end\n";
  return out;
}

std::vector<std::string> SpecText::tensorNames() const {
  std::vector<std::string> names;
  for (const Parameter &p : parameters) {
    if (p.tensor.empty())
      continue;
    if (!p.perLayer) {
      names.push_back(p.tensor);
      continue;
    }
    size_t at = p.tensor.find("{l}");
    for (int64_t l = 0; l < layers; ++l)
      names.push_back(at == std::string::npos
                          ? p.tensor
                          : p.tensor.substr(0, at) + std::to_string(l) +
                                p.tensor.substr(at + 3));
  }
  return names;
}
