//===- Passes.td - xf dialect passes -----------------------*- tablegen -*-===//
//
// The fusion stage, in pipeline order: decompose MHA, fuse the Q/K/V
// projections, fold rotary positions into attention, fold bias / activation /
// residual into GEMM epilogues, then give every kernel its tuned (database) or default schedule.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TRANSFORMS_PASSES_TD
#define XF_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PackSequences : Pass<"xf-pack-sequences", "ModuleOp"> {
  let summary = "Add @forward_packed: @forward over a packed batch of sequences";
  let description = [{
    From `@forward(tokens) -> [ℓ, N]` builds `@forward_packed(tokens,
    segments) -> [Σℓ_i, N]`: the same ops over n sequences' rows back to
    back, `segments : tensor<?xi64>` their lengths. Row-wise ops are
    unchanged; the ops that see a sequence as a whole — xf.attention and
    xf.mha (masks), xf.pos_embed, xf.sinusoidal_embed and xf.rope
    (positions) — take the `segments` operand, so each sequence is computed
    as @forward would compute it alone. The fusion passes and the schedules
    then apply to @forward_packed like to @forward, and xf-lower-to-host
    emits `xf_forward_packed` from it (docs/dialect.md "Packed batches").
    An encoder-decoder `@forward(z, x)` becomes `@forward_packed(z, x,
    z_segments, x_segments)`: each side packed, cross attention with
    `segments` (the targets') and `key_segments` (the sources'), target
    sequence i attending to source sequence i. Not added (the runtime then
    runs one sequence at a time) when rows meet otherwise: a product of two
    activations, a transpose, row or axis-0 slice or concatenation of one,
    xf.length, explicit position offsets, or an op other than cross
    attention reading both sequences.
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def DecomposeMultiHeadAttention
    : Pass<"xf-decompose-mha", "func::FuncOp"> {
  let summary = "Split xf.mha into its projections and one xf.attention";
  let description = [{
    Alg. 5 becomes `Q = x·W_q + b_q`, `K = z·W_k + b_k`, `V = z·W_v + b_v`
    (xf.linear), `Y = attention(Q, K, V)` over all heads at once
    (xf.attention) and `Y·W_o + b_o` (xf.linear).
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def FuseQkvProjections : Pass<"xf-fuse-qkv", "func::FuncOp"> {
  let summary = "Fuse linear maps of one input into one wider GEMM";
  let description = [{
    Linear maps that read the same activation (the Q, K and V projections of
    self-attention, or K and V of cross-attention) become one xf.linear whose
    weight is the concatenation of theirs; consumers read column slices of
    its result. When the weights are consecutive slices of one checkpoint
    tensor (GPT-2's `c_attn`), that tensor is used directly.
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def FuseRopeIntoAttention : Pass<"xf-fuse-rope-attention", "func::FuncOp"> {
  let summary = "Fold the rotary positions of Q and K into the attention that reads them";
  let description = [{
    `attention(rope(Q), rope(K), V)` of self-attention becomes one
    xf.attention with `rope`: the kernel rotates Q and K rows as it loads
    them (query row t at position t + (ℓ_z − ℓ), key row s at s), so neither
    is read and written by a separate pass. Fuses only when both xf.rope
    have no offset, the same pairing and base, heads H (Q) and H_kv (K), no
    other use, and Q and K come from the same rows (column slices of one
    GEMM or projections of one activation) — positions then agree with the
    unfused ops. Not run for CUDA targets (xfc; see FusionPipeline.cpp).
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def FuseGemmEpilogue : Pass<"xf-fuse-gemm-epilogue", "func::FuncOp"> {
  let summary = "Turn linear/matmul/unembed into xf.gemm with fused epilogues";
  let description = [{
    Each xf.linear, xf.matmul and xf.unembed becomes an xf.gemm. A following
    ReLU, GELU or SiLU and then a residual xf.add are folded into its epilogue
    when the GEMM result has no other use. SwiGLU, `silu(G[:, :N]) ⊙ G[:, N:]`
    of a GEMM G of 2·N columns (gate and up joined by xf-fuse-qkv), becomes
    one GEMM with the gated epilogue `activation swiglu`.
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def FuseNormIntoGemm : Pass<"xf-fuse-norm-into-gemm", "func::FuncOp"> {
  let summary = "Fold a layer norm or RMSNorm into the prologue of the GEMM that reads it";
  let description = [{
    `gemm(layer_norm(x))` or `gemm(rms_norm(x))` where the norm's result has
    no other use becomes one xf.gemm with `norm`: the kernel recomputes each
    row's statistics per thread block and normalises x as it reads it (γ, β
    applied on the way), so the norm is no launch of its own. For CUDA
    targets with fp32 GEMMs only (xfc; FusionPipeline.cpp): the CPU keeps
    its norm kernels, the tensor-core GEMMs have no prologue.
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def AssignWeightStorage : Pass<"xf-assign-weight-storage", "ModuleOp"> {
  let summary = "Decide how each weight is stored: f32, bf16 or ggml blocks";
  let description = [{
    Translates xfc's weight options once into the IR: each xf.parameter of
    @forward (and of @forward_packed, its copy) kept in another form than
    float32 gets `xf.weight_storage = #xf.weight_storage<bf16|q8_0|q4_0|q4_1>`,
    which the tuning database's keys, the default schedules, the kernel
    descriptions, the host lowering and the manifest then read.
    `weight-type=bf16`: a rank-2 parameter every op binding whose name reads
    it only as an xf.gemm weight or an xf.token_embed table (both widen
    bfloat16 exactly). `block-parameters=NAME=TYPE,...` (the block type of
    each tensor of xfc's --quantized-like file): a rank-2 parameter read only
    as the [N, K] weight of an xf.gemm (transpose_weight) with K a multiple
    of 32 (rows of whole blocks), an xf.token_embed table, or a part of an
    axis-0 xf.concat whose parts are all such parameters of one type and
    whose result only [N, K] GEMMs read; that concatenation is marked too.
    The rest stays float32 (no attribute). The decision is @forward's
    (@loss_and_gradients reads its parameters as float32). The two options
    are exclusive. `bf16-gemm-inputs` (with weight-type=bf16; xfc's
    --bf16-gemm-inputs where bf16 products pay): each xf.gemm of @forward and
    @forward_packed whose weight is now bf16 is marked `xf.bf16_inputs` (its
    multi-row path rounds x to bfloat16 for bf16 dot products), before the
    tuning database's keys read it. Attributes already present are kept (and
    verified).
  }];
  let options = [
    Option<"weightType", "weight-type", "std::string", "\"f32\"",
           "f32, or bf16 for the parameters that may be (xfc --weight-type)">,
    ListOption<"blockParameters", "block-parameters", "std::string",
               "parameters kept in ggml blocks, NAME=q8_0|q4_0|q4_1 (xfc --quantized-like)">,
    Option<"bf16GemmInputs", "bf16-gemm-inputs", "bool", "false",
           "GEMMs on bf16 weights round their inputs to bfloat16 (xfc --bf16-gemm-inputs)">
  ];
  let dependentDialects = ["xf::XfDialect"];
}

def ApplyTuningDatabase : Pass<"xf-apply-tuning-db", "func::FuncOp"> {
  let summary = "Give each kernel the best schedule the tuning database holds";
  let description = [{
    Looks every xf.gemm and xf.attention up in the tuning database `db` (the
    file `xfc tune` writes, docs/tuning.md) by its kernel signature, the
    Halide target string `target`, the thread count `threads` and this xf
    version, and sets the schedule of the best entry, marking the op
    `xf.tuned`. A GEMM's signature has its weight's storage as
    xf-assign-weight-storage marked it (`weight=nk:q4_1`, `weight=kn:bf16`),
    so an entry tuned for the float32 kernel of the same shape is never
    applied to a block or bf16 one, and its input type is bf16 where the op
    is marked `xf.bf16_inputs` (`x=bf16`). Kernels without an entry keep what they have (the default
    schedule pass fills them in). A database that cannot be read or holds an
    illegal schedule is an error naming the file; one with entries only for
    other targets, thread counts or versions gives a warning.
  }];
  let options = [
    Option<"db", "db", "std::string", "\"\"", "tuning database file">,
    Option<"target", "target", "std::string", "\"\"",
           "Halide target string the entries must match">,
    Option<"threads", "threads", "int64_t", "0", "thread count the entries must match">
  ];
  let dependentDialects = ["xf::XfDialect"];
}

def AssignDefaultSchedules : Pass<"xf-assign-schedules", "func::FuncOp"> {
  let summary = "Attach the default schedule to every kernel without one";
  let description = [{
    Writes a typed schedule (`#xf.gemm_schedule`, `#xf.attention_schedule`)
    on each xf.gemm and xf.attention that has none, chosen from the target's
    vector unit: a register block of accumulators that fits its registers
    (32 registers: 3 vectors × 8 rows; 16: 2 vectors × 6 rows), the weight
    panel packed per K block, parallel over column panels × row blocks;
    attention score tiles of 4 vectors. Existing schedules (tuned ones) are
    kept, and checked against the target: register tiles must be whole
    vectors. A GEMM on a weight in ggml blocks (`xf.weight_storage`,
    xf-assign-weight-storage) gets the block default (K blocks of 256).
    With `cuda`, each xf.gemm and xf.attention without a `gpu_schedule`
    gets the CUDA default (`#xf.gpu_gemm_schedule`,
    `#xf.gpu_attention_schedule`, docs/gpu.md); without it a `gpu_schedule`
    is an error (no CPU kernel reads it).
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "float32 lanes of a vector register of the target">,
    Option<"vectorRegisters", "vector-registers", "int64_t", "32",
           "vector registers of the target">,
    Option<"cuda", "cuda", "bool", "false",
           "a CUDA target: GEMMs and attentions also get a GPU schedule (gpu_schedule)">
  ];
  let dependentDialects = ["xf::XfDialect"];
}

def PackWeightsAtLoad : Pass<"xf-pack-weights-at-load", "ModuleOp"> {
  let summary = "Mark the GEMMs that take their weight packed once at load";
  let description = [{
    After the schedules: each xf.gemm of @forward and @forward_packed whose
    weight is a constant of the model (an xf.parameter, or sliced, joined,
    transposed or gathered from parameters alone), not in ggml blocks, and
    whose CPU schedule packs it (`pack_weights = true`, no `gpu_schedule`)
    gets `xf.packed_weight`: the host lowering fills one buffer per weight
    and layout in xf_prepare, in the register tiles' layout, and the
    kernel's description says `packed` (docs/pipeline.md). xfc runs it
    unless --pack-weights=call or a CUDA target (whose GEMMs stage their own
    tiles); @loss_and_gradients is never marked (training changes the
    weights every step).
  }];
  let dependentDialects = ["xf::XfDialect"];
}

def Differentiate : Pass<"xf-differentiate", "ModuleOp"> {
  let summary = "Add @loss_and_gradients: the training loss and its reverse-mode gradient";
  let description = [{
    From `@forward([source,] tokens) -> logits` (xf ops, after
    xf-decompose-mha) builds `@loss_and_gradients([source,] tokens, targets)`:
    the forward ops, the mean
    cross-entropy of the logits against `targets` (rows with a negative
    target take no part: Alg. 13's next tokens and Alg. 12's masked tokens
    are the same function with other targets; `xf.objective` names the one
    a trainer uses by default: seq2seq (Alg. 11) for an encoder-decoder,
    masked tokens when no attention is causal, else next tokens),
    then each op's vector-Jacobian product in reverse order,
    returning the loss and one gradient per checkpoint tensor (attribute
    `xf.gradients` lists their names, in order of first use). A tensor used
    more than once (a tied embedding, the slices of GPT-2's fused c_attn)
    sums its gradients. Products by a weight become xf.matmul / xf.weight_grad
    with the transpose in the operand's layout, so the fusion passes turn
    them into GEMMs; the other rules are the ops of XfGradOps.td.
    Activations: every forward value the backward reads is kept; attention
    probabilities are recomputed (xf.attention_grad). @forward is unchanged.
    Rules and equations: docs/training.md.
  }];
  let dependentDialects = ["xf::XfDialect", "arith::ArithDialect"];
}

#endif // XF_TRANSFORMS_PASSES_TD
