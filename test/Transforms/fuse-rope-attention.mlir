// RUN: xf-opt %s --xf-fuse-rope-attention | FileCheck %s

// Llama after xf-fuse-qkv: Q and K are column slices of one GEMM; both
// xf.rope fold into the attention, which reads the slices themselves.
// CHECK-LABEL: func.func @slices_of_one_gemm
func.func @slices_of_one_gemm(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[QKV:.*]] = xf.linear
  // CHECK: %[[Q:.*]] = xf.slice %[[QKV]] axis 1 offset 0
  // CHECK: %[[K:.*]] = xf.slice %[[QKV]] axis 1 offset 64
  // CHECK: %[[V:.*]] = xf.slice %[[QKV]] axis 1 offset 96
  // CHECK-NOT: xf.rope
  // CHECK: xf.attention causal heads 4 kv_heads 2 rope adjacent base 1.000000e+05 %[[Q]], %[[K]], %[[V]] : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  %qkv = xf.linear %x, %w transpose_weight : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %q = xf.slice %qkv axis 1 offset 0 : tensor<?x128xf32> -> tensor<?x64xf32>
  %k = xf.slice %qkv axis 1 offset 64 : tensor<?x128xf32> -> tensor<?x32xf32>
  %v = xf.slice %qkv axis 1 offset 96 : tensor<?x128xf32> -> tensor<?x32xf32>
  %rq = xf.rope adjacent heads 4 %q base 1.0e5 : tensor<?x64xf32> -> tensor<?x64xf32>
  %rk = xf.rope adjacent heads 2 %k base 1.0e5 : tensor<?x32xf32> -> tensor<?x32xf32>
  %a = xf.attention causal heads 4 kv_heads 2 %rq, %rk, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// Hugging Face pairing; separate projections of one activation (no xf-fuse-qkv).
// CHECK-LABEL: func.func @projections_of_one_input
func.func @projections_of_one_input(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[Q:.*]] = xf.linear
  // CHECK: %[[K:.*]] = xf.linear
  // CHECK-NOT: xf.rope
  // CHECK: xf.attention bidirectional heads 4 rope halves base 1.000000e+04 %[[Q]], %[[K]], %[[Q]]
  %q = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = xf.linear %x, %w transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %rq = xf.rope halves heads 4 %q base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %rk = xf.rope halves heads 4 %k base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %a = xf.attention bidirectional heads 4 %rq, %rk, %q : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// Nothing fuses when the positions or the ops would differ: Q and K from
// different rows (%y), a rotated value used again (training reads it), an
// explicit offset, different pairings or bases, only Q rotated, cross-attention.
// CHECK-LABEL: func.func @not_fusable
func.func @not_fusable(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %o: index) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %rx = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %ry = xf.rope adjacent heads 4 %y base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %a = xf.attention causal heads 4 %rx, %ry, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %rq = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %rk = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %b = xf.attention causal heads 4 %rq, %rk, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %oq = xf.rope adjacent heads 4 %x offset %o base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %ok = xf.rope adjacent heads 4 %x offset %o base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %c = xf.attention causal heads 4 %oq, %ok, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %pq = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %pk = xf.rope halves heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %d = xf.attention causal heads 4 %pq, %pk, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %bq = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %bk = xf.rope adjacent heads 4 %x base 1.0e5 : tensor<?x64xf32> -> tensor<?x64xf32>
  %e = xf.attention causal heads 4 %bq, %bk, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: xf.rope
  // CHECK-NEXT: xf.attention causal heads 4 %
  %sq = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %f = xf.attention causal heads 4 %sq, %x, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK-COUNT-2: xf.rope
  // CHECK-NEXT: xf.attention cross heads 4 %
  %cq = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %ck = xf.rope adjacent heads 4 %x base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %g = xf.attention cross heads 4 %cq, %ck, %x : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %a, %b, %rk, %c, %d, %e, %f, %g : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// A packed batch: ropes restarting at the attention's own segments fold in,
// and the fused attention keeps them.
// CHECK-LABEL: func.func @packed_batch
func.func @packed_batch(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %n: tensor<?xi64>) -> tensor<?x64xf32> {
  // CHECK-NOT: xf.rope
  // CHECK: xf.attention causal heads 4 rope halves base 1.000000e+04 %{{.*}}, %{{.*}}, %{{.*}} segments %{{.*}} :
  %q = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %rq = xf.rope halves heads 4 %q segments %n base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %rk = xf.rope halves heads 4 %k segments %n base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %a = xf.attention causal heads 4 %rq, %rk, %q segments %n : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// Ropes over the whole packed rows (positions not restarting per sequence)
// are not what the segmented attention would rotate: no fusion.
// CHECK-LABEL: func.func @ropes_without_the_segments
func.func @ropes_without_the_segments(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %n: tensor<?xi64>) -> tensor<?x64xf32> {
  // CHECK-COUNT-2: xf.rope
  // CHECK: xf.attention causal heads 4 %{{.*}}, %{{.*}}, %{{.*}} segments
  %q = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %rq = xf.rope halves heads 4 %q base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %rk = xf.rope halves heads 4 %k base 1.0e4 : tensor<?x64xf32> -> tensor<?x64xf32>
  %a = xf.attention causal heads 4 %rq, %rk, %q segments %n : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}
