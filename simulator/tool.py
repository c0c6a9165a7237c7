"""The fake tools' entry point: ``python -m simulator.tool --state FILE TOOL ARGS...``.

Each fake executable of a simulated host (``smartctl``, ``shannon-status``, ``hdparm``,
``nvme``) is a two-line shell script that runs this module with the host's state file. The
state file holds the drive specs and the simulated clock (origin and speed), so every call
renders the drives as they are *now* in simulated time, without any process staying alive.

Arguments are read the way the real tools read them, as far as the agent uses them; anything
else gets the real tool's kind of refusal (a message on stderr and its usual exit status), so
a wrong argv in the agent fails here as it would on a real host.

Standard library only, and nothing imported that the call does not need: this runs once per
probe.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from simulator import render
from simulator.wear import DriveSpec, DriveState, state_at


class HostState:
    """The parsed state file."""

    def __init__(self, data: Dict) -> None:
        self.data = data
        self.specs = [DriveSpec.from_dict(d) for d in data["drives"]]
        self.write_cache: Dict[str, bool] = data.get("write_cache", {})
        self.smartctl_json: bool = data.get("smartctl_json", True)
        clock = data["clock"]
        self.sim_origin = float(clock["sim_origin"])
        self.real_origin = float(clock["real_origin"])
        self.speed = float(clock["speed"])

    @classmethod
    def load(cls, path: str) -> HostState:
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh))

    def now(self, real: Optional[float] = None) -> float:
        real = time.time() if real is None else real
        return self.sim_origin + self.speed * (real - self.real_origin)

    def spec(self, device: str) -> Optional[DriveSpec]:
        name = os.path.basename(device)
        for spec in self.specs:
            if spec.device == name:
                return spec
        return None

    def state(self, spec: DriveSpec, t: float) -> DriveState:
        return state_at(spec, t, self.write_cache.get(spec.device))


def _smartctl(host: HostState, args: List[str], now: float) -> Tuple[str, str, int]:
    wants_json = any(a == "--json" or a.startswith("--json=") or a == "-j" for a in args)
    if wants_json and not host.smartctl_json:
        # smartmontools before 7.0 has no --json
        return "", "=======> UNRECOGNIZED OPTION: json\n", 1
    if "--version" in args or "-V" in args:
        return render.smartctl_version_text(host.smartctl_json), "", 0
    if "--scan-open" in args or "--scan" in args:
        return render.smartctl_scan(host.specs, wants_json), "", 0
    if not args or args[-1].startswith("-"):
        return "", "smartctl: no device given\n", 1
    spec = host.spec(args[-1])
    if spec is None or spec.kind == "shannon":
        # smartctl cannot open a Shannon card's control node, nor a device that is not there
        msg = f"Smartctl open device: {args[-1]} failed: No such device\n"
        if wants_json:
            doc = {"smartctl": {"version": [7, 3], "exit_status": 2,
                                "messages": [{"string": msg.strip(), "severity": "error"}]}}
            return json.dumps(doc) + "\n", "", 2
        return msg, "", 2
    st = host.state(spec, now)
    if "-g" in args and "wcache" in args:
        return render.smartctl_wcache_json(spec, st), "", 0
    if spec.kind == "nvme":
        if not wants_json:
            return "", "smartctl: text output for NVMe is not simulated\n", 1
        doc = render.smartctl_nvme_json(spec, st, args)
    else:
        if not wants_json:
            return render.smartctl_ata_text(spec, st), "", 0
        doc = render.smartctl_ata_json(spec, st, args)
    compact = any(a.startswith("--json=") and "c" in a.split("=", 1)[1] for a in args)
    text = json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=2)
    return text + "\n", "", int(doc["smartctl"]["exit_status"])


def _shannon(host: HostState, args: List[str], now: float) -> Tuple[str, str, int]:
    cards = [s for s in host.specs if s.kind == "shannon"]
    if args == ["-a"]:
        if not cards:
            return "Totally found 0 Direct-IO PCIe SSD card on this system.\n", "", 0
        return render.shannon_a([(s, host.state(s, now)) for s in cards]), "", 0
    if len(args) == 2 and args[0] == "-p":
        spec = host.spec(args[1])
        if spec is None or spec.kind != "shannon":
            return "", f"Can not open device {args[1]}\n", 1
        return render.shannon_p(spec, host.state(spec, now)), "", 0
    return "", "Usage: shannon-status [-a] [-p] <device>\n", 1


def _hdparm(host: HostState, args: List[str], now: float) -> Tuple[str, str, int]:
    if len(args) != 2 or args[0] != "-W":
        return "", "hdparm: only -W DEVICE is simulated\n", 1
    spec = host.spec(args[1])
    if spec is None:
        return "", f"{args[1]}: No such file or directory\n", 2
    return render.hdparm_w(args[1], host.state(spec, now).write_cache), "", 0


def _nvme(host: HostState, args: List[str], now: float) -> Tuple[str, str, int]:
    if len(args) >= 4 and args[0] == "get-feature" and "-f" in args:
        fid = args[args.index("-f") + 1]
        spec = host.spec(args[1])
        if spec is None or spec.kind != "nvme":
            return "", f"Failed to open {args[1]}: No such file or directory\n", 1
        if int(fid, 0) != 6:
            return "", "NVMe status: Invalid Field in Command(0x2)\n", 2
        return render.nvme_get_feature_vwc(host.state(spec, now).write_cache), "", 0
    # Vendor logs are not simulated: answer as a controller without the log page does.
    return "", "NVMe status: INVALID_LOG_PAGE: The log page indicated is invalid(0x2109)\n", 1


def _zpool(host: HostState, args: List[str], now: float) -> Tuple[str, str, int]:
    # A simulated host has no ZFS pool: what `zpool status` prints then.
    return "no pools available\n", "", 0


TOOLS = {"smartctl": _smartctl, "shannon-status": _shannon, "hdparm": _hdparm, "nvme": _nvme, "zpool": _zpool}


def run(state_path: str, tool: str, args: Sequence[str], real_now: Optional[float] = None) -> Tuple[str, str, int]:
    """(stdout, stderr, exit status) of ``tool args`` on the simulated host right now."""
    return run_on(HostState.load(state_path), tool, args, real_now)


def run_on(host: HostState, tool: str, args: Sequence[str], real_now: Optional[float] = None) -> Tuple[str, str, int]:
    """:func:`run` on a state already loaded (seeding history renders thousands of answers
    from one state)."""
    handler = TOOLS.get(tool)
    if handler is None:
        return "", f"simulator: unknown tool {tool}\n", 127
    return handler(host, list(args), host.now(real_now))


def _record(prefix: str, out: str, err: str, code: int) -> None:
    """Keep an answer for the replaying script (simulator/host.py); the exit status's file,
    written last, says the answer is complete."""
    try:
        # each file whole, by rename (two first calls may record at once); the exit status last
        for suffix, text in ((".out", out), (".err", err), (".rc", f"{code}\n")):
            with open(f"{prefix}{suffix}.{os.getpid()}", "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(f"{prefix}{suffix}.{os.getpid()}", prefix + suffix)
    except OSError:
        pass  # a bench aid: this call still answers, the next renders again


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[0] != "--state":
        sys.stderr.write("usage: python -m simulator.tool --state FILE [--record PREFIX] TOOL [ARGS...]\n")
        return 64
    state_path, argv = argv[1], argv[2:]
    record = None
    if len(argv) >= 2 and argv[0] == "--record":
        record, argv = argv[1], argv[2:]
    if not argv:
        sys.stderr.write("usage: python -m simulator.tool --state FILE [--record PREFIX] TOOL [ARGS...]\n")
        return 64
    tool, args = argv[0], argv[1:]
    log = os.path.join(os.path.dirname(state_path), "calls.log")
    try:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(" ".join([tool] + args) + "\n")
    except OSError:
        pass  # the call log is a test aid, never a reason to fail the tool
    out, err, code = run(state_path, tool, args)
    if record is not None:
        _record(record, out, err, code)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
