//===- HostTarget.cpp - The Halide target this machine can run ------------===//
//
// Halide's get_host_target() names a CPU by its family and model and, for some
// (AMD family 0x19 models of Zen 4), sets the whole AVX-512 feature set from
// the model alone. A virtual machine may hide AVX-512 from cpuid and leave the
// ZMM state off in XCR0 (an EPYC Zen 4 with AVX2 only has been seen): the
// kernels Halide then emits die with SIGILL. So "host" is Halide's target with
// every vector feature this CPU and OS do not both enable taken out — the
// cpuid bits and XCR0's state bits, as the runtime's own dispatch reads them.
//
//===----------------------------------------------------------------------===//

#include "KernelPipelines.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mlir::xf {

namespace {

using T = Halide::Target;

bool bit(uint32_t word, int index) { return (word >> index) & 1u; }

void drop(Halide::Target &target, std::initializer_list<T::Feature> features,
          std::vector<std::string> *dropped) {
  for (T::Feature f : features)
    if (target.has_feature(f)) {
      target = target.without_feature(f);
      if (dropped)
        dropped->push_back(T::feature_to_name(f));
    }
}

} // namespace

Halide::Target x86TargetWithinCpu(Halide::Target target, const X86CpuFeatureWords &cpu,
                                  std::vector<std::string> *dropped) {
  if (target.arch != T::X86)
    return target;
  // XCR0: bits 1-2 the SSE and AVX (YMM) state, 5-7 the opmask and ZMM state.
  const bool osAvx = bit(cpu.leaf1Ecx, 27) && (cpu.xcr0 & 0x6) == 0x6;
  const bool osAvx512 = osAvx && (cpu.xcr0 & 0xe0) == 0xe0;
  const bool avx = osAvx && bit(cpu.leaf1Ecx, 28);
  const bool avx2 = avx && bit(cpu.leaf7Ebx, 5);
  // Halide's AVX512 is F + CD; avx512_skylake adds VL, DQ, BW; avx512_cannonlake IFMA and
  // VBMI; avx512_zen4 / _sapphirerapids VNNI and BF16 among others.
  const bool avx512 = osAvx512 && avx2 && bit(cpu.leaf7Ebx, 16) && bit(cpu.leaf7Ebx, 28);
  const bool skylake =
      avx512 && bit(cpu.leaf7Ebx, 17) && bit(cpu.leaf7Ebx, 30) && bit(cpu.leaf7Ebx, 31);
  const bool cannonlake = skylake && bit(cpu.leaf7Ebx, 21) && bit(cpu.leaf7Ecx, 1);
  const bool vnniBf16 = cannonlake && bit(cpu.leaf7Ecx, 11) && bit(cpu.leaf7Sub1Eax, 5);
  if (!bit(cpu.leaf1Ecx, 19))
    drop(target, {T::SSE41}, dropped);
  if (!avx)
    drop(target, {T::AVX, T::F16C, T::FMA, T::FMA4}, dropped);
  if (!bit(cpu.leaf1Ecx, 12))
    drop(target, {T::FMA}, dropped);
  if (!bit(cpu.leaf1Ecx, 29))
    drop(target, {T::F16C}, dropped);
  if (!avx2 || !bit(cpu.leaf7Sub1Eax, 4))
    drop(target, {T::AVXVNNI}, dropped);
  if (!avx2)
    drop(target, {T::AVX2}, dropped);
  if (!vnniBf16)
    drop(target, {T::AVX512_Zen4, T::AVX512_Zen5, T::AVX512_SapphireRapids, T::AVX10_1}, dropped);
  if (!cannonlake)
    drop(target, {T::AVX512_Cannonlake}, dropped);
  if (!skylake)
    drop(target, {T::AVX512_Skylake}, dropped);
  if (!avx512)
    drop(target, {T::AVX512, T::AVX512_KNL}, dropped);
  return target;
}

Halide::Target hostHalideTarget(std::vector<std::string> *dropped) {
  Halide::Target host = Halide::get_host_target();
#if defined(__x86_64__) || defined(__i386__)
  X86CpuFeatureWords cpu;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d))
    cpu.leaf1Ecx = c;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    cpu.leaf7Ebx = b, cpu.leaf7Ecx = c;
    if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
      cpu.leaf7Sub1Eax = a;
  }
  if (bit(cpu.leaf1Ecx, 27)) { // OSXSAVE: xgetbv may be executed
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    cpu.xcr0 = lo;
  }
  host = x86TargetWithinCpu(host, cpu, dropped);
#endif
  return host;
}

std::vector<std::string> hostFeaturesLeftOut() {
  std::vector<std::string> dropped;
  hostHalideTarget(&dropped);
  return dropped;
}

} // namespace mlir::xf
