// The host module declares every generated kernel its entry points call, by
// its description, after the code (KernelDeclarations.h): each GEMM and
// attention once however many layers call it, and under a CUDA target every
// loop kernel too. The build, the tuner and --check read them from here.
// RUN: xf-opt %s --xf-lower-to-host | FileCheck %s
// RUN: xf-opt %s --xf-lower-to-host | xf-opt | FileCheck %s
// RUN: xf-opt %s --xf-lower-to-host="cuda=true" | FileCheck %s --check-prefix=CUDA
// RUN: not xf-opt %s --xf-pack-weights-at-load --xf-lower-to-host="cuda=true" 2>&1 | FileCheck %s --check-prefix=CUDA-PACK
// RUN: xf-opt %s --xf-pack-weights-at-load --xf-lower-to-host=kernel-output-hook=true | FileCheck %s --check-prefix=HOOK

module attributes {xf.hyperparameters = {l_max = 64 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x64xf32> {
    %wte = xf.parameter "wte" : tensor<16x64xf32>
    %w1 = xf.parameter "w1" : tensor<64x64xf32>
    %w2 = xf.parameter "w2" : tensor<64x64xf32>
    %w3 = xf.parameter "w3" : tensor<64x64xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<16x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %a = xf.gemm %x, %w1 activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %b = xf.gemm %a, %w2 activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %c = xf.gemm %b, %w3 activation relu {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    return %c : tensor<?x64xf32>
  }
}

// CHECK-LABEL: func.func @xf_forward(
// CHECK: call @xf_gemm_0(
// CHECK: call @xf_gemm_0(
// CHECK: call @xf_gemm_1(
// CHECK: llvm.mlir.global external constant @xf_model_manifest(
// CHECK-NEXT: xf.kernel_decl @xf_gemm_0 = #xf.gemm_kernel<k = 64, n = 64, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>
// CHECK-NEXT: xf.kernel_decl @xf_gemm_1 = #xf.gemm_kernel<k = 64, n = 64, weight = kn, activation = relu, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>
// CHECK-NEXT: }
// CHECK-NOT: xf.site_ops

// Under CUDA the loop kernels are Halide pipelines (the token gather, and the
// copy a cached entry point's tail may take): declared after the GEMMs. As in
// xfc, a CUDA lowering takes weights unpacked (xfc does not run
// xf-pack-weights-at-load there, and a GEMM marked xf.packed_weight is an error).
// CUDA-NOT: packed = true
// CUDA: xf.kernel_decl @xf_gemm_0 = #xf.gemm_kernel<
// CUDA-NEXT: xf.kernel_decl @xf_gemm_1 = #xf.gemm_kernel<
// CUDA-NEXT: xf.kernel_decl @xf_copy2d_gpu = #xf.device_loop_kernel<kind = copy>
// CUDA-NEXT: xf.kernel_decl @xf_gather_rows_64_gpu = #xf.device_loop_kernel<kind = gather, width = 64>
// CUDA-NEXT: }

// CUDA-PACK: error: xf-lower-to-host: cuda takes weights as stored, but a GEMM is marked xf.packed_weight (xf-pack-weights-at-load)

// --check's hook: each call site's op by its position in @forward's body
// (4: the gather, 5-7: the GEMMs), xf_forward's sites then xf_forward_cached's.
// HOOK: module attributes {xf.site_ops = array<i64: 4, 5, 6, 7, 4, 5, 6, 7>}
