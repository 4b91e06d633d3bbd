//===- Graph.h - the checked, unrolled model that Sema produces -*- C++ -*-===//
//
// Sema turns a ModuleAST into a Graph: hyperparameters evaluated, loops
// unrolled, names resolved, every value typed with a shape. Nodes are the
// paper's primitives, one per xf op, in an order where operands come first.
// MLIRGen walks it once; nothing it finds can be the user's fault.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_GRAPH_H
#define XF_SPEC_GRAPH_H

#include "xf/Spec/Token.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace xf::spec {

/// One axis: a static size, or the length ℓ of input sequence `seq`.
struct Dim {
  int64_t size = 0;
  int seq = -1;
  bool isSequence() const { return seq >= 0; }
  bool operator==(const Dim &o) const { return size == o.size && seq == o.seq; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

/// A tensor of f32 values, or a sequence of token ids (`[ℓ]`, i32). Rank 0
/// is a number known only when the model runs (`length(x)` and arithmetic on
/// it), an f64.
struct TensorType {
  llvm::SmallVector<Dim, 2> dims;
  bool isTokens = false;

  unsigned rank() const { return dims.size(); }
  bool isRuntimeNumber() const { return !isTokens && dims.empty(); }
  bool isStatic() const;
  bool operator==(const TensorType &o) const {
    return dims == o.dims && isTokens == o.isTokens;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// A hyperparameter's value: the int sizes of the model, or a float like ε.
struct Scalar {
  bool isFloat = false;
  int64_t i = 0;
  double f = 0;
  double asDouble() const { return isFloat ? f : double(i); }
};

enum class OpKind {
  Input,     // a token sequence, argument of @forward
  Parameter, // a checkpoint tensor
  Transpose,
  Slice,      // [offset, offset + size) along axis
  Row,        // row `offset` of a matrix
  Concat,     // along axis
  TokenEmbed, // Alg. 1
  PosEmbed,   // Alg. 2
  Sinusoidal, // fixed positions, base
  MatMul,
  Add,       // rank-1 rhs broadcast over rows
  LayerNorm, // Alg. 6: x, γ?, β?
  RmsNorm,   // x, γ?
  Relu,
  Gelu,
  Silu,
  Hadamard, // A ⊙ B, elementwise
  Scale,    // c · A: every element times `scale` (and operand 1, a run-time
            // number, when present)
  Softmax,
  Attention,          // Alg. 4 on projected Q, K, V
  MultiHeadAttention, // Alg. 5: x, z?, W_q, b_q?, W_k, b_k?, W_v, b_v?, W_o,
                      // b_o?
  Unembed,            // Alg. 7
  // Numbers known only when the model runs (rank 0):
  Length,     // length(x): the number of tokens of input operand 0
  Constant,   // `scale`, a number in arithmetic with run-time numbers
  Arithmetic, // operands[0] `arithmetic` operands[1]
};

enum class MaskKind { Bidirectional, Causal, Cross };
/// Rotary position embeddings of MHA: none, GGUF's adjacent pairs, or HF's
/// halves.
enum class RopePairing { None, Adjacent, Halves };

/// The operand slots of a MultiHeadAttention node.
enum MhaOperand {
  MhaX,
  MhaZ,
  MhaWq,
  MhaBq,
  MhaWk,
  MhaBk,
  MhaWv,
  MhaBv,
  MhaWo,
  MhaBo,
  MhaNumOperands
};

struct Node {
  OpKind kind;
  llvm::SmallVector<int, 4> operands; // node ids; -1 for an absent optional
  TensorType type;
  Location loc;
  std::string name;   // Parameter: the checkpoint tensor name
  std::string origin; // for diagnostics: "parameter 'W_q[2]'", "'layer_norm'"
  int64_t axis = 0, offset = 0, heads = 0;
  int64_t kvHeads = 0; // MultiHeadAttention: H_kv when grouped, else 0
  double epsilon = 0, base = 0, scale = 0;
  RopePairing rope = RopePairing::None; // MultiHeadAttention; base is its base
  bool hasScale = false;
  bool geluTanh = false;
  char arithmetic = 0; // Arithmetic: '+', '-', '*' or '/'
  MaskKind mask = MaskKind::Bidirectional;
};

struct Graph {
  std::string modelName;
  std::vector<std::pair<std::string, Scalar>> hyperparameters;
  std::vector<std::string> inputNames; // `z, x` of EDTransformer(z, x)
  std::vector<Node> nodes;
  int output = -1;
  Location loc; // of the algorithm

  bool outputIsLogits() const {
    return output >= 0 && nodes[output].kind == OpKind::Unembed;
  }
};

/// `[ℓ_x, 768]`: sequence axes are named after the input they follow.
std::string formatType(const TensorType &type,
                       llvm::ArrayRef<std::string> inputNames);

} // namespace xf::spec

#endif // XF_SPEC_GRAPH_H
