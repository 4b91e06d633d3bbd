//===- XfGradOps.td - training ops: loss and vector-Jacobian products -*- tablegen -*-===//
//
// What `xf-differentiate` writes: Alg. 13's next-token loss and, for each
// forward op, the pieces of its vector-Jacobian product that are not already
// an xf op (a product by a transposed weight is an xf.matmul; a sum of
// gradients is an xf.add). `dy` is always the gradient of the loss with
// respect to the forward op's result. Equations: docs/training.md.
//
// Included at the end of XfOps.td (one op list, one generated file).
//
//===----------------------------------------------------------------------===//

#ifndef XF_GRAD_OPS_TD
#define XF_GRAD_OPS_TD

def Xf_Scalar : 0DTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Loss (Alg. 13)
//===----------------------------------------------------------------------===//

def Xf_CrossEntropyOp : Xf_PureOp<"cross_entropy"> {
  let summary = "mean over the rows with a target of −log softmax(logits)[t, target[t]]";
  let description = [{
    `logits : [ℓ, N_V]`, `targets : [ℓ]` → the mean loss, a scalar. A target
    is an id in `[0, N_V)`, or negative: that row has no target and takes no
    part (the mean runs over the rows with one; no such row gives 0). Alg. 13
    (next token: every row's target is the next id), Alg. 12 (masked tokens:
    only the masked rows have one) and Alg. 11 (the target sequence's next
    id) differ only in the targets. The paper sums over rows; the mean makes
    the learning rate independent of their number.

    ```mlir
    %loss = xf.cross_entropy %logits, %y : tensor<?x64xf32>, tensor<?xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$logits, Xf_TokenIds:$targets);
  let results = (outs Xf_Scalar:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` type($logits) `,` "
                       "type($targets) `->` type($result)";
}

def Xf_CrossEntropyGradOp : Xf_PureOp<"cross_entropy_grad"> {
  let summary = "∂ mean loss / ∂ logits = (softmax(logits) − onehot(targets)) / n, 0 on rows without a target";
  let description = [{
    `n` is the number of rows whose target is not negative; a row without a
    target gets a zero gradient.
  }];
  let arguments = (ins Xf_Matrix:$logits, Xf_TokenIds:$targets);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` type($logits) `,` "
                       "type($targets) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear maps: the weight side (the input side is an xf.matmul)
//===----------------------------------------------------------------------===//

def Xf_WeightGradOp : Xf_PureOp<"weight_grad"> {
  let summary = "Σ_t x[t]ᵀ·dy[t]: xᵀ·dy, or dyᵀ·x with transpose_result";
  let description = [{
    The gradient of `x·W` with respect to `W`: `x : [ℓ, K]`, `dy : [ℓ, N]`
    → `[K, N]`, the rows (positions) contracted. With `transpose_result` the
    result is stored `[N, K]`: the layout of an nn.Linear weight or of a tied
    embedding table (`logits = x·W_eᵀ`).

    ```mlir
    %dw = xf.weight_grad %x, %dy : tensor<?x16xf32>, tensor<?x48xf32> -> tensor<16x48xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad, UnitAttr:$transpose_result);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $grad (`transpose_result` $transpose_result^)? attr-dict "
                       "`:` type($input) `,` type($grad) `->` type($result)";
}

def Xf_RowSumOp : Xf_PureOp<"row_sum"> {
  let summary = "Σ_t dy[t, :]: the gradient of a bias broadcast over rows";
  let arguments = (ins Xf_Matrix:$input);
  let results = (outs Xf_Vector:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalisation and activations
//===----------------------------------------------------------------------===//

def Xf_LayerNormGradOp : Xf_PureOp<"layer_norm_grad"> {
  let summary = "Alg. 6 backward, input side: dx = (ĝ − mean(ĝ) − x̂·mean(ĝ⊙x̂)) / σ";
  let description = [{
    `x`, `dy : [ℓ, d]`, optional `γ : [d]` → `dx : [ℓ, d]` with
    `x̂ = (x − μ)/σ`, `σ = sqrt(var + ε)`, `ĝ = dy ⊙ γ` (dy without γ); the
    statistics are recomputed from `x`.

    ```mlir
    %dx = xf.layer_norm_grad %x, %dy gamma %g eps 1.0e-05 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad, Optional<Xf_Vector>:$gamma,
                       F64Attr:$epsilon);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $grad (`gamma` $gamma^)? `eps` $epsilon attr-dict `:` "
                       "type($input) `,` type($grad) (`,` type($gamma)^)? `->` type($result)";
}

def Xf_LayerNormGammaGradOp : Xf_PureOp<"layer_norm_gamma_grad"> {
  let summary = "Alg. 6 backward, gain: dγ = Σ_t dy[t] ⊙ x̂[t]";
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad, F64Attr:$epsilon);
  let results = (outs Xf_Vector:$result);
  let assemblyFormat = "$input `,` $grad `eps` $epsilon attr-dict `:` type($input) `,` "
                       "type($grad) `->` type($result)";
}

def Xf_RmsNormGradOp : Xf_PureOp<"rms_norm_grad"> {
  let summary = "RMSNorm backward, input side: dx = (ĝ − x̂·mean(ĝ⊙x̂)) / r";
  let description = [{
    `x̂ = x / r`, `r = sqrt(mean(x²) + ε)`, `ĝ = dy ⊙ γ` (dy without γ).
  }];
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad, Optional<Xf_Vector>:$gamma,
                       F64Attr:$epsilon);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $grad (`gamma` $gamma^)? `eps` $epsilon attr-dict `:` "
                       "type($input) `,` type($grad) (`,` type($gamma)^)? `->` type($result)";
}

def Xf_RmsNormGammaGradOp : Xf_PureOp<"rms_norm_gamma_grad"> {
  let summary = "RMSNorm backward, gain: dγ = Σ_t dy[t] ⊙ x̂[t]";
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad, F64Attr:$epsilon);
  let results = (outs Xf_Vector:$result);
  let assemblyFormat = "$input `,` $grad `eps` $epsilon attr-dict `:` type($input) `,` "
                       "type($grad) `->` type($result)";
}

def Xf_ReluGradOp : Xf_PureOp<"relu_grad"> {
  let summary = "dx = dy where x > 0, else 0";
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` "
                       "type($result)";
}

def Xf_SiluGradOp : Xf_PureOp<"silu_grad"> {
  let summary = "dx = dy ⊙ σ(x)·(1 + x·(1 − σ(x)))";
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` "
                       "type($result)";
}

def Xf_GeluGradOp : Xf_PureOp<"gelu_grad"> {
  let summary = "dx = dy ⊙ GELU′(x), exact (erf) or tanh form";
  let arguments = (ins Xf_Matrix:$input, Xf_Matrix:$grad,
                       Xf_GeluApproximation:$approximation);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$approximation $input `,` $grad attr-dict `:` type($input) `,` "
                       "type($grad) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Attention (Alg. 4 backward, recomputing the probabilities)
//===----------------------------------------------------------------------===//

def Xf_AttentionGradOp : Xf_PureOp<"attention_grad"> {
  let summary = "Alg. 4 backward: dQ, dK, dV of softmax(scale·QKᵀ + mask)·V per head";
  let description = [{
    Operands and attributes as xf.attention, plus `dy : [ℓ, H·d_v]`. Per
    head, with `P = softmax(scale·QKᵀ + mask)` recomputed from Q and K one
    query row at a time (no `[ℓ, ℓ_z]` matrix is kept between the passes):
    `dV = Pᵀ·dY`, `dP = dY·Vᵀ`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))`,
    `dQ = scale·dS·K`, `dK = scale·dSᵀ·Q`. With `kv_heads` (grouped-query
    attention) a key/value head sums the dK and dV of the H / H_kv query heads
    that share it.

    ```mlir
    %dq, %dk, %dv = xf.attention_grad causal heads 2 %q, %k, %v, %dy : ...
    ```
  }];
  let arguments = (ins Xf_Matrix:$query, Xf_Matrix:$key, Xf_Matrix:$value, Xf_Matrix:$grad,
                       Xf_MaskKind:$mask, I64Attr:$heads, OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Xf_Matrix:$query_grad, Xf_Matrix:$key_grad, Xf_Matrix:$value_grad);
  let extraClassDeclaration = [{
    /// H_kv: heads of K and V (grouped-query attention), H when absent.
    int64_t getKeyValueHeads() { return getKvHeads().value_or(getHeads()); }
  }];
  let assemblyFormat = "$mask `heads` $heads (`kv_heads` $kv_heads^)? $query `,` $key `,` $value `,` $grad "
                       "(`scale` $scale^)? attr-dict `:` type($query) `,` type($key) `,` "
                       "type($value) `,` type($grad) `->` type($query_grad) `,` "
                       "type($key_grad) `,` type($value_grad)";
}

def Xf_RopeGradOp : Xf_PureOp<"rope_grad"> {
  let summary = "xf.rope backward: each feature pair of dy rotated by −θ_i";
  let description = [{
    Attributes as xf.rope (positions 0 .. ℓ−1); the rotation is orthogonal, so
    the gradient of its input is its transpose applied to `dy`:
    `(a, b) ↦ (a·cos θ_i + b·sin θ_i, −a·sin θ_i + b·cos θ_i)`.
  }];
  let arguments = (ins Xf_Matrix:$grad, Xf_RopePairing:$pairing, I64Attr:$heads,
                       F64Attr:$base);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$pairing `heads` $heads $grad `base` $base attr-dict `:` type($grad) "
                       "`->` type($result)";
}

//===----------------------------------------------------------------------===//
// Embeddings and slices: gradients scattered into a larger zero tensor
//===----------------------------------------------------------------------===//

def Xf_TokenEmbedGradOp : Xf_PureOp<"token_embed_grad"> {
  let summary = "Alg. 1 backward: dW_e[v] = Σ_{t : x[t] = v} dy[t]";
  let description = [{
    `tokens : [ℓ]`, `dy : [ℓ, d_e]` → `[N_V, d_e]`; rows of tokens that do not
    occur are zero, a repeated token accumulates.
  }];
  let arguments = (ins Xf_TokenIds:$tokens, Xf_Matrix:$grad);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$tokens `,` $grad attr-dict `:` type($tokens) `,` type($grad) "
                       "`->` type($result)";
}

def Xf_PositionalEmbedGradOp : Xf_PureOp<"pos_embed_grad"> {
  let summary = "Alg. 2 backward: dW_p[t] = dy[t] for t < ℓ, zero below";
  let arguments = (ins Xf_Matrix:$grad);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

def Xf_SliceGradOp : Xf_PureOp<"slice_grad"> {
  let summary = "xf.slice backward: dy placed at [offset, offset+size) of zeros";
  let description = [{
    The adjoint of `xf.slice … axis a offset o`: the result has the sliced
    tensor's shape, holds `dy` in the slice and zero elsewhere. How
    `W_q = W_qkv[:, 0:d_e]` sends its gradient back to `c_attn.weight`.
  }];
  let arguments = (ins Xf_FloatTensor:$grad, I64Attr:$axis, I64Attr:$offset);
  let results = (outs Xf_FloatTensor:$result);
  let assemblyFormat = "$grad `axis` $axis `offset` $offset attr-dict `:` type($grad) "
                       "`->` type($result)";
}

def Xf_RowGradOp : Xf_PureOp<"row_grad"> {
  let summary = "xf.row backward: dy placed in row `index` of zeros";
  let description = [{
    The adjoint of `xf.row %W[i]`: `dy : [d]` → `[N, d]`, zero except row
    `i`. How BERT's token-type row `w_t0 = W_t[0]` sends its gradient back to
    `W_t`.

    ```mlir
    %dwt = xf.row_grad %dw0 row 0 : tensor<8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Xf_Vector:$grad, I64Attr:$index);
  let results = (outs Xf_Matrix:$result);
  let assemblyFormat = "$grad `row` $index attr-dict `:` type($grad) `->` type($result)";
}

#endif // XF_GRAD_OPS_TD
