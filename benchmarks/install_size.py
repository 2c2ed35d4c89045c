"""How big an install is: packages and MB on disk in a fresh venv, core and with extras.

Each target gets a new venv (``python -m venv``, pip upgraded), then
``pip install <repo>[extras]``; what the venv held before the install (pip
itself) is subtracted.  ``local`` pre-installs ``torch==2.13.0`` first, the
CPU wheel: an unpinned torch would resolve to the CUDA build.  The script
refuses a result holding NVIDIA packages.

    python benchmarks/install_size.py [--targets core,local] [--out FILE]

Writes ``benchmarks/results/install_size.md``.  Needs the package index (or
its local mirror); a core install needs no torch at all.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "install_size.md"
TORCH = "torch==2.13.0"
TARGETS = {"core": ("", []), "local": ("[local]", [TORCH])}

# Run by the venv's python: each installed distribution's name and bytes on disk.
DISTRIBUTIONS = """
import json, os, importlib.metadata as md
sizes = {}
for dist in md.distributions():
    total = 0
    for file in dist.files or ():
        try:
            total += os.lstat(dist.locate_file(file)).st_blocks * 512
        except OSError:
            pass
    sizes[dist.metadata["Name"].lower()] = total
print(json.dumps(sizes))
"""


def disk_bytes(root: Path) -> int:
    """Bytes on disk under ``root`` (allocated blocks, as ``du``)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def pip(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "-q", *args], check=True)


def distributions(venv: Path) -> dict[str, int]:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", DISTRIBUTIONS], check=True, capture_output=True
    ).stdout
    return json.loads(out)


def measure(target: str, workdir: Path) -> dict:
    extras, preinstall = TARGETS[target]
    venv = workdir / target
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip(venv, "install", "--upgrade", "pip")
    before_bytes, before = disk_bytes(venv), distributions(venv)
    start = time.perf_counter()
    if preinstall:
        pip(venv, "install", *preinstall)
    pip(venv, "install", f"{REPO}{extras}")
    seconds = time.perf_counter() - start
    after = distributions(venv)
    nvidia = sorted(name for name in after if name.startswith("nvidia"))
    if nvidia:
        raise SystemExit(
            f"{target}: a CUDA torch came in ({', '.join(nvidia)}); pre-install {TORCH}"
        )
    added = {name: size for name, size in after.items() if name not in before}
    return {
        "target": target,
        "command": " && ".join(
            [
                *(f"pip install {p}" for p in preinstall),
                f'pip install ".{extras}"' if extras else "pip install .",
            ]
        ),
        "packages": len(added),
        "mb": (disk_bytes(venv) - before_bytes) / 1e6,
        "seconds": seconds,
        "largest": sorted(added.items(), key=lambda item: -item[1])[:8],
    }


def report(results: list[dict], command: str) -> str:
    lines = [
        "# Install size",
        "",
        f"`{command}` on {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.  Each target is a fresh venv; "
        "the packages and MB are what the install added to it (pip itself not counted), "
        "MB as allocated on disk.  Install times include downloads and vary with the "
        "network and the machine's load.",
        "",
        "| target | command | packages | MB on disk | install s |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['target']} | `{r['command']}` | {r['packages']} | {r['mb']:.0f} | {r['seconds']:.0f} |"
        )
    for r in results:
        largest = ", ".join(f"{name} {size / 1e6:.0f}" for name, size in r["largest"])
        lines += ["", f"Largest in {r['target']} (MB): {largest}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="core,local", help="comma-separated: core, local")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    targets = args.targets.split(",")
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; use {', '.join(TARGETS)}")
    with tempfile.TemporaryDirectory(prefix="intbench-install-") as tmp:
        results = [measure(target, Path(tmp)) for target in targets]
    command = "python benchmarks/install_size.py " + " ".join(sys.argv[1:])
    text = report(results, command.strip())
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
