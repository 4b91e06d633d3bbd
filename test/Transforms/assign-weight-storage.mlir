// xf-assign-weight-storage: xfc's weight options become `xf.weight_storage`
// on the parameters (and their concatenations) the kernels read so, one rule
// per case below; the rest stays float32 (no attribute).
// RUN: xf-opt %s --split-input-file --xf-assign-weight-storage | FileCheck %s --check-prefix=F32
// RUN: xf-opt %s --split-input-file --xf-assign-weight-storage=weight-type=bf16 | FileCheck %s --check-prefix=BF16
// RUN: xf-opt %s --split-input-file "--xf-assign-weight-storage=weight-type=bf16 bf16-gemm-inputs" | FileCheck %s --check-prefix=INPUTS
// RUN: xf-opt %s --split-input-file "--xf-assign-weight-storage=block-parameters=wq=q8_0,wk=q8_0,wv=q4_1,wn=q4_0,wkn=q8_0,wte=q4_0,wodd=q8_0,wmix=q8_0,wln=q8_0,gamma=q8_0" | FileCheck %s --check-prefix=BLOCKS

// F32-NOT: xf.weight_storage

// BF16-LABEL: func.func @forward(
// BLOCKS-LABEL: func.func @forward(
func.func @forward(%x: tensor<?x64xf32>, %t: tensor<?xi64>) -> (tensor<?x96xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x48xf32>) {
  // A [N, K] GEMM weight: bf16; blocks of its own type.
  // BF16: xf.parameter "wn" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BLOCKS: xf.parameter "wn" {xf.weight_storage = #xf.weight_storage<q4_0>}
  %wn = xf.parameter "wn" : tensor<32x64xf32>
  // A [K, N] GEMM weight: bf16, but no blocks (blocks run along a row of K).
  // BF16: xf.parameter "wkn" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BLOCKS: xf.parameter "wkn" : tensor<64x32xf32>
  %wkn = xf.parameter "wkn" : tensor<64x32xf32>
  // An embedding table: bf16 and blocks.
  // BF16: xf.parameter "wte" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BLOCKS: xf.parameter "wte" {xf.weight_storage = #xf.weight_storage<q4_0>}
  %wte = xf.parameter "wte" : tensor<100x64xf32>
  // A norm's gain (read by xf.layer_norm, not a matrix): float32 either way.
  // BF16: xf.parameter "gamma" : tensor<64xf32>
  // BLOCKS: xf.parameter "gamma" : tensor<64xf32>
  %gamma = xf.parameter "gamma" : tensor<64xf32>
  // Rows of whole blocks of 32 only: K = 48 is no row of blocks.
  // BLOCKS: xf.parameter "wodd" : tensor<48x48xf32>
  %wodd = xf.parameter "wodd" : tensor<48x48xf32>
  // Parts of an axis-0 concatenation read only as GEMM weights: each part and
  // the concatenation are bf16 (the parts' rows copied back to back, as
  // stored) and, of one block type read by [N, K] GEMMs, blocks.
  // BF16: xf.parameter "wq" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BF16: xf.parameter "wk" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BF16: xf.concat {{.*}} axis 0 {xf.weight_storage = #xf.weight_storage<bf16>}
  // BLOCKS: xf.parameter "wq" {xf.weight_storage = #xf.weight_storage<q8_0>}
  // BLOCKS: xf.parameter "wk" {xf.weight_storage = #xf.weight_storage<q8_0>}
  // BLOCKS: xf.concat {{.*}} axis 0 {xf.weight_storage = #xf.weight_storage<q8_0>}
  %wq = xf.parameter "wq" : tensor<32x64xf32>
  %wk = xf.parameter "wk" : tensor<32x64xf32>
  %wqk = xf.concat %wq, %wk axis 0 : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  // Parts of different block types: neither part nor concatenation in blocks
  // (bf16 both).
  // BF16: xf.parameter "wmix" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BF16: xf.parameter "wv" {xf.weight_storage = #xf.weight_storage<bf16>}
  // BF16: xf.concat {{.*}} axis 0 {xf.weight_storage = #xf.weight_storage<bf16>}
  // BLOCKS: xf.parameter "wmix" : tensor<16x64xf32>
  // BLOCKS: xf.parameter "wv" : tensor<32x64xf32>
  // BLOCKS: xf.concat {{.*}} axis 0 : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<48x64xf32>
  %wmix = xf.parameter "wmix" : tensor<16x64xf32>
  %wv = xf.parameter "wv" : tensor<32x64xf32>
  %wmv = xf.concat %wmix, %wv axis 0 : tensor<16x64xf32>, tensor<32x64xf32> -> tensor<48x64xf32>
  %a = xf.gemm %x, %wn activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  %b = xf.gemm %x, %wkn activation none : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  %e = xf.token_embed %wte[%t] : tensor<100x64xf32>, tensor<?xi64> -> tensor<?x64xf32>
  %n = xf.layer_norm %e gamma %gamma beta %gamma eps 1.0e-5 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %c = xf.gemm %x, %wqk activation none transpose_weight : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = xf.slice %x axis 1 offset 0 : tensor<?x64xf32> -> tensor<?x48xf32>
  %o = xf.gemm %y, %wodd activation none transpose_weight : (tensor<?x48xf32>, tensor<48x48xf32>) -> tensor<?x48xf32>
  %m = xf.gemm %x, %wmv activation none transpose_weight : (tensor<?x64xf32>, tensor<48x64xf32>) -> tensor<?x48xf32>
  %ab = xf.concat %a, %b axis 1 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  %r = xf.concat %ab, %a axis 1 : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x96xf32>
  return %r, %n, %a, %c, %b, %m : tensor<?x96xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x48xf32>
}

// -----

// The decision is per name: an op binding "w" read by xf.add keeps every op
// of that name in float32. Only @forward decides; @forward_packed, its copy,
// reads the same; other functions (the training step) stay float32.
// BF16-LABEL: func.func @forward(
// BF16: xf.parameter "w" : tensor<32x64xf32>
// BF16: xf.parameter "w" : tensor<32x64xf32>
// BF16: xf.parameter "u" {xf.weight_storage = #xf.weight_storage<bf16>}
// BF16-LABEL: func.func @forward_packed(
// BF16: xf.parameter "u" {xf.weight_storage = #xf.weight_storage<bf16>}
// BF16-LABEL: func.func @loss_and_gradients(
// BF16: xf.parameter "u" : tensor<32x64xf32>
// With bf16-gemm-inputs, the GEMMs that read a bf16 weight (those of @forward
// and @forward_packed) are marked xf.bf16_inputs, the one on "w" is not.
// INPUTS-LABEL: func.func @forward(%arg0: tensor<?x64xf32>, %arg1: tensor<?x64xf32>)
// INPUTS: xf.gemm %{{.*}}, %{{.*}} activation none transpose_weight : (
// INPUTS: xf.gemm %{{.*}}, %{{.*}} activation none transpose_weight {xf.bf16_inputs} : (
// INPUTS-LABEL: func.func @forward_packed(
// INPUTS: transpose_weight {xf.bf16_inputs} : (
// INPUTS-LABEL: func.func @loss_and_gradients(
// INPUTS: transpose_weight : (
func.func @forward(%x: tensor<?x64xf32>, %s: tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<32x64xf32>, tensor<?x32xf32>) {
  %w1 = xf.parameter "w" : tensor<32x64xf32>
  %a = xf.gemm %x, %w1 activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  %w2 = xf.parameter "w" : tensor<32x64xf32>
  %b = xf.add %w2, %w2 : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  %u = xf.parameter "u" : tensor<32x64xf32>
  %c = xf.gemm %x, %u activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %a, %b, %c : tensor<?x32xf32>, tensor<32x64xf32>, tensor<?x32xf32>
}
func.func @forward_packed(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %u = xf.parameter "u" : tensor<32x64xf32>
  %c = xf.gemm %x, %u activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %c : tensor<?x32xf32>
}
func.func @loss_and_gradients(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %u = xf.parameter "u" : tensor<32x64xf32>
  %c = xf.gemm %x, %u activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %c : tensor<?x32xf32>
}

// -----

// A concatenation is bf16 only when all of its parts may be: "p" is also read
// by xf.add, so neither "p" nor "q" (nor their concatenation) is bf16; an axis-1
// concatenation (columns) and one of odd rows (copied as pairs of bf16) keep
// their parts in float32 too.
// BF16-LABEL: func.func @forward(
// BF16: xf.parameter "p" : tensor<32x64xf32>
// BF16: xf.parameter "q" : tensor<32x64xf32>
// BF16: xf.concat {{.*}} axis 0 : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
// BF16: xf.parameter "c" : tensor<64x32xf32>
// BF16: xf.parameter "o" : tensor<32x63xf32>
func.func @forward(%x: tensor<?x64xf32>, %z: tensor<?x63xf32>, %s: tensor<32x64xf32>) -> (tensor<?x64xf32>, tensor<32x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %p = xf.parameter "p" : tensor<32x64xf32>
  %q = xf.parameter "q" : tensor<32x64xf32>
  %pq = xf.concat %p, %q axis 0 : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %a = xf.gemm %x, %pq activation none transpose_weight : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %sum = xf.add %p, %s : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  %c = xf.parameter "c" : tensor<64x32xf32>
  %cc = xf.concat %c, %c axis 1 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
  %b = xf.gemm %x, %cc activation none : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %o = xf.parameter "o" : tensor<32x63xf32>
  %oo = xf.concat %o, %o axis 0 : tensor<32x63xf32>, tensor<32x63xf32> -> tensor<64x63xf32>
  %d = xf.gemm %z, %oo activation none transpose_weight : (tensor<?x63xf32>, tensor<64x63xf32>) -> tensor<?x64xf32>
  return %a, %sum, %b, %d : tensor<?x64xf32>, tensor<32x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}
