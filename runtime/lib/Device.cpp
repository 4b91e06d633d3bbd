//===- Device.cpp - GPU memory through the Halide runtime's CUDA interface ===//
#include "xfrt/Device.h"

#include "xfrt/CudaDriver.h"
#include "xfrt/DeviceLinks.h"
#include "xfrt/HalideErrors.h"

#include "HalideBufferLayout.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

namespace {

using xfrt::HalideBuffer;
using xfrt::HalideDimension;
constexpr uint64_t kHostDirty = 1, kDeviceDirty = 2;
constexpr uint8_t kUInt = 1;

} // namespace

namespace xfrt {
namespace {

// Halide's device-memory functions: this copy's weak references, or the executable's for the
// server library's copy (DeviceLinks.h).
const DeviceLinks &halide() { return deviceLinks(); }

// Bytes as a 2-D uint8 buffer (Halide's extents are 32-bit): rows of 64 KiB, or one row.
struct ByteView {
  HalideDimension dims[2];
  HalideBuffer buffer{};
  ByteView(uint64_t handle, uint64_t bytes) {
    constexpr uint64_t kRow = uint64_t(1) << 16;
    bool rows = bytes > kRow;
    dims[0] = {0, int32_t(rows ? kRow : bytes), 1, 0};
    dims[1] = {0, int32_t(rows ? bytes / kRow : 1), int32_t(rows ? kRow : bytes), 0};
    buffer.device = handle;
    buffer.deviceInterface = handle ? halide().cudaDeviceInterface() : nullptr;
    buffer.code = kUInt, buffer.bits = 8, buffer.lanes = 1;
    buffer.dimensions = 2;
    buffer.dim = dims;
  }
};

Status halideFailure(const std::string &what, int rc) {
  std::string reason = takeHalideError();
  return makeError(what + " failed" +
                   (reason.empty() ? " (Halide error " + std::to_string(rc) + ")" : ": " + reason));
}

bool haveHalideCuda() {
  const DeviceLinks &h = halide();
  return h.cudaDeviceInterface && h.deviceMalloc && h.deviceFree && h.copyToDevice &&
         h.copyToHost && h.deviceSyncGlobal;
}

uint64_t bytesInUse = 0, bytesPeak = 0;

// Copies [0, bytes) in pieces a ByteView can describe exactly (whole 64 KiB rows, then
// the rest as one row).
template <typename Copy> Status inPieces(uint64_t handle, uint64_t bytes, Copy copy) {
  constexpr uint64_t kRow = uint64_t(1) << 16, kMaxRows = (uint64_t(1) << 30) / kRow;
  uint64_t done = 0;
  while (done < bytes) {
    uint64_t left = bytes - done;
    uint64_t piece = left > kRow ? std::min(left / kRow, kMaxRows) * kRow : left;
    ByteView view(handle + done, piece);
    if (Status s = copy(view, done); !s)
      return s;
    done += piece;
  }
  return Status::success();
}

} // namespace

Status checkCudaDriver() {
  const char *library = driverLibraryName();
  void *driver = openDriver();
  if (!driver)
    return makeError(std::string("the CUDA driver library ") + library +
                     " is not installed (no NVIDIA driver on this machine)");
  using Init = int (*)(unsigned);
  using Count = int (*)(int *);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  if (!init || !count)
    return makeError(std::string("the CUDA driver library ") + library +
                     " lacks cuInit or cuDeviceGetCount");
  int devices = 0;
  if (int rc = init(0); rc != 0)
    return makeError("no usable NVIDIA GPU: the CUDA driver's cuInit failed with error " +
                     std::to_string(rc) +
                     (rc == 100  ? " (no CUDA-capable device)"
                      : rc == 34 ? " (a stub driver library, not a real driver)"
                                 : ""));
  if (int rc = count(&devices); rc != 0 || devices == 0)
    return makeError("no NVIDIA GPU: the CUDA driver reports no devices");
  return Status::success();
}

Status checkCudaDevice() {
  if (!openDriver())
    return makeError(std::string("this executable runs on an NVIDIA GPU (built with --target "
                                 "cuda) but the CUDA driver library ") +
                     driverLibraryName() + " is not installed (no NVIDIA driver on this machine)");
  if (Status s = checkCudaDriver(); !s)
    return s;
  if (!haveHalideCuda())
    return makeError("this executable lacks Halide's CUDA runtime (rebuild it with xfc "
                     "--target cuda)");
  return Status::success();
}

void synchronizeDevice() {
  // Not halide_device_sync with a buffer naming only the interface: Halide rejects a buffer
  // with an interface but no device handle ("Buffer has a non-null device_interface but
  // device is 0"), which made --profile fail on the GPU.
  if (haveHalideCuda())
    halide().deviceSyncGlobal(nullptr, halide().cudaDeviceInterface());
}

uint64_t deviceBytesInUse() { return bytesInUse; }
uint64_t deviceBytesPeak() { return bytesPeak; }

DeviceMemory::DeviceMemory(DeviceMemory &&other) noexcept
    : handle_(std::exchange(other.handle_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory &DeviceMemory::operator=(DeviceMemory &&other) noexcept {
  if (this != &other) {
    DeviceMemory old(std::move(*this));
    handle_ = std::exchange(other.handle_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (!handle_ || !haveHalideCuda())
    return;
  ByteView view(handle_, bytes_); // the whole allocation (whole 64 KiB rows)
  halide().deviceFree(nullptr, &view.buffer);
  bytesInUse -= bytes_;
}

Expected<DeviceMemory> DeviceMemory::allocate(uint64_t bytes) {
  if (!haveHalideCuda())
    return makeError("device memory: this executable lacks Halide's CUDA runtime");
  // Whole 64 KiB rows (and at least one), so one ByteView describes the allocation.
  constexpr uint64_t kRow = uint64_t(1) << 16;
  uint64_t rounded = std::max<uint64_t>(kRow, (bytes + kRow - 1) / kRow * kRow);
  if (rounded / kRow > uint64_t(INT32_MAX))
    return makeError("device memory: " + std::to_string(bytes) + " bytes is too large");
  ByteView view(0, rounded);
  if (int rc = halide().deviceMalloc(nullptr, &view.buffer, halide().cudaDeviceInterface()))
    return halideFailure("allocating " + std::to_string(rounded) + " bytes of GPU memory", rc);
  DeviceMemory m;
  m.handle_ = view.buffer.device;
  m.bytes_ = rounded;
  bytesInUse += rounded;
  bytesPeak = std::max(bytesPeak, bytesInUse);
  return m;
}

Status DeviceMemory::upload(const void *host, uint64_t bytes) {
  if (bytes > bytes_)
    return makeError("device upload of " + std::to_string(bytes) + " bytes into " +
                     std::to_string(bytes_));
  return inPieces(handle_, bytes, [&](ByteView &view, uint64_t offset) -> Status {
    view.buffer.host = const_cast<uint8_t *>(static_cast<const uint8_t *>(host) + offset);
    view.buffer.flags = kHostDirty;
    int rc = halide().copyToDevice(nullptr, &view.buffer, halide().cudaDeviceInterface());
    return rc ? halideFailure("copying to the GPU", rc) : Status::success();
  });
}

Status DeviceMemory::download(void *host, uint64_t bytes) const {
  if (bytes > bytes_)
    return makeError("device download of " + std::to_string(bytes) + " bytes from " +
                     std::to_string(bytes_));
  return inPieces(handle_, bytes, [&](ByteView &view, uint64_t offset) -> Status {
    view.buffer.host = static_cast<uint8_t *>(host) + offset;
    view.buffer.flags = kDeviceDirty;
    int rc = halide().copyToHost(nullptr, &view.buffer);
    return rc ? halideFailure("copying from the GPU", rc) : Status::success();
  });
}

} // namespace xfrt
