#include "comm/secure/real_evidence.h"

#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "tee/identity/kx_binding.h"

namespace tt::comm {

namespace {

constexpr std::string_view kMagic = "TTREAL01";

void put_block(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& block) {
  const std::size_t at = out.size();
  out.resize(at + 4);
  tee::store_be32(out.data() + at, static_cast<std::uint32_t>(block.size()));
  out.insert(out.end(), block.begin(), block.end());
}

[[noreturn]] void malformed(const std::string& what) {
  throw IntegrityError("malformed real evidence: " + what);
}

// Reads one length-prefixed block at `at` of at most `max` bytes (at least `min`), moving `at` on.
std::vector<std::uint8_t> take_block(tee::ByteView bytes, std::size_t& at, std::size_t min, std::size_t max,
                                     const char* what) {
  if (bytes.size() - at < 4) malformed(std::string("cut short before the ") + what);
  const std::size_t n = tee::load_be32(bytes.data() + at);
  at += 4;
  if (n < min || n > max)
    malformed(std::string(what) + " of " + std::to_string(n) + " bytes (" + std::to_string(min) + " .. " +
              std::to_string(max) + " allowed)");
  if (bytes.size() - at < n) malformed(std::string("cut short inside the ") + what);
  std::vector<std::uint8_t> block(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                  bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
  at += n;
  return block;
}

RealVerdict refuse(std::string reason) {
  return {.ok = false, .reason = std::move(reason), .measurements = ""};
}

}  // namespace

std::optional<RealAttestationKind> real_attestation_kind(std::string_view name) {
  for (const RealAttestationKind& k : kRealAttestationKinds)
    if (name == k.name) return k;
  return std::nullopt;
}

const char* cpu_tee_name(CpuTee t) {
  return t == CpuTee::Tdx ? "Intel TDX" : "AMD SEV-SNP";
}

std::vector<std::uint8_t> RealEvidenceMessage::serialize() const {
  std::vector<std::uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(static_cast<std::uint8_t>(kind.cpu));
  out.push_back(kind.gpu ? 1 : 0);
  out.push_back(0);
  out.push_back(0);
  out.resize(out.size() + 4);
  tee::store_be32(out.data() + out.size() - 4, rank);
  out.insert(out.end(), answers.begin(), answers.end());
  out.insert(out.end(), kx_public.begin(), kx_public.end());
  put_block(out, evidence.cpu);
  put_block(out, evidence.cpu_certs);
  put_block(out, evidence.gpu);
  return out;
}

RealEvidenceMessage RealEvidenceMessage::deserialize(tee::ByteView bytes) {
  if (bytes.size() < kFixedSize || bytes.size() > kMaxSerializedSize)
    malformed("size " + std::to_string(bytes.size()) + " outside " + std::to_string(kFixedSize) + " .. " +
              std::to_string(kMaxSerializedSize));
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin())) malformed("bad magic");
  RealEvidenceMessage m;
  const std::uint8_t cpu = bytes[8];
  const std::uint8_t gpu = bytes[9];
  if ((cpu != static_cast<std::uint8_t>(CpuTee::Tdx) && cpu != static_cast<std::uint8_t>(CpuTee::Snp)) ||
      gpu > 1 || bytes[10] != 0 || bytes[11] != 0)
    malformed("unknown kind");
  const auto kind = std::find_if(kRealAttestationKinds.begin(), kRealAttestationKinds.end(),
                                 [&](const RealAttestationKind& k) {
                                   return static_cast<std::uint8_t>(k.cpu) == cpu && k.gpu == (gpu == 1);
                                 });
  m.kind = *kind;  // every (cpu, gpu) pair is in the table
  m.rank = tee::load_be32(bytes.data() + 12);
  std::copy_n(bytes.begin() + 16, 32, m.answers.begin());
  std::copy_n(bytes.begin() + 48, 32, m.kx_public.begin());
  std::size_t at = 80;
  m.evidence.cpu = take_block(bytes, at, 1, kMaxCpuBytes, "CPU evidence");
  m.evidence.cpu_certs = take_block(bytes, at, 0, kMaxCertBytes, "certificates");
  m.evidence.gpu = take_block(bytes, at, m.kind.gpu ? 1 : 0, m.kind.gpu ? kMaxGpuBytes : 0, "GPU evidence");
  if (at != bytes.size()) malformed(std::to_string(bytes.size() - at) + " trailing bytes");
  return m;
}

RealVerdict check_real_message(tee::ByteView wire, const RealLinkCheck& c,
                               std::optional<RealEvidenceMessage>& out) {
  const std::string from = "from rank " + std::to_string(c.peer);
  if (std::equal(wire.begin(), wire.end(), c.own_message.begin(), c.own_message.end()))
    return refuse("reflected evidence: rank " + std::to_string(c.me) + "'s own evidence came back " + from);
  RealEvidenceMessage m;
  try {
    m = RealEvidenceMessage::deserialize(wire);
  } catch (const IntegrityError& e) {
    return refuse(e.what());
  }
  if (m.rank == c.me)
    return refuse("reflected evidence: evidence of rank " + std::to_string(c.me) + " itself came back " +
                  from);
  if (m.rank != c.peer)
    return refuse("relayed evidence: rank " + std::to_string(m.rank) + "'s evidence arrived " + from);
  if (m.kind.cpu != c.kind.cpu || m.kind.gpu != c.kind.gpu)
    return refuse(std::string("evidence of kind ") + m.kind.name + " where " + c.kind.name + " was agreed");
  if (!tee::equal_ct(m.answers, c.mine))
    return refuse("stale nonce: the evidence answers another verifier nonce than the one rank " +
                  std::to_string(c.me) + " sent it (replayed, or answered for another verifier)");
  const tee::Sha256Digest challenge = tee::kx_challenge(c.mine, c.peer, m.kx_public);
  RealVerdict v = c.verifier->verify(c.kind, m.evidence, challenge);
  if (v) out = std::move(m);
  return v;
}

}  // namespace tt::comm
