// tt_test_vendor: the test vendor of test_vendor.h as a command, for the CLI tests and the stand-ins of
// configfs-tsm and NVML (tests/cli/fake_tsm.py, tests/cli/fake_nvml.cpp). README.md shows every use.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/error.h"
#include "base/hex.h"
#include "tee/bytes.h"
#include "tests/support/test_vendor/test_vendor.h"

namespace tv = tt::tee::evidence::test_vendor;
using tt::InputError;

namespace {

struct Options {
  std::string dir;
  std::string out;
  std::string extra_out;  // the VCEK (snp), the PEM chain (gpu --report-out) or the RIM CRLs' directory
  std::string variant = "good";
  std::string report_data;
  std::string measurement;  // TDX MRTD, SNP MEASUREMENT
  std::vector<std::string> rtmr;
  std::uint64_t attributes = 0;  // TD attributes, SNP policy
  bool snp_policy_given = false;
  std::string tcb;  // TEE_TCB_SVN (16 bytes), REPORTED_TCB (8 bytes)
  std::string chip_id;
  std::string driver;
  std::string vbios;
  std::string block;  // gpu: "INDEX:HEX96", one measurement block that differs from the RIMs
  long next_update_s = 30L * 86400L;
  std::string status = "UpToDate";
  std::string fmspc;
  std::string mrsigner;  // tdx: MRSIGNERSEAM; tcb-info: the TDX module's signer
  std::string module_status = "UpToDate";
  bool no_module_identities = false;
};

template <std::size_t N>
std::array<std::uint8_t, N> hex_field(const std::string& hex, const char* flag) {
  std::array<std::uint8_t, N> out{};
  if (hex.empty()) return out;
  if (hex.size() != 2 * N || !tt::is_hex(hex, 2 * N))
    throw InputError(std::string(flag) + ": expected " + std::to_string(2 * N) + " hex digits");
  const std::vector<std::uint8_t> raw = tt::tee::from_hex(hex);
  std::copy(raw.begin(), raw.end(), out.begin());
  return out;
}

tv::Variant variant_of(const std::string& name) {
  const std::map<std::string, tv::Variant> variants = {
      {"good", tv::Variant::Good}, {"revoked", tv::Variant::Revoked}, {"expired", tv::Variant::Expired}};
  const auto it = variants.find(name);
  if (it == variants.end()) throw InputError("--variant '" + name + "': expected good, revoked or expired");
  return it->second;
}

void write_file(const std::string& path, tt::tee::ByteView bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw InputError("cannot write '" + path + "'");
}

void issue_tdx(const Options& o) {
  tv::TdxSpec spec;
  spec.report_data = hex_field<64>(o.report_data, "--report-data");
  spec.mrtd = hex_field<48>(o.measurement, "--mrtd");
  for (std::size_t i = 0; i < o.rtmr.size() && i < 4; ++i) spec.rtmr[i] = hex_field<48>(o.rtmr[i], "--rtmr");
  spec.td_attributes = o.attributes;
  spec.tee_tcb_svn = hex_field<16>(o.tcb, "--tcb");
  spec.mrsigner_seam = hex_field<48>(o.mrsigner, "--mrsigner-seam");
  spec.variant = variant_of(o.variant);
  write_file(o.out, tv::issue_tdx_quote(o.dir, spec));
}

void issue_snp(const Options& o) {
  tv::SnpSpec spec;
  spec.report_data = hex_field<64>(o.report_data, "--report-data");
  spec.measurement = hex_field<48>(o.measurement, "--measurement");
  if (o.snp_policy_given) spec.policy = o.attributes;
  spec.reported_tcb = hex_field<8>(o.tcb, "--tcb");
  spec.chip_id = hex_field<64>(o.chip_id, "--chip-id");
  spec.variant = variant_of(o.variant);
  const tv::SnpEvidence ev = tv::issue_snp_report(o.dir, spec);
  write_file(o.out, ev.report);
  if (!o.extra_out.empty()) write_file(o.extra_out, tt::tee::bytes_of(ev.vcek_pem));
}

tv::GpuSpec gpu_spec(const Options& o) {
  tv::GpuSpec spec;
  if (!o.driver.empty()) spec.driver_version = o.driver;
  if (!o.vbios.empty()) spec.vbios_version = hex_field<8>(o.vbios, "--vbios");
  if (o.block.empty()) return spec;
  const std::size_t colon = o.block.find(':');
  const std::string index = o.block.substr(0, colon == std::string::npos ? 0 : colon);
  if (index.size() != 1 || index[0] < '1' || index[0] > '0' + static_cast<int>(spec.measurements.size()))
    throw InputError("--block '" + o.block + "': expected INDEX:HEX96 with INDEX 1.." +
                     std::to_string(spec.measurements.size()));
  spec.measurements[static_cast<std::size_t>(index[0] - '1')] =
      hex_field<48>(o.block.substr(colon + 1), "--block");
  return spec;
}

void issue_gpu(const Options& o, bool sdk_json) {
  tv::GpuSpec spec = gpu_spec(o);
  spec.nonce = hex_field<32>(o.report_data, "--nonce");
  spec.variant = variant_of(o.variant);
  const tt::tee::evidence::SdkEvidenceEntry gpu = tv::issue_gpu_evidence(o.dir, spec);
  if (sdk_json)
    return write_file(o.out, tt::tee::bytes_of(tt::tee::evidence::write_sdk_evidence_json({gpu})));
  write_file(o.out, gpu.report);
  write_file(o.extra_out, tt::tee::bytes_of(gpu.certificate_pem));
}

void issue_rims(const Options& o) {
  const tv::GpuRims rims = tv::issue_gpu_rims(o.dir, gpu_spec(o));
  std::filesystem::create_directories(o.out);
  write_file(o.out + "/driver.swidtag", tt::tee::bytes_of(rims.driver));
  write_file(o.out + "/vbios.swidtag", tt::tee::bytes_of(rims.vbios));
  if (!o.extra_out.empty()) tv::write_rim_crls(o.dir, o.extra_out);
}

void issue_tcb_info(const Options& o) {
  tv::TcbInfoSpec spec{.next_update_s = o.next_update_s,
                       .status = o.status,
                       .tdx_svn = hex_field<16>(o.tcb, "--tdx-tcb"),
                       .fmspc = tv::kTestFmspc,
                       .module_mrsigner = hex_field<48>(o.mrsigner, "--module-mrsigner"),
                       .module_identities = !o.no_module_identities,
                       .module_status = o.module_status};
  if (!o.fmspc.empty()) spec.fmspc = hex_field<6>(o.fmspc, "--fmspc");
  write_file(o.out, tt::tee::bytes_of(tv::issue_tcb_info(o.dir, spec)));
}

void issue_qe_identity(const Options& o) {
  const std::string json = tv::issue_qe_identity(o.dir, {o.next_update_s, o.status});
  write_file(o.out, tt::tee::bytes_of(json));
}

CLI::App* evidence_command(CLI::App& app, const char* name, const char* what, Options& o) {
  CLI::App* cmd = app.add_subcommand(name, what);
  cmd->add_option("--dir", o.dir, "The test roots' directory (tt_test_vendor roots)")->required();
  cmd->add_option("--out", o.out, "Where to write the evidence")->required();
  cmd->add_option("--variant", o.variant, "good (default), revoked (its CA's CRL lists it) or expired");
  return cmd;
}

// The collateral a verifier holds beside the evidence: NVIDIA's RIMs (and their CRLs), Intel's QE identity
// and TCB info.
struct CollateralCommands {
  CLI::App* rims;
  CLI::App* qe;
  CLI::App* tcb;
};
CollateralCommands collateral_commands(CLI::App& app, Options& o) {
  CLI::App* rims =
      app.add_subcommand("rims",
                         "NVIDIA's driver and VBIOS RIMs for the test GPU evidence, signed under "
                         "DIR/nvidia_rim_root.pem: --out DIR gets driver.swidtag and vbios.swidtag");
  rims->add_option("--dir", o.dir, "The test roots' directory")->required();
  rims->add_option("--out", o.out, "The directory to write the two RIMs in")->required();
  rims->add_option("--driver", o.driver, "The driver version they are for (default 550.90.07)");
  rims->add_option("--vbios", o.vbios, "The VBIOS_VERSION's 8 bytes they are for, 16 hex digits");
  rims->add_option(
      "--crl-out", o.extra_out,
      "A directory to write the RIM root's CRLs in: nvidia_rim_root.crl.pem (revoking nothing), "
      "nvidia_rim_root.revoking.crl.pem (revoking the RIM signer), nvidia_rim_root.expired.crl.pem");
  // Intel's signed collateral JSONs (QE identity, TCB info) take the same four options.
  const auto collateral_options = [&o](CLI::App* sub, const char* status_help) {
    sub->add_option("--dir", o.dir, "The test roots' directory")->required();
    sub->add_option("--out", o.out, "Where to write the JSON")->required();
    sub->add_option("--next-update", o.next_update_s,
                    "Seconds from now to its nextUpdate (negative: expired)");
    sub->add_option("--status", o.status, status_help);
  };
  CLI::App* qe = app.add_subcommand("qe-identity",
                                    "Intel's QE identity JSON for the test quotes; its issuer chain is "
                                    "DIR/intel_qe_identity_chain.pem");
  collateral_options(qe, "The TCB level's status (UpToDate, OutOfDate, Revoked)");
  CLI::App* tcb = app.add_subcommand("tcb-info",
                                     "Intel's TDX TCB info JSON for the test PCK certificates' platform; its "
                                     "issuer chain is DIR/intel_qe_identity_chain.pem");
  collateral_options(tcb, "The TCB level's status (UpToDate, ..., OutOfDate, Revoked)");
  tcb->add_option("--tdx-tcb", o.tcb, "The level's 16 TDX TCB components, 32 hex digits (default 0)");
  tcb->add_option("--fmspc", o.fmspc, "The FMSPC it is for, 12 hex digits (default the test PCK's)");
  tcb->add_option("--module-mrsigner", o.mrsigner, "The TDX module's signer, 96 hex digits (default 0)");
  tcb->add_option("--module-status", o.module_status, "The TDX module identities' TCB level status");
  tcb->add_flag("--no-module-identities", o.no_module_identities,
                "Only tdxModule, no tdxModuleIdentities (older collateral)");
  return {.rims = rims, .qe = qe, .tcb = tcb};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("tt_test_vendor: TEST roots and evidence signed under them (tests only; never a vendor)");
  app.require_subcommand(1);
  Options o;
  app.add_subcommand("roots", "Make the test roots, intermediates, keys and CRLs in --dir")
      ->add_option("--dir", o.dir, "Directory to write")
      ->required();
  CLI::App* tdx = evidence_command(app, "tdx", "An Intel TDX v4 quote", o);
  tdx->add_option("--report-data", o.report_data, "REPORTDATA, 128 hex digits");
  tdx->add_option("--mrtd", o.measurement, "MRTD, 96 hex digits");
  tdx->add_option("--rtmr", o.rtmr, "RTMR0, RTMR1, ... in order, 96 hex digits each");
  tdx->add_option("--td-attributes", o.attributes, "TDATTRIBUTES as a number (1: DEBUG)");
  tdx->add_option("--tcb", o.tcb, "TEE_TCB_SVN, 32 hex digits");
  tdx->add_option("--mrsigner-seam", o.mrsigner, "MRSIGNERSEAM, 96 hex digits (default 0: Intel's modules)");
  CLI::App* snp = evidence_command(app, "snp", "An AMD SEV-SNP report, and its VCEK (--vcek-out)", o);
  snp->add_option("--report-data", o.report_data, "REPORT_DATA, 128 hex digits");
  snp->add_option("--measurement", o.measurement, "MEASUREMENT, 96 hex digits");
  snp->add_option("--policy", o.attributes, "POLICY as a number (default 0x30000; bit 19: DEBUG)")
      ->each([&](const std::string&) { o.snp_policy_given = true; });
  snp->add_option("--tcb", o.tcb, "REPORTED_TCB (the VCEK's TCB), 16 hex digits");
  snp->add_option("--chip-id", o.chip_id, "CHIP_ID (the VCEK's hwID), 128 hex digits");
  snp->add_option("--vcek-out", o.extra_out, "Where to write the VCEK (PEM)")->required();
  CLI::App* gpu = evidence_command(app, "gpu", "NVIDIA GPU evidence as the attestation SDK's JSON", o);
  CLI::App* raw = evidence_command(app, "gpu-report",
                                   "NVIDIA GPU evidence as the driver returns it: the binary SPDM report "
                                   "(--out) and the PEM chain (--chain-out)",
                                   o);
  for (CLI::App* cmd : {gpu, raw}) {
    cmd->add_option("--nonce", o.report_data, "The verifier's nonce, 64 hex digits")->required();
    cmd->add_option("--driver", o.driver, "DRIVER_VERSION (default 550.90.07)");
    cmd->add_option("--vbios", o.vbios, "VBIOS_VERSION's 8 bytes, 16 hex digits (default 96.00.9e.00.01)");
    cmd->add_option("--block", o.block,
                    "INDEX:HEX96: measurement block INDEX (1-4) other than the RIMs' value");
  }
  raw->add_option("--chain-out", o.extra_out, "Where to write the PEM chain")->required();
  const CollateralCommands collateral = collateral_commands(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("roots")) tv::make_roots(o.dir);
    if (tdx->parsed()) issue_tdx(o);
    if (snp->parsed()) issue_snp(o);
    if (gpu->parsed()) issue_gpu(o, true);
    if (raw->parsed()) issue_gpu(o, false);
    if (collateral.rims->parsed()) issue_rims(o);
    if (collateral.qe->parsed()) issue_qe_identity(o);
    if (collateral.tcb->parsed()) issue_tcb_info(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tt_test_vendor: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
