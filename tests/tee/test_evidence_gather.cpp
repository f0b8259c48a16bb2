// What gather-evidence writes for GPUs (tee/evidence/nvidia_evidence.h: write_sdk_evidence_json) is what
// verify-evidence reads: NVIDIA's four-GPU sample, written back as the SDK's JSON, parses to the same
// reports, chains and nonces; base64 round-trips every length (padding 0, 1, 2). And the absent
// hardware is named: a missing configfs-tsm directory is an InputError carrying the advice.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tee/evidence/gather.h"
#include "tee/evidence/tsm_report.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

TEST(GatherEvidence, SdkJsonRoundTrips) {
  const std::string sample = test::fixture("multi_gpu_hopper.json");
  const std::vector<GpuEvidence> gpus = parse_sdk_evidence_json(sample, "sample");
  const nlohmann::json doc = nlohmann::json::parse(sample);
  std::vector<SdkEvidenceEntry> entries;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::vector<std::uint8_t> pem = decode_base64(doc[i]["certificate"].get<std::string>(), "pem");
    entries.push_back(
        {gpus[i].arch, *gpus[i].stated_nonce, gpus[i].report, std::string(pem.begin(), pem.end())});
  }
  const std::vector<GpuEvidence> back = parse_sdk_evidence_json(write_sdk_evidence_json(entries), "written");
  ASSERT_EQ(back.size(), gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(back[i].report, gpus[i].report);
    EXPECT_EQ(back[i].arch, "HOPPER");
    EXPECT_EQ(*back[i].stated_nonce, test::nonce(test::kSdkNonce));
    ASSERT_EQ(back[i].chain.size(), gpus[i].chain.size());
    for (std::size_t c = 0; c < gpus[i].chain.size(); ++c)
      EXPECT_EQ(back[i].chain[c].der(), gpus[i].chain[c].der());
  }
}

TEST(GatherEvidence, Base64RoundTripsEveryPadding) {
  for (std::size_t n = 1; n < 8; ++n) {
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(0xF0 + i));
    const std::string text = encode_base64(bytes);
    EXPECT_EQ(text.size(), 4 * ((n + 2) / 3));
    EXPECT_EQ(decode_base64(text, "b64"), bytes) << text;
  }
  EXPECT_EQ(encode_base64(bytes_of(std::string_view("abc"))), "YWJj");
}

TEST(GatherEvidence, AbsentConfigfsTsmIsNamed) {
  EXPECT_FALSE(tsm_absence(".").has_value());  // a directory may serve (whether it does is tried)
  const std::optional<std::string> why = tsm_absence("no/such/dir");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("not a TDX or SEV-SNP guest, or the kernel lacks CONFIG_TSM_REPORTS"),
            std::string::npos);
  GatherRequest req;
  req.source = EvidenceSource::Tdx;
  req.tsm_dir = "no/such/dir";
  try {
    gather_evidence(req);
    FAIL() << "gathered without hardware";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--source tdx: no configfs-tsm report directory"), std::string::npos) << what;
    EXPECT_NE(what.find("teetrain provision"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tt::tee::evidence
