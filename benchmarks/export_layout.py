"""What the export's two forms of the rows cost: the Parquet file (``load_dataset``, the
hub) beside the saved ``DatasetDict`` (``load_from_disk``), side by side on one dataset.

The rows are the fixture runs' episodes (``tests/fixtures/episodes_v1``, all three
protocols) repeated to ``--episodes``, each copy with its own episode id. Measured in
one process: building the rows, writing each form, their sizes on disk, and reading
each back with its loader; then the whole ``export_runs`` (card and metric tables
included) for scale.

    python benchmarks/export_layout.py [--episodes 6000] [--out benchmarks/results/export_layout.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import datasets  # noqa: E402
from datasets.utils import logging as datasets_logging  # noqa: E402

from intbench import export  # noqa: E402
from intbench.records import Episode  # noqa: E402
from intbench.rundir import RunDir  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "episodes_v1"
SAMPLES = 200  # bootstrap resamples behind the card's CIs in the full export


def _runs(episodes: int) -> list[export.ExportRun]:
    runs = export.read_runs(RunDir.below(FIXTURE))
    copies = max(1, episodes // sum(len(r.episodes) for r in runs))
    grown = []
    for run in runs:
        copied = [
            Episode.from_dict({**e.to_dict(), "episode_id": f"{e.episode_id}-{i}"})
            for i in range(copies)
            for e in run.episodes
        ]
        grown.append(dataclasses.replace(run, episodes=copied))
    return grown


def _timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    datasets_logging.disable_progress_bar()
    runs = _runs(args.episodes)
    build_s, dataset = _timed(lambda: export.build_dataset(runs))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        disk_s, _ = _timed(
            lambda: datasets.DatasetDict({"train": dataset}).save_to_disk(str(tmp / "disk"))
        )
        parquet = tmp / "parquet" / export.PARQUET_FILE
        parquet.parent.mkdir(parents=True)
        parquet_s, _ = _timed(lambda: dataset.to_parquet(str(parquet)))
        load_disk_s, from_disk = _timed(lambda: datasets.load_from_disk(str(tmp / "disk")))
        # load_dataset reads the Parquet file through the card's config, as from an export
        export_dir = tmp / "export"
        full_s, _ = _timed(lambda: export.export_runs(runs, export_dir, samples=SAMPLES))
        cache = str(tmp / "cache")
        load_parquet_s, loaded = _timed(
            lambda: datasets.load_dataset(str(export_dir), cache_dir=cache)
        )
        assert loaded["train"]["record"] == from_disk["train"]["record"]
        disk_bytes, parquet_bytes = _size(tmp / "disk"), parquet.stat().st_size
        export_bytes = _size(export_dir)
        # the fixture's own distinct rows: repeated rows compress better than a real run's
        distinct = export.build_dataset(_runs(0))
        distinct.to_parquet(str(tmp / "distinct.parquet"))
        datasets.DatasetDict({"train": distinct}).save_to_disk(str(tmp / "distinct"))
        distinct_ratio = (tmp / "distinct.parquet").stat().st_size / _size(tmp / "distinct")
    rows = len(dataset)
    mb = 1 / 2**20
    lines = [
        "# The export's two forms of the rows: Parquet beside the saved DatasetDict",
        "",
        f"`python benchmarks/export_layout.py --episodes {args.episodes}`: {rows} rows "
        "(the fixture runs' episodes of all three protocols, repeated), one process, "
        f"{os.cpu_count()} CPU cores (shared), load average {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}, datasets {datasets.__version__}.",
        "",
        "| step | seconds | size on disk (MiB) |",
        "|---|---:|---:|",
        f"| build the rows (`build_dataset`) | {build_s:.2f} | |",
        f"| `DatasetDict.save_to_disk` (for `load_from_disk`) | {disk_s:.2f} | {disk_bytes * mb:.1f} |",
        f"| `to_parquet` (for `load_dataset`, the hub) | {parquet_s:.2f} | {parquet_bytes * mb:.1f} |",
        f"| `load_from_disk` | {load_disk_s:.2f} | |",
        f"| `load_dataset` (first load: Parquet into its cache) | {load_parquet_s:.2f} | |",
        f"| whole `export_runs` ({SAMPLES} bootstrap resamples in the card) | {full_s:.2f} | {export_bytes * mb:.1f} |",
        "",
        f"- The Parquet file adds {parquet_s / full_s:.0%} of the whole export's time and is "
        f"{parquet_bytes / disk_bytes:.2f}x the size of the Arrow copy; the export is "
        f"{export_bytes / disk_bytes:.2f}x the size the Arrow copy alone would be.",
        f"- Repeated rows compress far better than a real run's: on the {len(distinct)} distinct "
        f"fixture episodes alone the Parquet file is {distinct_ratio:.2f}x the Arrow copy's size.",
        "- Only the card and the Parquet file are uploaded by `--push-to-hub`.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
