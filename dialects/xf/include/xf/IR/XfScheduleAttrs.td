//===- XfScheduleAttrs.td - typed kernel schedules ----------*- tablegen -*-===//
//
// The schedule of each Halide kernel as an attribute whose parameters are the
// knobs of its generator (compiler/lib/Codegen/HalideKernels). The default
// schedule pass fills them in from the target's vector unit, the tuner
// replaces them, and the lowering hands them to the generators unchanged.
// Verifiers reject values no generator can use; what depends on the target
// (tile columns a multiple of the vector width) is checked by the pass that
// knows the target.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SCHEDULE_ATTRS_TD
#define XF_SCHEDULE_ATTRS_TD

include "xf/IR/XfDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Xf_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Xf_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Xf_GemmScheduleAttr : Xf_Attr<"GemmSchedule", "gemm_schedule"> {
  let summary = "schedule of a fused GEMM kernel (GotoBLAS/BLIS structure)";
  let description = [{
    Multi-row GEMM path: parallel tasks of `panel_cols` columns × `rows_per_task`
    rows; per `k_block` slice of K the task's weight panel is packed tile-major
    (`pack_weights`) and swept by `tile_rows` × `tile_cols` register tiles
    (`tile_cols` a multiple of the vector width). `panel_cols = 0` sizes the
    panel so its packed block fits in L2 with enough tasks for the threads.

    GEMV path, for calls with fewer than `gemv_rows_below` rows (decoding):
    no packing; `gemv_rows_per_pass` rows of W are streamed per pass, in
    `gemv_tasks` parallel column chunks (0: two for [K, N], ~256 KiB of W
    each for [N, K]).

    ```mlir
    #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true,
                      rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4,
                      gemv_rows_per_pass = 16, gemv_tasks = 0>
    ```
  }];
  let parameters = (ins "int64_t":$tile_cols, "int64_t":$tile_rows, "int64_t":$k_block,
                        "bool":$pack_weights, "int64_t":$rows_per_task, "int64_t":$panel_cols,
                        "int64_t":$gemv_rows_below, "int64_t":$gemv_rows_per_pass,
                        "int64_t":$gemv_tasks);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Xf_GpuGemmScheduleAttr : Xf_Attr<"GpuGemmSchedule", "gpu_gemm_schedule"> {
  let summary = "schedule of a fused GEMM kernel on a CUDA target (docs/gpu.md)";
  let description = [{
    Register path (`register_tiles`; [K, N] weights whose N is a multiple of
    `reg_tile_cols`): one thread block per `reg_tile_cols` × `reg_tile_rows`
    tile of the output (`reg_tall_tile_rows` rows from `reg_tall_rows` rows
    on), each thread accumulating 4 columns × `reg_thread_rows` rows over all
    of K in registers, K unrolled by `reg_unroll_k`. Split K (derived per
    shape): where N / `reg_tile_cols` × ⌈M / `reg_tile_rows`⌉ is under
    `reg_fill_blocks` (by default 2 a SM of a 132-SM GPU) and K holds
    `reg_split_k` slices of ≥ 64, each block's K is split over `reg_split_k`
    groups of threads whose sums meet in shared memory (1: never). Both
    may be omitted (defaults 4 and 264). `register_tiles` also gives [N, K]
    weights with K a multiple of 4 a register path of the same block tiles,
    a thread holding 4 columns × `nk_thread_rows` rows (SwiGLU: half) × 4
    partial sums along K (may be omitted: 2).

    Staged path (the other GEMMs, or all with `register_tiles = false`): one
    block per `tile_cols` × `tile_rows` tile, threads of `thread_cols` ×
    `thread_rows` register tiles, K in slices of `slice_k` staged in shared
    memory.

    GEMV path (M ≤ 4): [K, N] blocks of `gemv_cols` columns × `gemv_slices`
    K slices; [N, K] blocks of `gemv_lane_cols` columns × 32 lanes.

    Batch GEMV path (4 < M ≤ 16, a decode step of several sequences; one
    specialization up to 8 rows, one up to 16): [K, N] blocks of at most
    `batch_cols` columns × `batch_slices` K slices (slice s reads
    k ≡ s mod the slices); [N, K] blocks of at most `batch_lane_cols`
    columns × 32 lanes. Where N / columns is under `reg_fill_blocks`, the
    columns are halved (down to 4; [K, N]: the slices doubled) until it is
    not. These three may be omitted (16, 16, 8).

    ```mlir
    #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8,
                          reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4,
                          reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4,
                          thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16,
                          gemv_lane_cols = 8>
    ```
  }];
  let parameters = (ins "bool":$register_tiles, "int64_t":$reg_tile_cols,
                        "int64_t":$reg_tile_rows, "int64_t":$reg_tall_rows,
                        "int64_t":$reg_tall_tile_rows, "int64_t":$reg_thread_rows,
                        "int64_t":$reg_unroll_k, "int64_t":$tile_cols, "int64_t":$tile_rows,
                        "int64_t":$thread_cols, "int64_t":$thread_rows, "int64_t":$slice_k,
                        "int64_t":$gemv_cols, "int64_t":$gemv_slices, "int64_t":$gemv_lane_cols,
                        DefaultValuedParameter<"int64_t", "4">:$reg_split_k,
                        DefaultValuedParameter<"int64_t", "264">:$reg_fill_blocks,
                        DefaultValuedParameter<"int64_t", "2">:$nk_thread_rows,
                        DefaultValuedParameter<"int64_t", "16">:$batch_cols,
                        DefaultValuedParameter<"int64_t", "16">:$batch_slices,
                        DefaultValuedParameter<"int64_t", "8">:$batch_lane_cols);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Xf_AttentionScheduleAttr : Xf_Attr<"AttentionSchedule", "attention_schedule"> {
  let summary = "schedule of a flash-style attention kernel";
  let description = [{
    Prefill path: parallel over (head, `query_block` queries); per block of
    `key_block` keys a score tile and P·V in register tiles of `row_tile`
    query rows. Decode path (≤ 4 query rows): parallel over heads, dot
    products in register blocks of `decode_key_tile` keys.

    ```mlir
    #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>
    ```
  }];
  let parameters = (ins "int64_t":$query_block, "int64_t":$key_block, "int64_t":$row_tile,
                        "int64_t":$decode_key_tile);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Xf_GpuAttentionScheduleAttr : Xf_Attr<"GpuAttentionSchedule", "gpu_attention_schedule"> {
  let summary = "schedule of a flash attention kernel on a CUDA target (docs/gpu.md)";
  let description = [{
    Prefill path (more than 4 query rows): one thread block per (head,
    `query_block` queries), 32 column threads × `query_block` rows; keys
    stream in blocks of `key_block`, each staged in shared memory and scored
    by `key_block` × `query_block` threads.

    Decode path (flash-decoding, at most 4 query rows): the keys cut into
    ranges so that the range pass launches at least `decode_blocks` blocks
    (ranges × head blocks), a block computing up to `decode_block_heads`
    query heads of one K/V head (the largest divisor of the group up to it)
    and staging `decode_key_block` keys at a time; the batched decode step's
    range pass stages as many.

    ```mlir
    #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 32,
                               decode_blocks = 264, decode_block_heads = 4>
    ```
  }];
  let parameters = (ins "int64_t":$query_block, "int64_t":$key_block,
                        "int64_t":$decode_key_block, "int64_t":$decode_blocks,
                        "int64_t":$decode_block_heads);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Xf_LoopScheduleAttr : Xf_Attr<"LoopSchedule", "loop_schedule"> {
  let summary = "schedule of a loop kernel (norms, softmax, embeddings, elementwise)";
  let description = [{
    Loop kernels are scf loops over rows, lowered through LLVM. A call with
    more than `rows_per_task` rows is split into tasks of `rows_per_task`
    rows run by the Halide runtime's thread pool (`0`: always one serial
    loop). `vector_bits` is the vector width LLVM is asked to prefer for
    the kernel (`0`: the target CPU's own preference).

    Ops lowered to loop kernels carry it as the discardable attribute
    `xf.loop_schedule`:

    ```mlir
    %y = xf.layer_norm %x ... {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 21, vector_bits = 0>}
    ```
  }];
  let parameters = (ins "int64_t":$rows_per_task, "int64_t":$vector_bits);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // XF_SCHEDULE_ATTRS_TD
