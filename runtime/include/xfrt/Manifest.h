//===- Manifest.h - The model description a generated object exports -*- C++ -*-===//
//
// xf_model_manifest (docs/abi.md) parsed and checked: the output kind, vocabulary and length
// limits, the parameters in `params` order with their stored shapes and init rules, and the
// sizes of the derived buffers xf_prepare fills. The compiler fills the same struct and writes
// it with renderManifest: one schema for both sides.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_MANIFEST_H
#define XFRT_MANIFEST_H

#include "xfrt/GgmlType.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

// How --random-weights fills a parameter: Normal and Zeros draw N(0, 0.02), Ones 1 + N(0, 0.1).
enum class InitKind { Normal, Ones, Zeros };

// What the forward entry points (xf_forward and its cached and packed forms) read of a
// parameter ("forward_reads"). None: only xf_prepare reads it (it was copied into derived
// buffers), so its pages can go after xf_prepare. Rows: rows picked by token ids or positions
// (embedding gathers). All: the whole tensor on every call (a GEMM weight read in place, a norm
// gain), which the session copies into its huge-page weight region (Session.cpp).
enum class ForwardReads { All, Rows, None };

struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  InitKind init = InitKind::Normal;
  bool bf16 = false; // "dtype": "bf16": the generated code reads bfloat16
  // "dtype": "q8_0" | "q4_0" | "q4_1": the generated code reads ggml blocks of this type
  // (xfc --quantized-like), so the weights must come from a GGUF tensor of exactly this type.
  bool blocks = false;
  GgmlType blockType = GgmlType::F32;
  ForwardReads forwardReads = ForwardReads::All; // absent from a manifest: All
};

// One kernel call of xf_forward, in call order (the index is the profiling site).
struct KernelSpec {
  std::string name, kind, op, loc;
  int64_t flopsPerRow = 0;              // x l
  int64_t flopsPerRowPerContextRow = 0; // x l x l_context (attention)
  // Bytes the roofline charges a call: once, per row, per context row.
  int64_t bytesPerCall = 0, bytesPerRow = 0, bytesPerContextRow = 0;
  bool contextFromSource = false;       // l_context is l_z rather than l
  bool tuned = false;                   // schedule from a tuning database (xfc --tuning-db)
  // The products the kernel's FLOPs run on, and so the peak --profile reads it against: "fp32"
  // (FMA), "bf16" (vdpbf16ps: --bf16-gemm-inputs) or "int8" (vpdpbusd / AMX: --q8-gemm-inputs).
  std::string products = "fp32";
  // bf16 / int8 products: the call runs its rows past its GEMV on AMX tiles where the process
  // may use them (xfrt_amx_bf16_gemm, xfrt_block_gemm), so --profile reads it against the
  // tiles' peak there.
  bool amx = false;
};

struct Manifest {
  std::string model;
  bool outputIsLogits = true; // "output": "logits" | "hidden"
  bool encoderDecoder = false;
  int64_t vocab = 0;
  int64_t maxPositions = 0; // 0: no limit
  int64_t dOut = 0;
  bool cached = false;        // "cached": xf_forward_cached exists (docs/abi.md)
  int64_t cachePositions = 0; // "cache_positions": KV-cache capacity; 0 without a cache
  bool cacheHalf = false;     // "cache_type": "f16": the KV cache holds IEEE float16 ("f32")
  bool cuda = false;          // "device": "cuda": the entry points take GPU addresses (docs/gpu.md)
  bool packed = false;        // "packed": xf_forward_packed (and xf_forward_cached_packed when cached)
  std::vector<std::pair<std::string, std::string>> hyperparameters; // name, JSON text of value
  std::vector<ParameterSpec> parameters;
  std::vector<int64_t> derivedBytes;
  // Per derived buffer, "forward_reads": "none": only xf_prepare reads it (a concatenation that
  // a packed copy was made from), so the session frees it after xf_prepare. Same length as
  // derivedBytes; absent from a manifest: false (the forward reads it).
  std::vector<bool> derivedPrepareOnly;
  // Per derived buffer, "parts": the parameters (indices) whose float32 values, back to back,
  // are the buffer: a row-wise concatenation of parameters, which xf_prepare fills by copying
  // them. A loader may write the parts there itself (WeightSet::filledDerived). Empty for the
  // other buffers; as long as derivedBytes once any buffer has parts, else empty.
  std::vector<std::vector<int64_t>> derivedParts;
  std::vector<KernelSpec> kernels;

  const char *outputName() const { return outputIsLogits ? "logits" : "hidden"; }
  // "decoder", "encoder" or "encoder-decoder".
  std::string kindName() const;
};

// Errors read "manifest: <what>".
Expected<Manifest> parseManifest(std::string_view json);

// The JSON text xfc embeds as xf_model_manifest (keys sorted, two-space indent): the one
// writer of what parseManifest reads. `hyperparameters` values are written as their JSON text;
// a parameter's numel is not written (parseManifest computes it from the shape).
std::string renderManifest(const Manifest &m);

} // namespace xfrt

#endif // XFRT_MANIFEST_H
