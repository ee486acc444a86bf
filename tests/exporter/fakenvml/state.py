"""Writes state files for the fake libnvidia-ml.so.1 (the format is in README.md here)."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

# NVML return codes worth injecting
UNINITIALIZED = 1
NOT_SUPPORTED = 3
NO_PERMISSION = 4
DRIVER_NOT_LOADED = 9
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
UNKNOWN = 999

STATE_ENV = "FAKE_NVML_STATE"
# the MIG profile tables of fake_nvml_mig.c (FakeCard.mig_profiles)
MIG_TABLES = ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM5-141GB")
OTHER_DEVICE_UUID = "GPU-not-a-listed-card"  # the UUID of an Xid event's handle="other"
_race_tags = itertools.count(1)


@dataclass
class FakeCard:
    uuid: str
    name: str = "Tesla T4"
    mem_total: int = 16 * 2**30
    mem_used: int = 0
    mem_reserved: int = 0  # counted as used by nvmlDeviceGetMemoryInfo (v1), not by _v2
    util: int = 0  # percent
    mem_util: int = 0
    ecc_uncorrected: int = 0
    ecc_corrected: int = 0
    remap_failed: bool = False
    remap_pending: bool = False
    lost: bool = False  # every call on the card answers GPU_IS_LOST
    # MIG: the card's profile table (one of MIG_TABLES; None: no MIG, MIG calls answer
    # NOT_SUPPORTED) and its current and pending mode (pending None: as current)
    mig_profiles: str | None = None
    mig: bool = False
    mig_pending: bool | None = None

    def line(self, index: int) -> str:
        if " " in self.uuid or "_" in self.name:
            raise ValueError("uuid must not hold spaces, name must not hold underscores")
        return (
            f"card {index} uuid={self.uuid} name={self.name.replace(' ', '_')}"
            f" mem_total={self.mem_total} mem_used={self.mem_used}"
            f" mem_reserved={self.mem_reserved} util={self.util} mem_util={self.mem_util}"
            f" ecc_uncorrected={self.ecc_uncorrected} ecc_corrected={self.ecc_corrected}"
            f" remap_failed={int(self.remap_failed)} remap_pending={int(self.remap_pending)}"
            f" lost={int(self.lost)}" + self._mig_fields()
        )

    def _mig_fields(self) -> str:
        if self.mig_profiles is None:
            return ""
        pending = self.mig if self.mig_pending is None else self.mig_pending
        return f" mig_profiles={self.mig_profiles} mig={int(self.mig)} mig_pending={int(pending)}"


@dataclass
class FakeProcess:
    card: int
    pid: int
    mem: int | None  # None: NVML_VALUE_NOT_AVAILABLE
    gi: int | None = None  # the GPU instance it runs in (MIG), None: the whole card
    ci: int = 0  # its compute instance in that GPU instance

    def line(self) -> str:
        mig = "" if self.gi is None else f" gi={self.gi} ci={self.ci}"
        return f"proc {self.card} pid={self.pid} mem={'na' if self.mem is None else self.mem}{mig}"


@dataclass
class FakeGpuInstance:
    """A MIG GPU instance on `card`: a profile of the card's table (e.g. "1g.5gb") placed at
    memory slice `start`; its memory total defaults to the profile's."""

    card: int
    id: int
    profile: str
    start: int
    mem_used: int = 0
    mem_total: int | None = None

    def line(self) -> str:
        total = "" if self.mem_total is None else f" mem_total={self.mem_total}"
        return (
            f"gi {self.card} id={self.id} profile={self.profile} start={self.start}"
            f" mem_used={self.mem_used}{total}"
        )


@dataclass
class FakeComputeInstance:
    """A compute instance of GPU instance `gi`, i.e. one MIG device; MIG device index k of a
    card is its k-th compute instance in this list."""

    card: int
    gi: int
    id: int = 0
    uuid: str | None = None

    def line(self) -> str:
        uuid = "" if self.uuid is None else f" uuid={self.uuid}"
        return f"ci {self.card} gi={self.gi} id={self.id}{uuid}"


@dataclass
class FakeSample:
    """One nvmlDeviceGetProcessUtilization sample; ts None means "now" (always newer)."""

    card: int
    pid: int
    sm: int
    mem: int = 0
    ts: int | None = None


@dataclass
class FakeXid:
    """An Xid on `card`, its event naming the device by `handle`: "same" (the handle the card
    was registered with), "alias" (another pointer to the same card, same UUID), "invalid"
    (a pointer NVML refuses: INVALID_ARGUMENT) or "other" (a device that is none of the cards,
    UUID `OTHER_DEVICE_UUID`)."""

    card: int
    xid: int
    handle: Literal["same", "alias", "invalid", "other"] = "same"

    def line(self) -> str:
        return f"xid {self.card} {self.xid}" + (
            "" if self.handle == "same" else f" handle={self.handle}"
        )


@dataclass
class FakeSampleRace:
    """The next `times` nvmlDeviceGetProcessUtilization reads on `card` (pynvml's second
    call, the one with a buffer) find a sample more than the sizing call counted and answer
    INSUFFICIENT_SIZE. Counted per object: writing the same object again does not re-arm it."""

    card: int
    times: int = 1
    tag: str = field(default_factory=lambda: f"race-{os.getpid()}-{next(_race_tags)}")


@dataclass
class FakeFault:
    """Function `function` ("*" = every function) answers `code`, on one card or all; with
    `mig`, only when called on that MIG device (index) of the card."""

    function: str
    code: int
    card: int | None = None
    mig: int | None = None


@dataclass
class FakeHang:
    """Function `function` ("*" = every function) sleeps `ms` before answering."""

    function: str
    ms: int
    card: int | None = None


@dataclass
class FakeState:
    driver: str = "550.54.15"
    cards: list[FakeCard] = field(default_factory=list)
    processes: list[FakeProcess] = field(default_factory=list)
    gpu_instances: list[FakeGpuInstance] = field(default_factory=list)
    compute_instances: list[FakeComputeInstance] = field(default_factory=list)
    samples: list[FakeSample] = field(default_factory=list)
    xids: list[tuple[int, int] | FakeXid] = field(default_factory=list)  # (card, xid), in order
    sample_races: list[FakeSampleRace] = field(default_factory=list)
    faults: list[FakeFault] = field(default_factory=list)
    hangs: list[FakeHang] = field(default_factory=list)
    unsupported: list[tuple[int, str]] = field(default_factory=list)  # (card, function)

    def render(self) -> str:
        lines = [f"driver {self.driver}"]
        lines += [card.line(index) for index, card in enumerate(self.cards)]
        lines += [p.line() for p in self.processes]
        lines += [g.line() for g in self.gpu_instances]
        lines += [c.line() for c in self.compute_instances]
        lines += [
            f"procutil {s.card} pid={s.pid} sm={s.sm} mem={s.mem}" + (f" ts={s.ts}" if s.ts else "")
            for s in self.samples
        ]
        lines += [x.line() if isinstance(x, FakeXid) else f"xid {x[0]} {x[1]}" for x in self.xids]
        lines += [f"procutil_race {r.card} times={r.times} tag={r.tag}" for r in self.sample_races]
        lines += [
            f"error {f.function} {f.code}{_card_option(f.card)}"
            + ("" if f.mig is None else f" mig={f.mig}")
            for f in self.faults
        ]
        lines += [f"hang {h.function} {h.ms}{_card_option(h.card)}" for h in self.hangs]
        lines += [f"unsupported {card} {function}" for card, function in self.unsupported]
        return "\n".join(lines) + "\n"


def _card_option(card: int | None) -> str:
    return "" if card is None else f" card={card}"


def write_state(path: Path, state: FakeState) -> None:
    """Replaces the state file atomically: the library never reads half a file."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as stream:
        stream.write(state.render())
    os.replace(temporary, path)


@dataclass(frozen=True)
class FakeNvml:
    """The compiled fake library and the state file it reads."""

    lib_dir: Path
    state_path: Path

    @property
    def lib_path(self) -> Path:
        return self.lib_dir / "libnvidia-ml.so.1"

    def write(self, state: FakeState) -> None:
        write_state(self.state_path, state)

    def with_own_state(self, directory: Path, state: FakeState) -> FakeNvml:
        """The same library over a state file of its own in `directory`, holding `state`
        (a module's exporter must not share the in-process NVML tests' state file)."""
        mine = replace(self, state_path=directory / "state")
        mine.write(state)
        return mine

    def remove(self) -> None:
        """No state file: the library answers DRIVER_NOT_LOADED to everything."""
        self.state_path.unlink(missing_ok=True)

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for a subprocess that should load the fake instead of a real NVML."""
        env = dict(os.environ if base is None else base)
        library_path = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = (
            f"{self.lib_dir}:{library_path}" if library_path else str(self.lib_dir)
        )
        env[STATE_ENV] = str(self.state_path)
        return env


def write_procfs(root: Path, cgroups: Mapping[int, str]) -> Path:
    """A fake /proc: `root/<pid>/cgroup` for every pid, for the exporter's --path.procfs."""
    for pid, text in cgroups.items():
        (root / str(pid)).mkdir()
        (root / str(pid) / "cgroup").write_text(text)
    return root
