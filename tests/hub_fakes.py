"""A stand-in for the Hugging Face hub at the ``datasets.load_dataset`` boundary.

``FakeHub`` answers ``load_dataset(path, name, split=...)`` from in-memory rows
(or raises what it is told to), and the reachability probe is made to pass,
so the whole hub path of :func:`intbench.envs.domains.base.load_hub` runs
without a network.
"""

from __future__ import annotations

from collections.abc import Callable


class FakeHub:
    def __init__(self) -> None:
        self.tables: dict[tuple[str, str], list[dict]] = {}
        self.raise_: Callable[[str, str | None, str], BaseException] | None = None
        self.calls: list[tuple[str, str | None, str]] = []

    def add(self, path: str, split: str, rows: list[dict]) -> None:
        self.tables[(path, split)] = rows

    def load_dataset(self, path, name=None, split=None, **kwargs):
        import datasets

        self.calls.append((path, name, split))
        if self.raise_ is not None:
            raise self.raise_(path, name, split)
        splits = [s for (p, s) in self.tables if p == path]
        if not splits:
            raise datasets.exceptions.DatasetNotFoundError(
                f"Dataset '{path}' doesn't exist on the Hub or cannot be accessed."
            )
        if (path, split) not in self.tables:
            # What datasets' builder raises for a split the dataset does not have.
            raise ValueError(f"Bad split: {split}. Available splits: {splits}")
        return datasets.Dataset.from_list(self.tables[(path, split)])


def install(monkeypatch) -> FakeHub:
    """Route ``datasets.load_dataset`` to a new :class:`FakeHub`; the hub counts as reachable."""
    import datasets

    from intbench.envs.domains import base

    hub = FakeHub()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(base, "check_hub_reachable", lambda timeout=None: None)
    monkeypatch.setattr(datasets, "load_dataset", hub.load_dataset)
    return hub
