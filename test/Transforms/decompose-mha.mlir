// RUN: xf-opt %s --xf-decompose-mha | FileCheck %s

// CHECK-LABEL: func.func @self_attention
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>
func.func @self_attention(%x: tensor<?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>,
                          %wv: tensor<64x32xf32>, %wo: tensor<32x64xf32>, %b: tensor<64xf32>,
                          %bv: tensor<32xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[Q:.*]] = xf.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  // CHECK: %[[K:.*]] = xf.linear %[[X]], %{{.*}} : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  // CHECK: %[[V:.*]] = xf.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  // CHECK: %[[A:.*]] = xf.attention causal heads 4 %[[Q]], %[[K]], %[[V]] : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  // CHECK: %[[O:.*]] = xf.linear %[[A]], %{{.*}}, %{{.*}} : tensor<?x32xf32>, tensor<32x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  // CHECK-NOT: xf.mha
  // CHECK: return %[[O]]
  %y = xf.mha causal heads 4 %x q %wq, %b k %wk v %wv, %bv o %wo, %b : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Cross-attention: K and V project the context, Q the input; nn.Linear layout
// and an explicit scale carry over.
// CHECK-LABEL: func.func @cross_attention
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[Z:.*]]: tensor<?x48xf32>
func.func @cross_attention(%x: tensor<?x64xf32>, %z: tensor<?x48xf32>, %wq: tensor<64x64xf32>,
                           %wkv: tensor<64x48xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[Q:.*]] = xf.linear %[[X]], %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  // CHECK: %[[K:.*]] = xf.linear %[[Z]], %{{.*}} transpose_weight : tensor<?x48xf32>, tensor<64x48xf32> -> tensor<?x64xf32>
  // CHECK: %[[V:.*]] = xf.linear %[[Z]], %{{.*}} transpose_weight
  // CHECK: xf.attention cross heads 2 %[[Q]], %[[K]], %[[V]] scale 5.000000e-01
  // CHECK: xf.linear %{{.*}}, %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %y = xf.mha cross heads 2 %x context %z q %wq k %wkv v %wkv o %wq scale 0.5 transpose_weights : (tensor<?x64xf32>, tensor<?x48xf32>, tensor<64x64xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Llama: rotary positions on Q (H heads) and K (H_kv heads) between the
// projections and the attention, grouped K/V heads passed through; V is not rotated.
// CHECK-LABEL: func.func @rope_and_grouped_heads
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>
func.func @rope_and_grouped_heads(%x: tensor<?x64xf32>, %wq: tensor<64x64xf32>,
                                  %wkv: tensor<32x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[Q:.*]] = xf.linear %[[X]], %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  // CHECK: %[[K:.*]] = xf.linear %[[X]], %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  // CHECK: %[[V:.*]] = xf.linear %[[X]], %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  // CHECK: %[[RQ:.*]] = xf.rope adjacent heads 4 %[[Q]] base 1.000000e+05 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: %[[RK:.*]] = xf.rope adjacent heads 2 %[[K]] base 1.000000e+05 : tensor<?x32xf32> -> tensor<?x32xf32>
  // CHECK: xf.attention causal heads 4 kv_heads 2 %[[RQ]], %[[RK]], %[[V]] : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  %y = xf.mha causal heads 4 kv_heads 2 rope adjacent base 1.0e5 %x q %wq k %wkv v %wkv o %wq transpose_weights : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// A packed batch (xf-pack-sequences): the segments reach the ropes and the
// attention; cross attention keeps the context's key_segments.
// CHECK-LABEL: func.func @packed_batch
func.func @packed_batch(%x: tensor<?x64xf32>, %z: tensor<?x64xf32>, %wq: tensor<64x64xf32>, %n: tensor<?xi64>, %nz: tensor<?xi64>) -> tensor<?x64xf32> {
  // CHECK: xf.rope adjacent heads 4 %{{.*}} segments %arg3 base
  // CHECK: xf.rope adjacent heads 4 %{{.*}} segments %arg3 base
  // CHECK: xf.attention causal heads 4 %{{.*}}, %{{.*}}, %{{.*}} segments %arg3 :
  // CHECK: xf.attention cross heads 4 %{{.*}}, %{{.*}}, %{{.*}} segments %arg3 key_segments %arg4 :
  %y = xf.mha causal heads 4 rope adjacent base 1.0e4 %x q %wq k %wq v %wq o %wq segments %n : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
  %c = xf.mha cross heads 4 %y context %z q %wq k %wq v %wq o %wq segments %n key_segments %nz : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x64xf32>
  return %c : tensor<?x64xf32>
}
