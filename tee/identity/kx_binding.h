// The challenge that binds a rank's key-exchange key into real attestation evidence
// (docs/design.md §12). Real evidence has no field for a key, only a challenge the hardware signs:
// 32 bytes in an NVIDIA GPU's SPDM GET_MEASUREMENTS request, 64 bytes of REPORTDATA in an Intel TDX
// quote or an AMD SEV-SNP report. So the key goes in through the challenge:
//
//   challenge   = SHA-256("teetrain kx v1" || verifier nonce (32) || be32(rank) || X25519 public key (32))
//   REPORTDATA  = challenge || 32 zero bytes            (TDX and SEV-SNP)
//
// The verifier recomputes the challenge from the key it received beside the evidence and checks it as
// `verify-evidence --nonce` does; a relay that substitutes its own key gives another challenge, and the
// evidence's signature no longer covers it. `gather-evidence --verifier-nonce --rank --kx-public`
// computes it on the prover's side; both sides call this one function, and so does the training
// handshake (`train --attestation tdx|snp[+gpu]`, comm/secure/real_evidence.h).
//
// Note [GPU nonce from the challenge]: with `+gpu` a rank's GPU evidence answers
//
//   gpu nonce   = SHA-256("teetrain kx gpu v1" || challenge)
//
// never the challenge itself: the CPU quote binds the key to the VM, the GPU's report binds the GPU to
// that same challenge, and the label keeps the two values apart, so a GPU report can never be offered
// where a CPU REPORTDATA is checked or the reverse. What it cannot do is prove that the GPU sits in
// this VM: any GPU asked for that nonce answers it, so GPU evidence is relayable until the device is
// bound to the VM (TDISP / TEE-IO; docs/confidential-vms.md says how the design limits that).
#pragma once
#include <array>
#include <cstdint>

#include "tee/digest.h"
#include "tee/identity/keys.h"

namespace tt::tee {

inline constexpr std::size_t kReportDataBytes = 64;
using ReportData = std::array<std::uint8_t, kReportDataBytes>;

// The domain label: a value derived for another purpose can never be mistaken for this one.
inline constexpr std::string_view kKxBindingLabel = "teetrain kx v1";
inline constexpr std::string_view kKxGpuLabel = "teetrain kx gpu v1";

Sha256Digest kx_challenge(const Sha256Digest& verifier_nonce, std::uint32_t rank, const PublicKey& kx_public);

// The 32-byte nonce a rank's GPUs answer for `challenge` (Note [GPU nonce from the challenge]).
Sha256Digest gpu_nonce_of(const Sha256Digest& challenge);

// REPORTDATA for a CPU TEE: the 32-byte challenge followed by 32 zero bytes.
ReportData report_data_of(const Sha256Digest& challenge);

}  // namespace tt::tee
