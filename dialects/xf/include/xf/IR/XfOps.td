//===- XfOps.td - xf operations ----------------------------*- tablegen -*-===//
//
// One op per primitive of the paper. Shapes in descriptions use the paper's
// names; `ℓ` (query length) and `ℓ_z` (context length) may be dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef XF_OPS_TD
#define XF_OPS_TD

include "xf/IR/XfDialect.td"
include "xf/IR/XfAttrs.td"
include "xf/IR/XfScheduleAttrs.td"
include "xf/IR/XfKernelAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Xf_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Xf_Matrix : 2DTensorOf<[AnyFloat]>;
def Xf_Vector : 1DTensorOf<[AnyFloat]>;
def Xf_TokenIds : 1DTensorOf<[AnySignlessInteger]>;

// A packed batch's sequence lengths (docs/dialect.md "Packed batches"): the
// rows of the tensors an op reads are n sequences back to back, sequence i
// the next `segments[i]` rows. Always `tensor<?xi64>` (n is known when the
// model runs), so the assembly formats need not spell it.
def Xf_Segments : Type<
    CPred<"$_self == ::mlir::RankedTensorType::get({::mlir::ShapedType::kDynamic}, "
          "::mlir::IntegerType::get($_self.getContext(), 64))">,
    "sequence lengths tensor<?xi64>"> {
  let builderCall = "::mlir::RankedTensorType::get({::mlir::ShapedType::kDynamic}, "
                    "$_builder.getI64Type())";
}

class Xf_PureOp<string mnemonic, list<Trait> traits = []>
    : Xf_Op<mnemonic, !listconcat([Pure], traits)> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parameters and data movement
//===----------------------------------------------------------------------===//

def Xf_ParameterOp : Xf_Op<"parameter", [Pure]> {
  let summary = "a learned tensor, bound to a checkpoint tensor name";
  let description = [{
    Produces the checkpoint tensor `name` with the stored shape of the result
    type. The runtime binds it when the executable loads its weights.

    ```mlir
    %wte = xf.parameter "wte.weight" : tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Xf_TransposeOp : Xf_PureOp<"transpose"> {
  let summary = "matrix transpose: [m, n] → [n, m]";
  let arguments = (ins Xf_Matrix:$input);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Xf_ConcatOp : Xf_PureOp<"concat"> {
  let summary = "concatenation along one axis (packs per-head matrices)";
  let description = [{
    ```mlir
    %wq = xf.concat %q0, %q1 axis 1 : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Variadic<Xf_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat =
      "$inputs `axis` $axis attr-dict `:` type($inputs) `->` type($result)";
}

def Xf_SliceOp : Xf_PureOp<"slice"> {
  let summary = "a static slice [offset, offset+size) along one axis";
  let description = [{
    Cuts a fused checkpoint tensor into the paper's matrices, e.g. GPT-2's
    `c_attn.weight : [d_e, 3·d_e]` into W_q, W_k, W_v.

    ```mlir
    %wk = xf.slice %wqkv axis 1 offset 768 : tensor<768x2304xf32> -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$input, I64Attr:$axis, I64Attr:$offset);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis `offset` $offset attr-dict `:` "
                       "type($input) `->` type($result)";
}

def Xf_RowOp : Xf_PureOp<"row"> {
  let summary = "one row of a matrix: W[i, :] (e.g. BERT's token-type 0)";
  let arguments = (ins Xf_Matrix:$input, I64Attr:$index);
  let results = (outs Xf_Vector:$result);
  let assemblyFormat =
      "$input `[` $index `]` attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Embeddings (Alg. 1, Alg. 2, sinusoidal)
//===----------------------------------------------------------------------===//

def Xf_TokenEmbedOp : Xf_PureOp<"token_embed"> {
  let summary = "Alg. 1: e_t = W_e[x[t], :]";
  let description = [{
    Gathers one row of the embedding table `[N_V, d_e]` per token id:
    `[ℓ] → [ℓ, d_e]`.

    ```mlir
    %e = xf.token_embed %wte[%x] : tensor<50257x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$table, Xf_TokenIds:$tokens);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$table `[` $tokens `]` attr-dict `:` type($table) `,` "
                       "type($tokens) `->` type($result)";
}

def Xf_PositionalEmbedOp : Xf_PureOp<"pos_embed", [AttrSizedOperandSegments]> {
  let summary = "Alg. 2: learned positional embedding, rows offset .. offset+ℓ-1 of W_p";
  let description = [{
    Returns rows `offset + t` (t = 0 .. ℓ-1) of the table `[ℓ_max, d_e]`, one per
    token of `tokens`. `offset` (default 0) is the position of the first token,
    used when decoding with a KV cache. With `segments` (a packed batch) the
    positions restart at 0 at the first token of every sequence.

    ```mlir
    %p = xf.pos_embed %wpe for %x : tensor<1024x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
    %b = xf.pos_embed %wpe for %x segments %n : tensor<1024x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$table, Xf_TokenIds:$tokens,
                       Optional<Index>:$offset, Optional<Xf_Segments>:$segments);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$table `for` $tokens (`offset` $offset^)? (`segments` $segments^)? "
                       "attr-dict `:` "
                       "type($table) `,` type($tokens) `->` type($result)";
}

def Xf_SinusoidalEmbedOp : Xf_PureOp<"sinusoidal_embed", [AttrSizedOperandSegments]> {
  let summary = "fixed sinusoidal positions of Vaswani et al.";
  let description = [{
    `P[t, 2i] = sin(p / base^(2i/d_e))`, `P[t, 2i+1] = cos(p / base^(2i/d_e))`
    with `p = offset + t`: `[ℓ] → [ℓ, d_e]`, `d_e` even. With `segments`, `t`
    counts from each sequence's first token.

    ```mlir
    %p = xf.sinusoidal_embed for %x base 1.0e+04 : tensor<?xi32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Xf_TokenIds:$tokens, Optional<Index>:$offset,
                       Optional<Xf_Segments>:$segments, F64Attr:$base);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "`for` $tokens (`offset` $offset^)? (`segments` $segments^)? `base` $base attr-dict "
                       "`:` type($tokens) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Xf_LinearOp : Xf_PureOp<"linear"> {
  let summary = "affine map y = x·W (+ b), rows are positions";
  let description = [{
    `x : [ℓ, d_in]`, `W : [d_in, d_out]` (or `[d_out, d_in]` with
    `transpose_weight`, the nn.Linear layout), optional `b : [d_out]`;
    result `[ℓ, d_out]`. This is the paper's `W x + b` in row layout.

    ```mlir
    %y = xf.linear %x, %w, %b : tensor<?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32> -> tensor<?x2304xf32>
    %z = xf.linear %x, %w transpose_weight : tensor<?x768xf32>, tensor<3072x768xf32> -> tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$weight,
                       Optional<Xf_Vector>:$bias, UnitAttr:$transpose_weight);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? (`transpose_weight` $transpose_weight^)? "
                       "attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? "
                       "`->` type($result)";
}

def Xf_MatmulOp : Xf_PureOp<"matmul"> {
  let summary = "matrix product A·B, or A·Bᵀ with transpose_rhs";
  let arguments = (ins Xf_Matrix:$lhs, Xf_Matrix:$rhs, UnitAttr:$transpose_rhs);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$lhs `,` $rhs (`transpose_rhs` $transpose_rhs^)? attr-dict "
                       "`:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Xf_AddOp : Xf_PureOp<"add"> {
  let summary = "elementwise sum (residual), rank-1 rhs broadcast over rows";
  let description = [{
    `[ℓ, d] + [ℓ, d]` or `[ℓ, d] + [d]` (a bias added to every row).
  }];
  let arguments = (ins Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) "
                       "`->` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalisation (Alg. 6 and RMSNorm)
//===----------------------------------------------------------------------===//

def Xf_LayerNormOp : Xf_PureOp<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "Alg. 6: (x − mean) / sqrt(var + ε) ⊙ γ + β, per row";
  let description = [{
    Normalises each row of `[ℓ, d_e]`. `γ` and `β` (`[d_e]`) come together or
    not at all (seed 000's LayerNorm has neither).

    ```mlir
    %y = xf.layer_norm %x gamma %g beta %b eps 1.0e-05 : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x768xf32>
    %z = xf.layer_norm %x eps 1.0e-05 : tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$input, Optional<Xf_Vector>:$gamma,
                       Optional<Xf_Vector>:$beta, F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input (`gamma` $gamma^ `beta` $beta)? `eps` $epsilon attr-dict "
                       "`:` type($input) (`,` type($gamma)^ `,` type($beta))? "
                       "`->` type($result)";
}

def Xf_RmsNormOp : Xf_PureOp<"rms_norm"> {
  let summary = "RMSNorm: x / sqrt(mean(x²) + ε) ⊙ γ, per row";
  let arguments = (ins Xf_FloatTensor:$input, Optional<Xf_Vector>:$gamma,
                       F64Attr:$epsilon);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input (`gamma` $gamma^)? `eps` $epsilon attr-dict "
                       "`:` type($input) (`,` type($gamma)^)? `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Attention (Alg. 3–5)
//===----------------------------------------------------------------------===//

def Xf_AttentionOp : Xf_PureOp<"attention", [AttrSizedOperandSegments]> {
  let summary = "Alg. 4 on projected inputs: softmax(scale·Q·Kᵀ + mask)·V per head";
  let description = [{
    `Q : [ℓ, H·d_k]`, `K : [ℓ_z, H_kv·d_k]`, `V : [ℓ_z, H_kv·d_v]` → `[ℓ, H·d_v]`;
    query head `h` uses columns `h·d_k ..` of Q and key/value head
    `g = h / (H / H_kv)`: columns `g·d_k ..` of K and `g·d_v ..` of V.
    `kv_heads` (H_kv, grouped-query attention) defaults to H and must divide
    it. `scale` defaults to `1/sqrt(d_k)`. With `causal`, query `t` sees keys
    `t' ≤ t + (ℓ_z − ℓ)` (so `ℓ_z ≥ ℓ`; equal lengths without a cache).

    `rope` with `base` (xf-fuse-rope-attention): every head of Q and K is
    first rotated as xf.rope does, query row `t` at position `t + (ℓ_z − ℓ)`
    and key row `s` at position `s` — the positions of self-attention, with or
    without a KV cache. The kernel rotates rows as it loads them.

    `segments` (a packed batch): Q's rows are n sequences back to back, and
    every sequence is one attention as above over its own rows (its mask,
    its positions from 0); no row sees another sequence's. Self-attention's
    keys have the queries' segments; `cross` attention takes the keys' as
    `key_segments` (query sequence i attends to context sequence i).

    ```mlir
    %o = xf.attention causal heads 12 %q, %k, %v : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
    %p = xf.attention causal heads 12 %q, %k, %v segments %n : ...
    %c = xf.attention cross heads 8 %q, %k, %v segments %n key_segments %nz : ...
    %r = xf.attention causal heads 9 kv_heads 3 rope adjacent base 1.0e+05 %q, %k, %v : ...
    ```

    `schedule` (`#xf.attention_schedule`) is the CPU kernel's, `gpu_schedule`
    (`#xf.gpu_attention_schedule`) the CUDA kernels' (xf-assign-schedules
    writes it for a CUDA target; the tuner may replace it).
  }];
  let arguments = (ins Xf_Matrix:$query, Xf_Matrix:$key, Xf_Matrix:$value,
                       Optional<Xf_Segments>:$segments,
                       Optional<Xf_Segments>:$key_segments,
                       Xf_MaskKind:$mask, I64Attr:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<Xf_RopePairing>:$rope,
                       OptionalAttr<F64Attr>:$rope_base,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<Xf_AttentionScheduleAttr>:$schedule,
                       OptionalAttr<Xf_GpuAttentionScheduleAttr>:$gpu_schedule);
  let results = (outs Xf_Matrix:$result);
  let extraClassDeclaration = [{
    /// H_kv: heads of K and V (grouped-query attention), H when absent.
    int64_t getKeyValueHeads() { return getKvHeads().value_or(getHeads()); }
  }];
  let assemblyFormat = "$mask `heads` $heads (`kv_heads` $kv_heads^)? "
                       "(`rope` $rope^ `base` $rope_base)? $query `,` $key `,` $value "
                       "(`segments` $segments^)? (`key_segments` $key_segments^)? "
                       "(`scale` $scale^)? attr-dict `:` type($query) `,` type($key) "
                       "`,` type($value) `->` type($result)";
}

def Xf_MultiHeadAttentionOp
    : Xf_PureOp<"mha", [AttrSizedOperandSegments]> {
  let summary = "Alg. 5 MHAttention: H heads with their projections and W_o";
  let description = [{
    Self-attention over `x : [ℓ, d_x]` (mask `bidirectional` or `causal`), or
    cross-attention from `x` to a `context z : [ℓ_z, d_z]` (mask `cross`).
    Weights in row layout: `W_q : [d_x, H·d_k]`, `W_k : [d_z, H·d_k]`,
    `W_v : [d_z, H·d_v]`, `W_o : [H·d_v, d_out]`, each with an optional bias
    of its output width. With `transpose_weights` every W is stored
    `[d_out, d_in]` (nn.Linear). Result `[ℓ, d_out]`.

    `kv_heads` (grouped-query attention): W_k and W_v have `H_kv·d_k` and
    `H_kv·d_v` columns and query head `h` uses key/value head `h / (H / H_kv)`.
    `rope` with `base`: rotary position embeddings (xf.rope) applied to
    every head of Q and K after their projections, at absolute positions.
    `segments` / `key_segments`: a packed batch, as for xf.attention.

    ```mlir
    %y = xf.mha causal heads 12 %x q %wq, %bq k %wk, %bk v %wv, %bv o %wo, %bo
           : (tensor<?x768xf32>, ...) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Optional<Xf_Matrix>:$context_seq,
                       Xf_Matrix:$wq, Optional<Xf_Vector>:$bq,
                       Xf_Matrix:$wk, Optional<Xf_Vector>:$bk,
                       Xf_Matrix:$wv, Optional<Xf_Vector>:$bv,
                       Xf_Matrix:$wo, Optional<Xf_Vector>:$bo,
                       Optional<Xf_Segments>:$segments,
                       Optional<Xf_Segments>:$key_segments,
                       Xf_MaskKind:$mask, I64Attr:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<Xf_RopePairing>:$rope,
                       OptionalAttr<F64Attr>:$rope_base,
                       OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$transpose_weights);
  let results = (outs Xf_Matrix:$result);
  let extraClassDeclaration = [{
    /// H_kv: heads of K and V (grouped-query attention), H when absent.
    int64_t getKeyValueHeads() { return getKvHeads().value_or(getHeads()); }
  }];
  let assemblyFormat = [{
    $mask `heads` $heads (`kv_heads` $kv_heads^)? (`rope` $rope^ `base` $rope_base)?
    $input (`context` $context_seq^)?
    `q` $wq (`,` $bq^)? `k` $wk (`,` $bk^)? `v` $wv (`,` $bv^)? `o` $wo (`,` $bo^)?
    (`segments` $segments^)? (`key_segments` $key_segments^)? (`scale` $scale^)? (`transpose_weights` $transpose_weights^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Activations, softmax, unembedding (Alg. 7)
//===----------------------------------------------------------------------===//

class Xf_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Xf_PureOp<mnemonic, !listconcat([SameOperandsAndResultType], traits)> {
  let hasVerifier = 0;
}

def Xf_ReluOp : Xf_ElementwiseOp<"relu"> {
  let summary = "max(x, 0)";
  let arguments = (ins Xf_FloatTensor:$input);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Xf_GeluOp : Xf_ElementwiseOp<"gelu"> {
  let summary = "GELU, exact (erf) or GPT-2's tanh form";
  let arguments = (ins Xf_FloatTensor:$input, Xf_GeluApproximation:$approximation);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$approximation $input attr-dict `:` type($input)";
}

def Xf_SoftmaxOp : Xf_ElementwiseOp<"softmax"> {
  let summary = "softmax over the last axis (each row is a distribution)";
  let arguments = (ins Xf_FloatTensor:$input);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Xf_SiluOp : Xf_ElementwiseOp<"silu"> {
  let summary = "SiLU (swish): x·σ(x) = x / (1 + e^(−x))";
  let arguments = (ins Xf_FloatTensor:$input);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Xf_ScaleOp : Xf_PureOp<"scale", [AllTypesMatch<["input", "result"]>]> {
  let summary = "every element times a number: `c · X`, `X / c`";
  let description = [{
    The spec's product of a number and an activation, e.g. Vaswani et al.'s
    `token_embed(x | W_e) · √d_e`. The number is `factor` (a literal, a
    hyperparameter, scalar arithmetic of them), times `multiplier` when given:
    an f64 known only when the model runs (arithmetic on `xf.length`).

    ```mlir
    %y = xf.scale %x by 2.500000e-01 : tensor<?x768xf32>
    %z = xf.scale %x by 1.000000e+00 times %c : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$input, F64Attr:$factor, Optional<F64>:$multiplier);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor (`times` $multiplier^)? attr-dict `:` type($input)";
  let hasVerifier = 0;
}

def Xf_LengthOp : Xf_Op<"length", [Pure]> {
  let summary = "the number of tokens of a sequence, as an f64: the paper's `ℓ ← length(x)`";
  let description = [{
    A number known only when the model runs. The spec's arithmetic on it is
    `arith` ops on f64 (`arith.addf`, `arith.subf`, `arith.mulf`,
    `arith.divf`, `arith.constant`); the result reaches tensors only as the
    `multiplier` of `xf.scale`.

    ```mlir
    %n = xf.length %x : tensor<?xi32>
    ```
  }];
  let arguments = (ins Xf_TokenIds:$tokens);
  let results = (outs F64:$result);
  let assemblyFormat = "$tokens attr-dict `:` type($tokens)";
}

def Xf_MulOp : Xf_ElementwiseOp<"mul"> {
  let summary = "elementwise (Hadamard) product A ⊙ B of two tensors of one shape";
  let description = [{
    The gate of a gated MLP: SwiGLU is `(silu(x·W_gate) ⊙ (x·W_up))·W_down`.

    ```mlir
    %p = xf.mul %g, %u : tensor<?x1536xf32>
    ```
  }];
  let arguments = (ins Xf_FloatTensor:$lhs, Xf_FloatTensor:$rhs);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Xf_RopeOp : Xf_PureOp<"rope", [AttrSizedOperandSegments]> {
  let summary = "rotary position embeddings of every head's features";
  let description = [{
    `x : [ℓ, H·d]` → `[ℓ, H·d]`, `d` even. Row `t` is at position
    `p = offset + t` (`offset` defaults to 0). In each head, feature pair `i`
    (`i = 0 .. d/2 − 1`) is rotated by `θ_i = p · base^(−2i/d)`:
    `(a, b) ↦ (a·cos θ_i − b·sin θ_i, a·sin θ_i + b·cos θ_i)` where the pair is
    `(x[2i], x[2i+1])` for `adjacent` (GGUF) and `(x[i], x[i + d/2])` for
    `halves` (Hugging Face). With `segments`, `t` counts from each
    sequence's first row.

    ```mlir
    %q = xf.rope adjacent heads 9 %x base 1.0e+05 : tensor<?x576xf32> -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Optional<Index>:$offset,
                       Optional<Xf_Segments>:$segments,
                       Xf_RopePairing:$pairing, I64Attr:$heads, F64Attr:$base);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$pairing `heads` $heads $input (`offset` $offset^)? "
                       "(`segments` $segments^)? `base` $base "
                       "attr-dict `:` type($input) `->` type($result)";
}

def Xf_UnembedOp : Xf_PureOp<"unembed"> {
  let summary = "Alg. 7: logits x·W_u, or x·W_eᵀ with tied";
  let description = [{
    `x : [ℓ, d_e]`; `W_u : [d_e, N_V]`, or with `tied` a matrix stored
    `[N_V, d_e]` — the token embedding table itself for a tied unembedding,
    or any unembedding kept in that (nn.Linear) layout. Result: pre-softmax
    logits `[ℓ, N_V]`.

    ```mlir
    %logits = xf.unembed %x, tied %wte : tensor<?x768xf32>, tensor<50257x768xf32> -> tensor<?x50257xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$weight, UnitAttr:$tied);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` (`tied` $tied^)? $weight attr-dict `:` "
                       "type($input) `,` type($weight) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Kernel-level ops: what the fusion passes produce
//===----------------------------------------------------------------------===//

def Xf_GemmOp : Xf_PureOp<"gemm", [AttrSizedOperandSegments]> {
  let summary = "fused GEMM: act(x·W + b) + residual, one kernel";
  let description = [{
    The unit the Halide GEMM generator compiles. `x : [ℓ, K]`, `W : [K, N]`
    (or `[N, K]` with `transpose_weight`), optional `b : [N]`, optional
    `residual : [ℓ, N]`; result `[ℓ, N]`. `schedule` (`#xf.gemm_schedule`)
    holds the kernel's schedule (tile sizes, K block, packing, parallel
    split, GEMV path) on CPU targets; `gpu_schedule`
    (`#xf.gpu_gemm_schedule`) on CUDA targets. The tuner changes only these
    attributes. With `norm` (a prologue, from xf-fuse-norm-into-gemm) the
    product reads each row of x normalised: layer_norm or rms_norm with
    `norm_epsilon` and the optional `norm_gamma` / `norm_beta` ([K]) —
    xf.layer_norm / xf.rms_norm of x fused into the GEMM.

    ```mlir
    %y = xf.gemm %x, %w bias %b residual %r activation gelu_tanh
           : (tensor<?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>, tensor<?x3072xf32>) -> tensor<?x3072xf32>
    %q = xf.gemm %x norm layer_norm eps 1.0e-05 gamma %g beta %be, %wqkv bias %bqkv activation none
           : (tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768x2304xf32>, tensor<2304xf32>) -> tensor<?x2304xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$weight,
                       Optional<Xf_Vector>:$bias, Optional<Xf_Matrix>:$residual,
                       Optional<Xf_Vector>:$norm_gamma, Optional<Xf_Vector>:$norm_beta,
                       Xf_Activation:$activation, UnitAttr:$transpose_weight,
                       OptionalAttr<Xf_GemmScheduleAttr>:$schedule,
                       OptionalAttr<Xf_GpuGemmScheduleAttr>:$gpu_schedule,
                       OptionalAttr<Xf_GemmNorm>:$norm, OptionalAttr<F64Attr>:$norm_epsilon);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = [{
    $input (`norm` $norm^ `eps` $norm_epsilon)? (`gamma` $norm_gamma^)? (`beta` $norm_beta^)?
    `,` $weight (`bias` $bias^)? (`residual` $residual^)?
    `activation` $activation (`transpose_weight` $transpose_weight^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

// Training: the loss and the backward pieces of xf-differentiate.
//===----------------------------------------------------------------------===//
// The host module's kernels
//===----------------------------------------------------------------------===//

def Xf_KernelDeclOp : Xf_Op<"kernel_decl", [HasParent<"::mlir::ModuleOp">]> {
  let summary = "a generated kernel the host code calls, by its description";
  let description = [{
    xf-lower-to-host declares each Halide kernel its entry points call (and
    under a CUDA target each loop kernel) by its one description: the object
    exporting `@name` (and the functions derived from it: `@name_pack`,
    `@name_batched`, ...) is built from `kernel` alone, so a host module
    holds everything an executable is built from (docs/pipeline.md). Not
    code: the build takes the declarations out before lowering to LLVM.

    ```mlir
    xf.kernel_decl @xf_gemm_0 = #xf.gemm_kernel<k = 768, n = 2304, ...>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel_name,
                       AnyAttrOf<[Xf_GemmKernelAttr, Xf_AttentionKernelAttr,
                                  Xf_DeviceLoopKernelAttr]>:$kernel);
  let assemblyFormat = "$kernel_name `=` $kernel attr-dict";
}

include "xf/IR/XfGradOps.td"

#endif // XF_OPS_TD
