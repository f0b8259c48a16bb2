#include "engine/run/input_agreement.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>

#include "base/error.h"
#include "base/hex.h"
#include "engine/checkpoint/verified_checkpoint.h"
#include "engine/input/image_source.h"
#include "engine/input/token_source.h"
#include "tee/byte_reader.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/identity/attestation.h"
#include "tee/identity/x509.h"

namespace tt {
namespace {

constexpr std::array<std::uint8_t, 8> kMagic = {'T', 'T', 'A', 'G', 'R', 'E', 'E', 2};

// What each kind of input is: how messages name it, its key in the summary, and its fields.
struct KindInfo {
  InputKind kind;
  const char* label;     // "dataset split" (+ the name), or empty: the name alone ("dataset key")
  const char* json_key;  // the summary's key; a named kind maps names to objects under it
  bool named;
  std::size_t fields;
  std::array<const char*, 4> field;
};
constexpr KindInfo kKinds[] = {
    {InputKind::Configuration, "configuration", "configuration", false, 1, {"sha256"}},
    {InputKind::TrustRoot, "trust root", "trust_root", false, 1, {"sha256"}},
    {InputKind::RevocationList, "revocation list", "revocation_list", false, 2, {"number", "sha256"}},
    {InputKind::VerifierPolicy, "verifier policy", "verifier_policy", false, 1, {"sha256"}},
    {InputKind::Key, "", "keys", true, 1, {"fingerprint"}},
    {InputKind::DatasetSplit,
     "dataset split",
     "dataset",
     true,
     4,
     {"manifest sha256", "dataset id", "content sha256", "size"}},
    {InputKind::Checkpoint, "checkpoint", "checkpoint", false, 3, {"lineage", "step", "manifest sha256"}},
    {InputKind::Setting, "", "settings", true, 1, {"value"}},
    {InputKind::AttestationRecord, "attestation record", "attestation_record", false, 1, {"sha256"}},
    {InputKind::Collateral, "collateral", "collateral", true, 1, {"sha256"}},
};

// Each setting's name in records and messages: the flag that gives it, or what it is.
constexpr std::array<const char*, 6> kSettingNames = {"--adversary", "--resume",     "--threads",
                                                      "--trace",     "data at rest", "backend"};

const KindInfo* kind_info(std::uint8_t kind) {
  for (const KindInfo& k : kKinds)
    if (static_cast<std::uint8_t>(k.kind) == kind) return &k;
  return nullptr;
}
const KindInfo& info(InputKind kind) {
  return *kind_info(static_cast<std::uint8_t>(kind));
}

bool printable(const std::string& s) {
  return s.size() <= kMaxAgreedString &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// Canonical order: by kind, then name.
bool before(const AgreedInput& a, const AgreedInput& b) {
  return std::tie(a.kind, a.name) < std::tie(b.kind, b.name);
}

// "dataset split train", "dataset key", "checkpoint"
std::string what(const AgreedInput& in) {
  const KindInfo& k = info(in.kind);
  if (*k.label == '\0') return in.name;
  return in.name.empty() ? k.label : std::string(k.label) + " " + in.name;
}

// Digests and ids shortened to 16 characters for rank-to-rank messages and the report; any other value
// (a count, a name, a setting's words) prints whole.
std::string shorten(const std::string& v) {
  return v.size() > 20 && is_hex(v, v.size()) ? short_hex(v, 16) : v;
}

std::string json_key(const char* field) {
  std::string s = field;
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

// ---- the wire ----

void put_u16(std::vector<std::byte>& out, std::size_t v) {
  out.push_back(static_cast<std::byte>(v >> 8));
  out.push_back(static_cast<std::byte>(v & 0xff));
}
void put_string(std::vector<std::byte>& out, const std::string& s) {
  put_u16(out, s.size());
  for (const char c : s) out.push_back(static_cast<std::byte>(c));
}

[[noreturn]] void malformed(const std::string& who, const std::string& why) {
  throw IntegrityError(who + " is malformed (" + why + "); the ranks cannot agree on their inputs");
}

// Reads the wire format front to back (the bounds checks are the ByteReader's); every shortfall or bad
// value is an IntegrityError naming `who`, since a peer, not the user, sent it.
class Reader {
 public:
  Reader(std::span<const std::byte> b, const std::string& who)
      : in_(tee::ByteView(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()), who,
            [who](std::size_t at) { malformed(who, "truncated at byte " + std::to_string(at)); }),
        who_(who) {}
  [[noreturn]] void fail(const std::string& why) const { malformed(who_, why); }
  tee::ByteView take(std::size_t n) { return in_.take(n, "input record"); }
  std::uint8_t u8() { return in_.u8("input record"); }
  std::size_t u16() { return in_.be16("input record"); }
  std::string string() {
    const std::size_t n = u16();
    if (n > kMaxAgreedString) fail("a string of " + std::to_string(n) + " bytes");
    const tee::ByteView s = take(n);
    std::string out(s.begin(), s.end());
    if (!printable(out)) fail("a string that is not printable ASCII");
    return out;
  }
  bool done() const { return in_.remaining() == 0; }

 private:
  tee::ByteReader in_;
  std::string who_;
};

AgreedInput read_input(Reader& in) {
  AgreedInput a;
  const KindInfo* k = kind_info(in.u8());
  if (k == nullptr) in.fail("an unknown kind of input");
  a.kind = k->kind;
  a.name = in.string();
  if (k->named == a.name.empty())
    in.fail(std::string(k->named ? "an unnamed " : "a named ") + k->json_key + " input");
  const std::size_t m = in.u8();
  if (m != k->fields) in.fail(std::to_string(m) + " fields for " + what(a));
  for (std::size_t i = 0; i < m; ++i) a.values.push_back(in.string());
  return a;
}

// The field in which two inputs of the same kind and name differ, as "(field a vs b)"; empty if none.
std::string field_difference(const AgreedInput& theirs, const AgreedInput& ours) {
  const KindInfo& k = info(ours.kind);
  for (std::size_t i = 0; i < k.fields; ++i) {
    if (theirs.values[i] != ours.values[i])
      return std::string(" (") + k.field[i] + " " + shorten(theirs.values[i]) + " vs " +
             shorten(ours.values[i]) + ")";
  }
  return {};
}

// How a rank's record and the record of rank `ref` (rank 0, or the others' when rank 0 is the odd one)
// differ, as one line; empty when they agree. Walks both records in their canonical order, so an input
// only one of them holds shows as "none" on the other side.
std::string record_difference(int rank, const InputRecord& theirs, int ref, const InputRecord& ours,
                              bool& config) {
  const auto& a = theirs.inputs();
  const auto& b = ours.inputs();
  const std::string who = "rank " + std::to_string(rank) + "'s ";
  const std::string against = "rank " + std::to_string(ref);
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const bool only_theirs = j == b.size() || (i < a.size() && before(a[i], b[j]));
    const bool only_ours = i == a.size() || (j < b.size() && before(b[j], a[i]));
    const AgreedInput& in = only_ours ? b[j] : a[i];
    config = in.kind == InputKind::Configuration;
    if (only_theirs || only_ours) {
      const std::string side = only_theirs ? "rank " + std::to_string(rank) : against;
      return who + what(in) + " differs from " + against + "'s (only " + side +
             " has one: " + info(in.kind).field[0] + " " + shorten(in.values[0]) + ")";
    }
    const std::string diff = field_difference(a[i], b[j]);
    if (!diff.empty()) return who + what(in) + " differs from " + against + "'s" + diff;
    ++i;
    ++j;
  }
  return {};
}

}  // namespace

void InputRecord::add(InputKind kind, std::string name, std::vector<std::string> values) {
  const KindInfo& k = info(kind);
  if (values.size() != k.fields || k.named == name.empty() || !printable(name) ||
      !std::all_of(values.begin(), values.end(), printable))
    throw InputError("input agreement: " + std::string(k.json_key) + " " + name + " does not fit its record");
  AgreedInput in{kind, std::move(name), std::move(values)};
  const auto at = std::lower_bound(inputs_.begin(), inputs_.end(), in, before);
  if (at != inputs_.end() && !before(in, *at)) {
    *at = std::move(in);
  } else {
    inputs_.insert(at, std::move(in));
  }
}

const AgreedInput* InputRecord::find(InputKind kind, const std::string& name) const {
  for (const AgreedInput& in : inputs_)
    if (in.kind == kind && in.name == name) return &in;
  return nullptr;
}

std::vector<std::byte> InputRecord::encode() const {
  std::vector<std::byte> out;
  for (const std::uint8_t c : kMagic) out.push_back(static_cast<std::byte>(c));
  put_u16(out, inputs_.size());
  for (const AgreedInput& in : inputs_) {
    out.push_back(static_cast<std::byte>(in.kind));
    put_string(out, in.name);
    out.push_back(static_cast<std::byte>(in.values.size()));
    for (const std::string& v : in.values) put_string(out, v);
  }
  return out;
}

InputRecord InputRecord::decode(std::span<const std::byte> bytes, const std::string& who) {
  Reader in(bytes, who);
  if (bytes.size() > kMaxAgreementBytes) in.fail(std::to_string(bytes.size()) + " bytes");
  const auto magic = in.take(kMagic.size());
  if (!std::equal(magic.begin(), magic.end(), kMagic.begin())) in.fail("not a version 1 input record");
  const std::size_t n = in.u16();
  if (n > kMaxAgreedInputs) in.fail(std::to_string(n) + " inputs");
  InputRecord r;
  for (std::size_t i = 0; i < n; ++i) {
    AgreedInput a = read_input(in);
    if (!r.inputs_.empty() && !before(r.inputs_.back(), a)) in.fail(what(a) + " out of order or repeated");
    r.inputs_.push_back(std::move(a));
  }
  if (!in.done()) in.fail("bytes after the last input");
  return r;
}

nlohmann::json InputRecord::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const AgreedInput& in : inputs_) {
    const KindInfo& k = info(in.kind);
    nlohmann::json fields = nlohmann::json::object();
    for (std::size_t i = 0; i < k.fields; ++i) fields[json_key(k.field[i])] = in.values[i];
    if (k.named) {
      j[k.json_key][in.name] = fields;
    } else {
      j[k.json_key] = fields;
    }
  }
  return j;
}

std::string InputRecord::describe() const {
  std::string out;
  for (const AgreedInput& in : inputs_) {
    const KindInfo& k = info(in.kind);
    out += "  " + what(in) + ":";
    for (std::size_t i = 0; i < k.fields; ++i)
      out += std::string(i == 0 ? " " : ", ") + k.field[i] + " " + shorten(in.values[i]);
    out += "\n";
  }
  return out;
}

// Note [The odd rank out]: every record is compared with rank 0's, so when rank 0 itself is the one
// that differs — every other rank agrees with the others and not with it — the first comparison would
// name rank 1, an honest rank. With three ranks or more, that case names rank 0 against the others'
// record. (With two ranks nothing says which of the two is odd: rank 1 is named against rank 0.)
InputDifference first_difference(const std::vector<InputRecord>& by_rank) {
  InputDifference d;
  for (std::size_t r = 1; r < by_rank.size() && d.rank < 0; ++r) {
    d.message = record_difference(static_cast<int>(r), by_rank[r], 0, by_rank[0], d.configuration);
    if (!d.message.empty()) d.rank = static_cast<int>(r);
  }
  if (d.rank < 0) return {};
  bool others_agree = by_rank.size() >= 3;
  for (std::size_t r = 2; r < by_rank.size() && others_agree; ++r) {
    bool config = false;
    others_agree = record_difference(static_cast<int>(r), by_rank[r], 1, by_rank[1], config).empty();
  }
  if (others_agree) {
    d.message =
        record_difference(0, by_rank[0], 1, by_rank[1], d.configuration) + ", as every other rank has it";
    d.rank = 0;
  }
  if (d.configuration) d.message += ": start every rank with the same flags and files";
  return d;
}

std::string unmet_expectation(const InputRecord& agreed, const InputExpectations& expect) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  constexpr std::size_t kManifest = 0;  // DatasetSplit's "manifest sha256"
  if (!expect.dataset.empty()) {
    for (const AgreedInput& in : agreed.inputs()) {
      if (in.kind != InputKind::DatasetSplit || in.values[kManifest] == lower(expect.dataset)) continue;
      return "--expect-dataset: dataset split " + in.name + " has manifest sha256 " + in.values[kManifest] +
             (in.values[kManifest] == "none" ? " (plain data)" : "") + ", expected " + lower(expect.dataset);
    }
  }
  if (!expect.checkpoint.empty()) {
    const AgreedInput* ck = agreed.find(InputKind::Checkpoint);
    if (ck == nullptr)
      return "--expect-checkpoint: this run resumed no checkpoint, expected one with manifest "
             "sha256 " +
             lower(expect.checkpoint);
    if (ck->values[2] != lower(expect.checkpoint))
      return "--expect-checkpoint: the checkpoint resumed (step " + ck->values[1] + ") has manifest sha256 " +
             ck->values[2] + ", expected " + lower(expect.checkpoint);
  }
  return {};
}

InputRecord agree_inputs(DistContext& dist, const InputRecord& mine, const InputExpectations& expect) {
  const std::vector<std::vector<std::byte>> blobs = dist.allgather_blobs(mine.encode(), kMaxAgreementBytes);
  std::vector<InputRecord> records;
  for (std::size_t r = 0; r < blobs.size(); ++r)
    records.push_back(InputRecord::decode(blobs[r], "rank " + std::to_string(r) + "'s input record"));
  const InputDifference d = first_difference(records);
  if (d.rank >= 0) {
    if (d.configuration) throw InputError(d.message);
    throw IntegrityError(d.message);
  }
  const std::string unmet = unmet_expectation(records.front(), expect);
  if (!unmet.empty()) throw IntegrityError(unmet);
  return std::move(records.front());
}

AttestationRecord agree_attestation_record(DistContext& dist, const std::vector<VerifiedEntry>& mine,
                                           const std::string& kind) {
  const std::vector<std::vector<std::byte>> blobs =
      dist.allgather_blobs(encode_entries(mine), kMaxRecordBytes);
  std::vector<std::vector<VerifiedEntry>> by_rank;
  for (std::size_t r = 0; r < blobs.size(); ++r)
    by_rank.push_back(decode_entries(blobs[r], static_cast<int>(r)));
  return reconcile(by_rank, kind);
}

// ---- what a run puts in its record ----

void add_configuration(InputRecord& r, const std::string& config_text) {
  r.add(InputKind::Configuration, "", {tee::to_hex(tee::sha256(config_text))});
}

void add_trust(InputRecord& r, const tee::TrustAnchor& anchor) {
  r.add(InputKind::TrustRoot, "", {tee::to_hex(tee::sha256(anchor.root().der()))});
  // The number first: a rank given an older list is named by it ("number 1 vs 2"), the digest
  // catches any other difference (Note [Revocation list freshness], tee/identity/x509.h).
  const std::vector<std::uint8_t> crl = anchor.crl_der();
  const std::optional<tee::CrlFacts>& list = anchor.crl_facts();
  r.add(InputKind::RevocationList, "",
        {list ? std::to_string(list->number) : "none", crl.empty() ? "none" : tee::to_hex(tee::sha256(crl))});
}

void add_policy(InputRecord& r, const tee::VerifierPolicy& policy) {
  if (policy.binaries.empty() && policy.configs.empty()) {
    r.add(InputKind::VerifierPolicy, "", {"own"});
    return;
  }
  // The policy file's meaning, not its bytes: its lines sorted, comments and blank lines gone.
  std::vector<std::string> lines;
  for (const auto& d : policy.binaries) lines.push_back("binary " + tee::to_hex(d) + "\n");
  for (const auto& d : policy.configs) lines.push_back("config " + tee::to_hex(d) + "\n");
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const std::string& l : lines) text += l;
  r.add(InputKind::VerifierPolicy, "", {tee::to_hex(tee::sha256(text))});
}

void add_real_attestation(InputRecord& r, const comm::RealVerifierFacts& facts) {
  r.add(InputKind::TrustRoot, "", {facts.test_roots ? "test roots" : "vendor roots"});
  r.add(InputKind::VerifierPolicy, "", {facts.policy_digest.empty() ? "none" : facts.policy_digest});
  for (const comm::CollateralDigest& c : facts.collateral) r.add(InputKind::Collateral, c.kind, {c.sha256});
}

void add_attestation_record(InputRecord& r, const std::string& sha256) {
  r.add(InputKind::AttestationRecord, "", {sha256});
}

void add_key(InputRecord& r, const std::string& name, const tee::SecretBytes& key) {
  r.add(InputKind::Key, name, {key.fingerprint()});
}

namespace {
// A sealed split's manifest commits to every file's content (data/dataset_binding.h).
void add_sealed_split(InputRecord& r, const std::string& split, const DatasetBinding& b, std::uint64_t size) {
  r.add(InputKind::DatasetSplit, split, {b.manifest, b.dataset, "in the manifest", std::to_string(size)});
}
void add_plain_split(InputRecord& r, const std::string& split, const std::string& sha256,
                     std::uint64_t size) {
  r.add(InputKind::DatasetSplit, split, {"none", "plain", sha256, std::to_string(size)});
}
}  // namespace

void add_token_data(InputRecord& r, const DataSource& d) {
  if (d.sealed_train) add_sealed_split(r, "train", d.sealed_train->binding(), d.sealed_train->num_tokens());
  if (d.sealed_val) add_sealed_split(r, "val", d.sealed_val->binding(), d.sealed_val->num_tokens());
  if (d.plain_train) add_plain_split(r, "train", d.plain_train->sha256(), d.plain_train->num_tokens());
  if (d.plain_val) add_plain_split(r, "val", d.plain_val->sha256(), d.plain_val->num_tokens());
}

void add_image_data(InputRecord& r, const ImageSource& s) {
  if (s.sealed_train) add_sealed_split(r, "train", s.sealed_train->binding(), s.sealed_train->size());
  if (s.sealed_test) add_sealed_split(r, "test", s.sealed_test->binding(), s.sealed_test->size());
  if (s.train_set) add_plain_split(r, "train", s.train_set->sha256(), s.train_set->set().size());
  if (s.test_set) add_plain_split(r, "test", s.test_set->sha256(), s.test_set->set().size());
}

void add_checkpoint(InputRecord& r, const VerifiedCheckpoint& ck) {
  r.add(InputKind::Checkpoint, "",
        {ck.manifest.run_id, std::to_string(ck.manifest.step), ck.manifest_sha256});
}

void add_setting(InputRecord& r, Setting s, const std::string& value) {
  r.add(InputKind::Setting, kSettingNames.at(static_cast<std::size_t>(s)),
        {printable(value) ? value : "sha256 " + tee::to_hex(tee::sha256(value))});
}

}  // namespace tt
