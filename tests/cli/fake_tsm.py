#!/usr/bin/env python3
"""A STAND-IN FOR THE LINUX KERNEL'S configfs-tsm, for tests only: it attests nothing.

On a confidential guest the kernel serves /sys/kernel/config/tsm/report (tee/evidence/tsm_report.h,
Note [configfs-tsm protocol]): a new entry gets its attributes at once, reading `outblob` makes the TEE
sign the 64 bytes written to `inblob`, `generation` counts the writes, and rmdir removes the entry with
its attributes. A plain directory does none of that, so this process answers like the kernel does:

  * each new entry under REPORT_DIR gets `provider`, (for sev_guest) `privlevel` and `privlevel_floor`,
    `outblob` and `generation`, then `inblob` last (the prover waits for it);
  * `outblob` and `generation` are FIFOs, so the prover's read blocks, as on a guest, until the "report"
    is ready: once 64 bytes are in `inblob`, OUTBLOB's bytes are served (with inblob copied in at
    --echo-at, as a real report carries REPORTDATA, and the privlevel written at --privlevel-at);
  * when the prover opens `generation` (its last read), every attribute is removed, so its rmdir
    succeeds as on configfs; the generation served is the number of writes (+ --extra-writes).

With --vendor (tt_test_vendor's path) and --vendor-dir (its test roots), the report served is not
OUTBLOB but a TDX quote or SEV-SNP report the test vendor signs over the 64 bytes in inblob, as the
hardware would (Note [Test roots] in tee/evidence/bundled_roots.h); --vendor-arg passes it more
(--mrtd HEX, --td-attributes 1, ...), and an SEV-SNP report's VCEK is written to --vcek-to.

--silent never answers (a quote service that is down); --delay holds a new entry's attributes back (a
slow kernel). Stop it by its pid when the test ends; --lifetime S ends it after S seconds whatever
happens (a lab's stand-ins must not outlive a lab that failed before its last step stopped them).
"""
import argparse
import os
import subprocess
import threading
import time


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def populate(entry, args):
    write(os.path.join(entry, "provider"), args.provider.encode() + b"\n")
    if args.provider == "sev_guest":
        write(os.path.join(entry, "privlevel"), b"")
        write(os.path.join(entry, "privlevel_floor"), b"%d\n" % args.privlevel_floor)
    os.mkfifo(os.path.join(entry, "outblob"))
    os.mkfifo(os.path.join(entry, "generation"))
    write(os.path.join(entry, "inblob"), b"")  # last: the prover starts once it appears


def signed_report(report_data, args):
    kind = "tdx" if args.provider == "tdx_guest" else "snp"
    out = os.path.join(args.vendor_dir, "served.%d" % threading.get_ident())
    command = [args.vendor, kind, "--dir", args.vendor_dir, "--report-data", report_data[:64].hex(), "--out", out]
    if kind == "snp":
        command += ["--vcek-out", args.vcek_to or out + ".vcek"]
    subprocess.run(command + (args.vendor_arg or []), check=True)
    data = open(out, "rb").read()
    os.unlink(out)
    return data


def serve(entry, args):
    time.sleep(args.delay)
    populate(entry, args)
    inblob = os.path.join(entry, "inblob")
    while os.path.getsize(inblob) < 64:
        time.sleep(0.005)
    if args.silent:
        return
    report_data = open(inblob, "rb").read()
    privlevel = open(os.path.join(entry, "privlevel"), "rb").read() if args.provider == "sev_guest" else b""
    out = bytearray(signed_report(report_data, args) if args.vendor else open(args.outblob, "rb").read())
    if args.echo_at is not None:
        out[args.echo_at:args.echo_at + 64] = report_data
    if args.privlevel_at is not None and privlevel:
        out[args.privlevel_at:args.privlevel_at + 4] = int(privlevel).to_bytes(4, "little")
    if args.auxblob:
        write(os.path.join(entry, "auxblob"), open(args.auxblob, "rb").read())
    with open(os.path.join(entry, "outblob"), "wb") as f:  # blocks until the prover reads
        f.write(out)
    writes = 1 + (1 if privlevel else 0) + args.extra_writes
    with open(os.path.join(entry, "generation"), "wb") as f:  # blocks until the prover's last read
        for name in os.listdir(entry):
            os.unlink(os.path.join(entry, name))
        f.write(b"%d\n" % writes)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report_dir")
    p.add_argument("--provider", default="tdx_guest", choices=["tdx_guest", "sev_guest"])
    p.add_argument("--outblob", help="the bytes to serve as the report (unless --vendor signs one)")
    p.add_argument("--vendor", help="tt_test_vendor: serve a report it signs over inblob")
    p.add_argument("--vendor-dir", help="the test vendor's roots (tt_test_vendor roots --dir)")
    p.add_argument("--vendor-arg", action="append", help="one more argument for the test vendor (repeatable)")
    p.add_argument("--vcek-to", help="where the test vendor writes an SEV-SNP report's VCEK")
    p.add_argument("--auxblob", help="bytes to serve as auxblob (SEV-SNP's certificate table)")
    p.add_argument("--echo-at", type=int, help="copy inblob into the report at this offset")
    p.add_argument("--privlevel-at", type=int, help="write the privlevel (4 bytes LE) into the report here")
    p.add_argument("--privlevel-floor", type=int, default=0)
    p.add_argument("--extra-writes", type=int, default=0, help="pretend another process wrote the entry")
    p.add_argument("--silent", action="store_true", help="never answer")
    p.add_argument("--delay", type=float, default=0, help="seconds before a new entry gets its attributes")
    p.add_argument("--ready", help="create this file once serving (the test waits for it: a loaded machine "
                                   "may take longer to start Python than the prover's grace for a new entry)")
    p.add_argument("--lifetime", type=float, default=0, help="exit after this many seconds (0: never)")
    args = p.parse_args()
    if not args.outblob and not (args.vendor and args.vendor_dir):
        p.error("give --outblob, or --vendor and --vendor-dir")
    os.makedirs(args.report_dir, exist_ok=True)
    if args.ready:
        write(args.ready, b"")
    seen = set()
    end = time.monotonic() + args.lifetime if args.lifetime > 0 else float("inf")
    while time.monotonic() < end:
        for name in os.listdir(args.report_dir):
            entry = os.path.join(args.report_dir, name)
            if name not in seen and os.path.isdir(entry):
                seen.add(name)
                threading.Thread(target=serve, args=(entry, args), daemon=True).start()
        time.sleep(0.005)


if __name__ == "__main__":
    main()
