// The agreed view of a run's inputs. Sealing proves that a message came from an attested rank; it
// says nothing about WHAT that rank loaded from its own disk. So before the first step every rank
// sends the others, over the run's channel (sealed in TEE mode), a record of what it actually opened,
// and every rank checks that all records agree:
//   configuration     SHA-256 of the resolved options (train_options_json)
//   trust root        SHA-256 of the vendor root certificate's DER, as loaded
//   revocation list   its CRL number and the SHA-256 of its DER, as loaded ("none" without one)
//   verifier policy   SHA-256 of the reference measurements it accepts from peers (--policy), or
//                     "own" (only what it runs itself); with --attestation tdx|snp[+gpu] the trust
//                     root is "vendor roots" or "test roots" and the policy the SHA-256 of
//                     --attestation-policy or "none" (add_real_attestation)
//   attestation record  with --attestation tdx|snp[+gpu]: SHA-256 of the table of every rank's
//                     verified measurements (Note [Attestation record], engine/keys/attestation_record.h)
//   collateral        with --attestation tdx|snp[+gpu]: per file its verifier judges evidence with (the
//                     QE identity, TCB info, their issuer chain, each --evidence-crl, each GPU RIM), the
//                     SHA-256 of its bytes, named by its kind ("TCB info", "evidence CRL 2"; Note
//                     [Collateral in the agreed inputs], engine/keys/real_attestation.cpp)
//   keys              fingerprints (tee::SecretBytes::fingerprint: a hash, never the key) of the
//                     session group key, the dataset key and the checkpoint key
//   dataset split     per split: manifest SHA-256 and dataset id (data/dataset_binding.h), the SHA-256
//                     of its content, and its size (tokens or images). Sealed data: the manifest
//                     commits to the content ("in the manifest"); plain data has neither manifest nor id
//                     ("none", "plain") and agrees by the content it read (TokenDataset::sha256,
//                     ImageSet::sha256)
//   checkpoint        resumed from: lineage (run_id), step, SHA-256 of its manifest file
//   settings          what each rank was told or found on its own host that shapes the messages or the
//                     bits, outside the configuration (which holds only what every rank's command line
//                     says alike): --adversary (the attack, canonical, or "none"), --resume ("given" or
//                     "none"), data at rest ("sealed" or "plain": what --data names on this rank's disk),
//                     --trace ("given" or "none": the ranks that write a trace part meet at the end),
//                     --threads (the effective count, where the model computes on this CPU) and backend
//                     (Backend::numerics: libraries, kernel set, precision; where values are computed)
// A difference stops the run on every rank with one line naming the rank and the input, e.g.
// "rank 1's dataset split train differs from rank 0's (manifest sha256 ab12... vs cd34...)":
// IntegrityError (exit 3), except a different configuration, which is a launch mistake: InputError
// (exit 2). Then the data owner's pins (--expect-dataset, --expect-checkpoint) are checked against
// the agreed record (IntegrityError naming what was expected and what was found).
//
// Note [Agreed inputs]: the agreement runs twice, with the same record type and the same comparison.
// Round one, right after the attested handshake and before rank 0 releases the dataset and
// checkpoint keys, holds what is known then: configuration, trust root, revocation list and verifier
// policy (with real evidence, its collateral too: Note [Collateral in the agreed inputs]), so a rank
// whose peers were admitted under another root or policy never receives the keys;
// and every setting that decides which messages follow: whether the data is sealed (a dataset key is
// released or not), whether the rank resumes (a checkpoint key is released or not; the parameters are
// read from the checkpoint or broadcast from rank 0), the adversary on the links, and whether the rank
// writes a trace (those that do meet once more at the end). So a rank that
// differs in any of them stops with the others on one line naming it, instead of waiting for a
// message its peers never send (a timeout, "the peer is dead"). With real evidence the ranks then,
// still before any key is released, exchange and check every rank's verified measurements (Note
// [Attestation record], engine/keys/attestation_record.h), whose digest round two compares.
// Round two, once every rank has opened
// its data and its checkpoint and built its backend, and before the first step, holds everything; its
// record is what the summary ("agreed_inputs") and the end-of-run report show. What it proves: every
// rank that passed attestation runs teetrain, so it reports truthfully what it opened; all ranks
// opened the same things and compute the same bits. What it does not: that those things are the right
// ones (only the pins say that), nor anything about a rank admitted under a root that is itself the
// attacker's (docs/design.md §5).
//
// Wire format of one rank's record (untrusted bytes: decode() refuses anything else):
//   "TTAGREE" 0x02                      magic and version
//   u16 n                               inputs, at most kMaxAgreedInputs
//   n x { u8 kind; u16 len; name;       kind: InputKind; name: a split, key or setting name, or empty
//         u8 m; m x { u16 len; value } }  m: exactly the kind's field count
// Integers big-endian (network order, like the other wire formats); names and values printable ASCII
// (0x20..0x7e), at most kMaxAgreedString bytes; inputs strictly ordered by (kind, name), so each appears once
// and the encoding of a record is unique; nothing after the last input; the whole at most kMaxAgreementBytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "comm/secure/real_evidence.h"
#include "engine/keys/attestation_record.h"
#include "engine/run/dist_context.h"
#include "tee/secure_bytes.h"

namespace tt {

struct DataSource;
struct ImageSource;
struct VerifiedCheckpoint;
namespace tee {
class TrustAnchor;
struct VerifierPolicy;
}  // namespace tee

inline constexpr std::size_t kMaxAgreementBytes = 64 * 1024;
inline constexpr std::size_t kMaxAgreedInputs = 256;
inline constexpr std::size_t kMaxAgreedString = 256;

enum class InputKind : std::uint8_t {
  Configuration = 1,
  TrustRoot = 2,
  RevocationList = 3,
  VerifierPolicy = 4,
  Key = 5,
  DatasetSplit = 6,
  Checkpoint = 7,
  Setting = 8,
  AttestationRecord = 9,
  Collateral = 10,
};

// The settings a record may hold (InputKind::Setting), each under the name messages give it.
enum class Setting : std::uint8_t { Adversary, Resume, Threads, Trace, DataAtRest, Backend };

struct AgreedInput {
  InputKind kind = InputKind::Configuration;
  std::string name;                 // a split ("train"), key ("dataset key") or setting ("--resume");
                                    // empty for the others
  std::vector<std::string> values;  // the kind's fields, in order (input_agreement.cpp: kKinds)
};

class InputRecord {
 public:
  // Adds one input, replacing one of the same kind and name. Throws InputError when the values do not
  // fit the kind or a string is not printable ASCII of at most kMaxAgreedString bytes.
  void add(InputKind kind, std::string name, std::vector<std::string> values);
  const AgreedInput* find(InputKind kind, const std::string& name = {}) const;
  const std::vector<AgreedInput>& inputs() const { return inputs_; }  // by kind, then name

  std::vector<std::byte> encode() const;
  // Parses one rank's record. IntegrityError naming `who` ("rank 1's input record") on anything
  // that is not the format above.
  static InputRecord decode(std::span<const std::byte> bytes, const std::string& who);

  // {"configuration": {"sha256": ..}, "dataset": {"train": {"dataset_id": .., ..}}, ...}
  nlohmann::json to_json() const;
  // One line per input, digests shortened, for the end-of-run report.
  std::string describe() const;

 private:
  std::vector<AgreedInput> inputs_;
};

// The first input in which a rank's record differs from rank 0's, by rank and then by input order; rank 0
// itself when it alone differs from the others, three or more (Note [The odd rank out]).
struct InputDifference {
  int rank = -1;  // -1: every record agrees
  std::string message;
  bool configuration = false;  // the options differ (a launch mistake, not an attack)
};
InputDifference first_difference(const std::vector<InputRecord>& by_rank);

// The data owner's pins: SHA-256 (hex) of the dataset manifest (what `seal-data` prints) and of the
// manifest of the checkpoint to resume from (what `ckpt inspect` prints). Empty: not pinned.
struct InputExpectations {
  std::string dataset;
  std::string checkpoint;
};
// The first pin `agreed` does not meet, as one line; empty when all hold (or none is set).
std::string unmet_expectation(const InputRecord& agreed, const InputExpectations& expect);

// Collective: exchanges `mine` (DistContext::allgather_blobs), decodes every rank's record and throws,
// on every rank alike, the first difference from rank 0's, then the first unmet pin. Returns the
// agreed record.
InputRecord agree_inputs(DistContext& dist, const InputRecord& mine, const InputExpectations& expect = {});

// Collective, with real evidence: exchanges what each rank verified of its neighbours (`mine`, over
// the run's channel) and checks every rank's alike (Note [Attestation record]). Returns the table;
// IntegrityError (exit 3), the same on every rank, where the ranks' reports do not reconcile.
AttestationRecord agree_attestation_record(DistContext& dist, const std::vector<VerifiedEntry>& mine,
                                           const std::string& kind);

// ---- what a run puts in its record ----

void add_configuration(InputRecord& r, const std::string& config_text);
void add_trust(InputRecord& r, const tee::TrustAnchor& anchor);
void add_policy(InputRecord& r, const tee::VerifierPolicy& policy);
// Real attestation (--attestation tdx|snp[+gpu]): the roots its verifier trusts ("vendor roots" or
// "test roots") as the trust root, its evidence policy's digest ("none" without one) as the policy, and
// each collateral file's digest (Note [Collateral in the agreed inputs]).
void add_real_attestation(InputRecord& r, const comm::RealVerifierFacts& facts);
// The digest of every rank's verified measurements (Note [Attestation record]).
void add_attestation_record(InputRecord& r, const std::string& sha256);
void add_key(InputRecord& r, const std::string& name, const tee::SecretBytes& key);
void add_token_data(InputRecord& r, const DataSource& data);
void add_image_data(InputRecord& r, const ImageSource& images);
void add_checkpoint(InputRecord& r, const VerifiedCheckpoint& ck);
// One setting's value as this rank has it; a value that is not printable ASCII of at most
// kMaxAgreedString bytes is recorded as its SHA-256 ("sha256 <hex>").
void add_setting(InputRecord& r, Setting s, const std::string& value);

}  // namespace tt
