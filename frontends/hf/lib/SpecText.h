//===- SpecText.h - an imported model, written as a spec ---*- C++ -*-===//
//
// What a family fills in: hyperparameters (each with the config key it came
// from), parameters bound to checkpoint tensors or views of them, and the
// algorithm's lines. render() writes the spec as examples/*.xf are written:
// per-layer parameters in one `for l in 1..L` block, comments aligned.
//
//===----------------------------------------------------------------------===//

#ifndef XF_HF_SPECTEXT_H
#define XF_HF_SPECTEXT_H

#include <cstdint>
#include <string>
#include <vector>

namespace xf::hf {

struct Hyperparameter {
  std::string name, value, comment;
};

struct Parameter {
  std::string name;  // `W_q`; declared `W_q[l]` when perLayer
  std::string shape; // `d_e, H*d_k`
  std::string
      tensor; // the checkpoint name (`{l}` for the 0-based layer), or empty
  bool transposed = false; // stored [d_out, d_in] (nn.Linear)
  std::string view;        // a view of other parameters, when `tensor` is empty
  bool perLayer = false;
  std::string comment;
};

struct SpecText {
  std::vector<std::string> header; // comment lines above `model`
  std::string model;
  std::vector<Hyperparameter> hyperparameters;
  std::vector<Parameter> parameters;
  std::string algorithm; // `DTransformer(x)`
  std::vector<std::string>
      body;           // the algorithm's lines, unindented but for nesting
  int64_t layers = 0; // L, to expand `{l}`

  void hyper(std::string name, std::string value, std::string comment) {
    hyperparameters.push_back(
        {std::move(name), std::move(value), std::move(comment)});
  }
  void param(Parameter p) { parameters.push_back(std::move(p)); }

  std::string render() const;
  /// Every checkpoint tensor the spec binds, `{l}` expanded for l = 0 .. L-1.
  std::vector<std::string> tensorNames() const;
};

/// `d_e, H*d_k` as a shape, `"name"ᵀ` as a binding: the helpers the families
/// share.
Parameter weight(std::string name, std::string shape, std::string tensor,
                 bool perLayer, bool transposed = false,
                 std::string comment = "");
/// A number as the spec writes it: the shortest text that reads back as the
/// same double.
std::string formatNumber(double value);

} // namespace xf::hf

#endif // XF_HF_SPECTEXT_H
