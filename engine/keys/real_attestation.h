// Real attestation in the training handshake (`train --attestation tdx|snp|tdx+gpu|snp+gpu`): the
// prover and verifier that comm/secure/real_evidence.h asks for, made of tee/evidence/ — the same
// gathering as `gather-evidence` (configfs-tsm, NVML) and the same checks as `verify-evidence` (Intel's,
// AMD's and NVIDIA's chains and signatures) — so a run and the offline tools cannot disagree.
#pragma once
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "comm/secure/real_evidence.h"

namespace tt {

// What the user gave for real attestation (paths not yet read).
struct RealAttestationOptions {
  std::string tsm_dir;  // configfs-tsm's report directory; "{rank}" becomes the rank; empty: the kernel's
  // SEV-SNP: this rank's VCEK (PEM or DER, as AMD's KDS serves it); "{rank}" expands. Read after each
  // report is gathered, so that it is the VCEK of the TCB the report was signed at.
  std::string vcek;
  std::string policy;             // --attestation-policy: tee/evidence/evidence_policy.h; empty: none
  std::vector<std::string> crls;  // --evidence-crl: revocation lists for the vendors' chains
  // --qe-identity, --tcb-info, --collateral-chain: Intel's collateral for TDX quotes
  // (tee/evidence/intel_collateral.h); empty paths: not checked (every report says so).
  // --allow-expired-collateral accepts that collateral, and the --evidence-crl and --gpu-rim-crl lists,
  // past their nextUpdate (every report names each one).
  std::string qe_identity;
  std::string tcb_info;
  std::string collateral_chain;
  bool allow_expired_collateral = false;
  // --gpu-rims: a directory of NVIDIA's driver and VBIOS RIMs (tee/evidence/rim.h), every regular file
  // in it one RIM; each peer GPU's measurements must match them. Empty: not compared (reports say so).
  std::string gpu_rims;
  // --gpu-rim-crl: NVIDIA's CRLs for the RIMs' signing chain, files or directories of them
  // (tee/evidence/rim.h: RimCrls); a certificate without its issuer's list: not checked (reports say so).
  std::vector<std::string> gpu_rim_crls;
  std::string test_roots;  // --test-roots: a test vendor's roots (Note [Test roots]) instead of the vendors'
  bool allow_test_roots = false;  // --allow-test-roots: accept evidence under them (every report says so)
  std::chrono::seconds gather_timeout{60};
};

// The prover of this rank and the verifier of its peers for `kind`. InputError (exit 2), naming what
// is missing and what to do, where this rank's hardware cannot answer (no configfs-tsm directory, an
// SEV-SNP run without --vcek): checked before the handshake, so a machine without the hardware says
// so at once instead of failing the handshake on every rank.
comm::RealAttestation make_real_attestation(const comm::RealAttestationKind& kind,
                                            const RealAttestationOptions& options, int rank);

// The verifier alone (what a rank checks its peers' evidence with): the vendors' roots (or the test
// roots), the CRLs and the policy the options name. InputError naming the file that cannot be used.
std::shared_ptr<const comm::RealEvidenceVerifier> make_real_verifier(const RealAttestationOptions& options);

}  // namespace tt
