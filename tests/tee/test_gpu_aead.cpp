// GPU AES-GCM against OpenSSL (tee::Aead): byte-identical seal, open of OpenSSL-sealed messages,
// tamper detection per message in mixed batches, in-place operation, buffer growth across calls.
// Every test skips (and CTest reports it skipped) when no CUDA device is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "base/cuda/device.h"
#include "base/cuda/device_memory.h"
#include "tee/crypto/aead.h"
#include "tee/cuda/gpu_aead.h"
#include "tee/detail/nonce.h"

namespace tt::tee::cuda {
namespace {

// OpenSSL at nonces of the test's choosing: the AEAD inside tee/.
using Aead = ::tt::tee::detail::NonceAead;
using ::tt::tee::detail::Nonce;

using ::tt::cuda::DeviceBytes;

class GpuAead : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::tt::cuda::device_count_or_zero() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

std::vector<std::uint8_t> random_vec(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// One message described on the host, plus what OpenSSL makes of it.
struct HostMsg {
  std::vector<std::uint8_t> plain;
  std::vector<std::uint8_t> aad;
  Nonce nonce;
  std::vector<std::uint8_t> sealed;  // OpenSSL: ciphertext || tag
};

HostMsg make_host_msg(Aead& ssl, std::size_t length, std::size_t aad_len, std::mt19937_64& rng) {
  HostMsg m;
  m.plain = random_vec(length, rng);
  m.aad = random_vec(aad_len, rng);
  m.nonce = Nonce::make(static_cast<std::uint32_t>(rng()), rng());
  m.sealed.resize(length + kTagSize);
  ssl.seal_append_tag(m.nonce, m.aad, m.plain, m.sealed);
  return m;
}

GpuMessage gpu_msg(const HostMsg& h, const std::byte* in, std::byte* out) {
  GpuMessage g{};
  g.in = in;
  g.out = out;
  g.length = h.plain.size();
  std::copy(h.nonce.bytes.begin(), h.nonce.bytes.end(), g.nonce.begin());
  std::copy(h.aad.begin(), h.aad.end(), g.aad.begin());
  g.aad_len = static_cast<std::uint32_t>(h.aad.size());
  return g;
}

// Byte offsets of consecutive regions of the given sizes: packed back to back (odd offsets, the
// unaligned path) or each on a 256-byte boundary (the 16-byte vector path).
std::vector<std::size_t> layout(const std::vector<std::size_t>& sizes, bool aligned, std::size_t& total) {
  std::vector<std::size_t> off;
  total = 0;
  for (std::size_t s : sizes) {
    if (aligned) total = (total + 255) / 256 * 256;
    off.push_back(total);
    total += s;
  }
  total = std::max<std::size_t>(total, 1);
  return off;
}

void upload(const DeviceBytes& d, std::size_t off, const std::vector<std::uint8_t>& v) {
  if (!v.empty())
    TT_CUDA_CHECK(cudaMemcpy(d.as<std::uint8_t>() + off, v.data(), v.size(), cudaMemcpyHostToDevice));
}
std::vector<std::uint8_t> download(const DeviceBytes& d, std::size_t off, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  if (n) TT_CUDA_CHECK(cudaMemcpy(v.data(), d.as<std::uint8_t>() + off, n, cudaMemcpyDeviceToHost));
  return v;
}
std::byte* at(const DeviceBytes& d, std::size_t off) {
  return d.as<std::byte>() + off;
}

// "" when equal; otherwise where ciphertext||tag first differs (ciphertext vs tag), so one GPU run
// tells counter mode and GHASH failures apart.
std::string describe_mismatch(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
  if (got == want) return "";
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  const std::size_t ct_len = want.size() - kTagSize;
  const auto first =
      static_cast<std::size_t>(std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
  const bool ct_ok = std::equal(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(ct_len), want.begin());
  return std::string(ct_ok ? "ciphertext ok, tag differs" : "ciphertext differs") +
         " (first differing byte " + std::to_string(first) + " of " + std::to_string(want.size()) + ")";
}

const std::size_t kSizes[] = {0, 1, 15, 16, 17, 4096, 32767, 32768, 32769, (1u << 20) + 5};
const std::size_t kAads[] = {0, 75, 96};

struct KeyCase {
  Cipher cipher;
  bool aligned;
};

class GpuAeadBatch : public GpuAead, public ::testing::WithParamInterface<KeyCase> {};

TEST_P(GpuAeadBatch, SealMatchesOpenSslByteForByte) {
  const KeyCase kc = GetParam();
  std::mt19937_64 rng(11);
  const auto key = random_vec(cipher_key_size(kc.cipher), rng);
  Aead ssl(kc.cipher, key);
  std::vector<HostMsg> msgs;
  for (std::size_t len : kSizes)
    for (std::size_t aad : kAads) msgs.push_back(make_host_msg(ssl, len, aad, rng));

  std::vector<std::size_t> in_sizes, out_sizes;
  for (const auto& m : msgs) {
    in_sizes.push_back(m.plain.size());
    out_sizes.push_back(m.sealed.size());
  }
  std::size_t in_total = 0, out_total = 0;
  const auto in_off = layout(in_sizes, kc.aligned, in_total);
  const auto out_off = layout(out_sizes, kc.aligned, out_total);
  DeviceBytes in(in_total), out(out_total);
  TT_CUDA_CHECK(cudaMemset(out.get(), 0xAA, out_total));
  std::vector<GpuMessage> batch;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    upload(in, in_off[i], msgs[i].plain);
    batch.push_back(gpu_msg(msgs[i], at(in, in_off[i]), at(out, out_off[i])));
  }

  GpuAesGcm gpu(key, nullptr);
  gpu.seal_async(batch);
  gpu.synchronize();
  for (std::size_t i = 0; i < msgs.size(); ++i)
    EXPECT_EQ(describe_mismatch(download(out, out_off[i], out_sizes[i]), msgs[i].sealed), "")
        << "message " << i << ": length " << msgs[i].plain.size() << ", aad " << msgs[i].aad.size();
}

TEST_P(GpuAeadBatch, OpensOpenSslSealedMessages) {
  const KeyCase kc = GetParam();
  std::mt19937_64 rng(12);
  const auto key = random_vec(cipher_key_size(kc.cipher), rng);
  Aead ssl(kc.cipher, key);
  std::vector<HostMsg> msgs;
  for (std::size_t len : kSizes)
    for (std::size_t aad : kAads) msgs.push_back(make_host_msg(ssl, len, aad, rng));

  std::vector<std::size_t> in_sizes, out_sizes;
  for (const auto& m : msgs) {
    in_sizes.push_back(m.sealed.size());
    out_sizes.push_back(m.plain.size());
  }
  std::size_t in_total = 0, out_total = 0;
  const auto in_off = layout(in_sizes, kc.aligned, in_total);
  const auto out_off = layout(out_sizes, kc.aligned, out_total);
  DeviceBytes in(in_total), out(out_total);
  std::vector<GpuMessage> batch;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    upload(in, in_off[i], msgs[i].sealed);
    batch.push_back(gpu_msg(msgs[i], at(in, in_off[i]), at(out, out_off[i])));
  }

  GpuAesGcm gpu(key, nullptr);
  const std::vector<bool> ok = gpu.open(batch);
  ASSERT_EQ(ok.size(), msgs.size());
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    EXPECT_TRUE(ok[i]) << "message " << i;
    EXPECT_EQ(download(out, out_off[i], out_sizes[i]), msgs[i].plain) << "message " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Keys, GpuAeadBatch,
                         ::testing::Values(KeyCase{Cipher::Aes256Gcm, false},
                                           KeyCase{Cipher::Aes256Gcm, true},
                                           KeyCase{Cipher::Aes128Gcm, false},
                                           KeyCase{Cipher::Aes128Gcm, true}),
                         [](const ::testing::TestParamInfo<KeyCase>& i) {
                           return std::string(i.param.cipher == Cipher::Aes256Gcm ? "aes256" : "aes128") +
                                  (i.param.aligned ? "_aligned" : "_packed");
                         });

// A batch mixing good messages and every kind of bad one: only the bad ones fail, and their
// plaintext output is all zero; the good ones decrypt correctly. Packed (byte path) and aligned
// (16-byte path) buffers both zero failed outputs.
class GpuAeadTamper : public GpuAead, public ::testing::WithParamInterface<bool> {};

TEST_P(GpuAeadTamper, TamperedMessagesFailAloneAndAreZeroed) {
  const bool aligned = GetParam();
  std::mt19937_64 rng(13);
  const auto key = random_vec(32, rng);
  Aead ssl(Cipher::Aes256Gcm, key);
  enum class Fault { None, CipherBit, TagBit, AadByte, Nonce, Truncated };
  struct Case {
    std::size_t length;
    Fault fault;
  };
  const std::vector<Case> cases = {{4096 + 7, Fault::None},
                                   {4096 + 7, Fault::CipherBit},
                                   {(1u << 20) + 5, Fault::None},
                                   {(1u << 20) + 5, Fault::CipherBit},
                                   {100000, Fault::TagBit},
                                   {777, Fault::AadByte},
                                   {777, Fault::Nonce},
                                   {0, Fault::TagBit},
                                   {0, Fault::None},
                                   {65536, Fault::Truncated},
                                   {65536, Fault::None},
                                   {33, Fault::AadByte}};
  std::vector<HostMsg> msgs;
  std::vector<std::size_t> in_sizes, out_sizes;
  for (const Case& c : cases) {
    msgs.push_back(make_host_msg(ssl, c.length, 75, rng));
    in_sizes.push_back(msgs.back().sealed.size());
    out_sizes.push_back(c.length);
  }
  std::size_t in_total = 0, out_total = 0;
  const auto in_off = layout(in_sizes, aligned, in_total);
  const auto out_off = layout(out_sizes, aligned, out_total);
  DeviceBytes in(in_total), out(out_total);
  TT_CUDA_CHECK(cudaMemset(out.get(), 0xAA, out_total));
  std::vector<GpuMessage> batch;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::uint8_t> wire = msgs[i].sealed;
    GpuMessage g = gpu_msg(msgs[i], at(in, in_off[i]), at(out, out_off[i]));
    switch (cases[i].fault) {
      case Fault::None:
        break;
      case Fault::CipherBit:
        wire[wire.size() / 3] ^= 0x10;
        break;
      case Fault::TagBit:
        wire.back() ^= 0x01;
        break;
      case Fault::AadByte:
        g.aad[74] ^= 0x80;
        break;
      case Fault::Nonce:
        g.nonce[11] ^= 0x01;
        break;
      case Fault::Truncated:  // one byte less of ciphertext: the tag moves, the length changes
        wire.erase(wire.begin() + static_cast<std::ptrdiff_t>(cases[i].length / 2));
        g.length -= 1;
        break;
    }
    upload(in, in_off[i], wire);
    batch.push_back(g);
  }

  GpuAesGcm gpu(key, nullptr);
  const std::vector<bool> ok = gpu.open(batch);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const bool good = cases[i].fault == Fault::None;
    EXPECT_EQ(ok[i], good) << "message " << i;
    const auto got = download(out, out_off[i], batch[i].length);
    if (good)
      EXPECT_EQ(got, msgs[i].plain) << "message " << i;
    else
      EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](std::uint8_t b) { return b == 0; }))
          << "message " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GpuAeadTamper, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "aligned" : "packed";
                         });

TEST_F(GpuAead, InPlaceSealAndOpen) {
  std::mt19937_64 rng(14);
  const auto key = random_vec(32, rng);
  Aead ssl(Cipher::Aes256Gcm, key);
  const HostMsg m = make_host_msg(ssl, (1u << 18) + 3, 75, rng);
  DeviceBytes buf(m.sealed.size());
  upload(buf, 0, m.plain);
  GpuAesGcm gpu(key, nullptr);
  const GpuMessage g = gpu_msg(m, at(buf, 0), at(buf, 0));
  gpu.seal_async({&g, 1});
  gpu.synchronize();
  EXPECT_EQ(download(buf, 0, m.sealed.size()), m.sealed);
  const std::vector<bool> ok = gpu.open({&g, 1});
  EXPECT_TRUE(ok[0]);
  EXPECT_EQ(download(buf, 0, m.plain.size()), m.plain);
}

// Several calls in flight on one stream, growing the internal buffers between them.
TEST_F(GpuAead, BackToBackCallsOnAStreamWithGrowingBatches) {
  std::mt19937_64 rng(15);
  const auto key = random_vec(16, rng);
  Aead ssl(Cipher::Aes128Gcm, key);
  cudaStream_t stream = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    GpuAesGcm gpu(key, stream);
    struct Call {
      std::vector<HostMsg> msgs;
      std::vector<std::size_t> in_off, out_off;
      DeviceBytes in, out;
    };
    std::vector<Call> calls(4);
    for (std::size_t c = 0; c < calls.size(); ++c) {
      Call& call = calls[c];
      const std::size_t count = 1 + 7 * c;
      std::vector<std::size_t> in_sizes, out_sizes;
      for (std::size_t i = 0; i < count; ++i) {
        call.msgs.push_back(make_host_msg(ssl, (i * 9973 + c * 40000) % 200000, i % 97, rng));
        in_sizes.push_back(call.msgs.back().plain.size());
        out_sizes.push_back(call.msgs.back().sealed.size());
      }
      std::size_t in_total = 0, out_total = 0;
      call.in_off = layout(in_sizes, false, in_total);
      call.out_off = layout(out_sizes, false, out_total);
      call.in = DeviceBytes(in_total);
      call.out = DeviceBytes(out_total);
      std::vector<GpuMessage> batch;
      for (std::size_t i = 0; i < count; ++i) {
        upload(call.in, call.in_off[i], call.msgs[i].plain);
        batch.push_back(gpu_msg(call.msgs[i], at(call.in, call.in_off[i]), at(call.out, call.out_off[i])));
      }
      gpu.seal_async(batch);  // the batch vector dies here: descriptors must already be staged
    }
    gpu.synchronize();
    for (const Call& call : calls)
      for (std::size_t i = 0; i < call.msgs.size(); ++i)
        EXPECT_EQ(download(call.out, call.out_off[i], call.msgs[i].sealed.size()), call.msgs[i].sealed);
  }
  TT_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_F(GpuAead, RejectsBadArgumentsAndHandlesEmptyBatches) {
  const std::vector<std::uint8_t> k24(24), k32(32);
  EXPECT_THROW(GpuAesGcm(k24, nullptr), std::invalid_argument);
  GpuAesGcm gpu(k32, nullptr);
  gpu.seal_async({});
  EXPECT_TRUE(gpu.open({}).empty());
  DeviceBytes buf(64);
  GpuMessage g{};
  g.in = at(buf, 0);
  g.out = at(buf, 0);
  g.length = 16;
  g.aad_len = 97;
  EXPECT_THROW(gpu.seal_async({&g, 1}), std::invalid_argument);
  g.aad_len = 0;
  g.out = nullptr;
  EXPECT_THROW(gpu.seal_async({&g, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace tt::tee::cuda
