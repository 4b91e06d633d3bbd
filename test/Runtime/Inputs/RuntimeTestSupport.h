//===- RuntimeTestSupport.h - Helpers for the libxfrt unit tests -*- C++ -*-===//
//
// Builds .safetensors bytes from a header JSON string and a data section, writes files into a
// temporary directory that is removed afterwards, and holds a small test manifest.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_TEST_RUNTIMETESTSUPPORT_H
#define XFRT_TEST_RUNTIMETESTSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace xfrt::test {

// u64 length + header (not padded unless `pad`) + data.
inline std::vector<uint8_t> makeSafetensors(const std::string &header,
                                            const std::vector<uint8_t> &data, bool pad = true) {
  std::string h = header;
  if (pad)
    h.append((8 - h.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i)
    out[i] = uint8_t(uint64_t(h.size()) >> (8 * i));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 4);
  if (!v.empty())
    std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/xfrt-test-XXXXXX";
    const char *d = mkdtemp(tmpl);
    path_ = d ? d : "/tmp";
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (path_ != "/tmp" && std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "warning: could not remove %s\n", path_.c_str());
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  std::string write(const std::string &name, const std::vector<uint8_t> &bytes) const {
    std::string p = file(name);
    std::FILE *f = std::fopen(p.c_str(), "wb");
    if (f) {
      if (!bytes.empty())
        std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    return p;
  }
  std::string write(const std::string &name, const std::string &text) const {
    return write(name, std::vector<uint8_t>(text.begin(), text.end()));
  }

private:
  std::string path_;
};

// Two parameters: "a" [2, 3] (normal), "b" [4] (ones); logits of width 5.
inline const char *testManifestJson() {
  return R"({"model": "tiny", "output": "logits", "encoder_decoder": false, "vocab": 5,
    "max_positions": 4, "d_out": 5, "hyperparameters": {"L": 1, "eps": 1e-05},
    "parameters": [{"name": "a", "shape": [2, 3]}, {"name": "b", "shape": [4], "init": "ones"}],
    "derived": [{"bytes": 64}], "kernels": [{"name": "k0", "kind": "gemm", "flops_per_row": 10}]})";
}

// A header for the test manifest's tensors, F32, a then b, contiguous.
inline std::string testHeader() {
  return R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
         R"("b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})";
}

inline std::vector<float> testValues() { return {1, 2, 3, 4, 5, 6, 0.5f, -1, 2, 8}; }

} // namespace xfrt::test

#endif // XFRT_TEST_RUNTIMETESTSUPPORT_H
