"""Remote logs: `s3://`, `gs://`, `hf://` and `https://` URLs, read through fsspec.

Why a local mirror: every reader, the format sniffing and discovery (folder logs,
TensorBoard run folders, the newest Hugging Face checkpoint copy, sweeps) work on local
paths, and `watch` follows a file by its size and inode. So a URL pattern is *staged*:
the objects it names are listed (one recursive listing from the pattern's fixed prefix)
and copied into a private temporary folder laid out as `<scheme>/<bucket or host>/<key>`,
and discovery then runs on that copy exactly as on a local folder. Staging again (each
`watch` poll) copies only what changed: an object that grew is range-read from the old
end (after checking that the bytes before it are unchanged) and appended to the copy, so
the follower reads only the new bytes; a rewritten or shrunk object is copied whole into
a new file (the follower sees a replaced log); an object that disappeared is removed.
Reports name each log by its URL, without any query string (a signed URL's signature
never reaches a report).

What is copied: every object the pattern matches, and every object under a matched
folder, except model weights and other binary artefacts (`NOT_LOG_SUFFIXES`): a Hugging
Face output folder holds gigabytes of checkpoints next to its kilobyte
`trainer_state.json`. A URL naming one object is always copied.

fsspec, and the back end of each scheme (s3fs, gcsfs, huggingface_hub, aiohttp), are the
optional `remote` extra; they are imported only when a URL is given, so the CLI starts as
fast without them. Credentials come from where each back end looks (for S3: the
`AWS_*` variables, `~/.aws`, an instance role; `AWS_ENDPOINT_URL_S3` names another
server; for GCS: Google's default credentials, or fsspec's `FSSPEC_GS_TOKEN`; for the
Hub: `HF_TOKEN`, `HF_ENDPOINT`). gcsfs finding no credentials goes on anonymously without
a word, which reads a public bucket; when a listing or read then fails, the error says
that it was anonymous and which credentials were looked for (`_anonymous_fallback`).
Back-end errors (botocore, aiohttp, google-auth, huggingface_hub each raise their own
kinds), when a file system is set up or when it lists or reads, become the one-line
`InputError` naming the URL without its query string; the tracebacks the back ends log
on the way are kept off stderr (`_quiet_back_ends`).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from trainspotter.config.settings import path_matches, path_pattern_regex
from trainspotter.errors import InputError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)\Z", re.DOTALL)
_GLOB_CHARS = re.compile(r"[*?\[]")
EXTRA_HINT = "pip install 'trainspotter[remote]'"

NOT_LOG_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".h5",
    ".hdf5",
    ".keras",
    ".npy",
    ".npz",
    ".pkl",
    ".pickle",
    ".joblib",
    ".onnx",
    ".msgpack",
    ".gguf",
    ".tflite",
    ".parquet",
    ".arrow",
    ".tar",
    ".zip",
    ".png",
    ".jpg",
    ".jpeg",
    ".mp4",
)
"""Files under a matched folder that no reader reads and that are often large (weights,
optimizer states, data shards, media): never copied unless a URL names them."""

FETCH_BATCH = 256
FETCH_BATCH_BYTES = 256 << 20
"""Objects, and bytes, read at once when copying many (bounds a batch's memory)."""
OVERLAP_BYTES = 1024
"""Bytes before the old end that must be unchanged for an object that grew to be read
from there on (else it is copied whole: it was rewritten, not appended to)."""


BACK_ENDS = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "hf": "huggingface_hub",
    "http": "aiohttp",
    "https": "aiohttp",
}
"""The package fsspec needs for each scheme the `remote` extra installs a back end for."""


class RemoteUnavailable(InputError):
    """URLs cannot be read in this installation at all (fsspec or the scheme's back end is
    not installed, or the scheme is unknown): the same for every URL, so not worth
    retrying or reporting per log."""


def is_url(pattern: str) -> bool:
    """Whether a path argument is a URL (`scheme://...`) rather than a local path."""
    return _URL.match(pattern) is not None


def is_weights(name: str) -> bool:
    """Whether a file name looks like weights or another binary artefact (not a log)."""
    return name.lower().endswith(NOT_LOG_SUFFIXES)


def _split(url: str) -> tuple[str, str]:
    """(scheme, the rest without a query string or fragment for http(s))."""
    match = _URL.match(url)
    assert match is not None
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme in ("http", "https"):
        rest = rest.split("#", 1)[0].split("?", 1)[0]
    return scheme, rest


def shown_url(url: str) -> str:
    """A URL as messages and reports name it: without the query string or fragment of an
    http(s) URL (a signed URL's signature is a credential)."""
    scheme, rest = _split(url)
    return f"{scheme}://{rest}"


def _safe_parts(rest: str, url: str) -> list[str]:
    parts = [p for p in rest.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise InputError(url, "not a usable URL (it needs a bucket or host and no '.' or '..')")
    return parts


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's file system for `url` and the path in it. RemoteUnavailable naming the
    extra when fsspec or the scheme's back end is missing, or the scheme is unknown;
    InputError when the back end cannot be set up (its credentials or settings). Errors
    name the URL as `shown_url` does."""
    shown = shown_url(url)
    try:
        import fsspec.core
        from fsspec import get_filesystem_class
    except ImportError:
        raise RemoteUnavailable(
            shown, f"reading URLs needs the 'remote' extra: {EXTRA_HINT}"
        ) from None
    scheme = _split(url)[0]
    try:
        get_filesystem_class(scheme)
    except ImportError as exc:
        package = BACK_ENDS.get(scheme) or f"a package that is not installed ({exc})"
        raise RemoteUnavailable(
            shown, f"{scheme}:// URLs need {package}, which is not installed: {EXTRA_HINT}"
        ) from None
    except ValueError as exc:
        raise RemoteUnavailable(shown, f"unsupported URL: {exc}") from None
    _quiet_back_ends()
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except Exception as exc:  # e.g. gcsfs reading a token file that is not one
        raise InputError(shown, _problem(exc, "cannot connect")) from None
    return fs, str(path)


BACK_END_LOGGERS = (
    *("fsspec", "s3fs", "aiobotocore", "botocore", "gcsfs", "google"),
    *("huggingface_hub", "urllib3"),
)


def _quiet_back_ends() -> None:
    """The back ends log a failed request, traceback and all, before raising it; with no
    logging set up, Python prints that to stderr. The raised error is reported in one
    line, so their records go nowhere unless the program configured logging."""
    if logging.getLogger().handlers:
        return
    for name in BACK_END_LOGGERS:
        log = logging.getLogger(name)
        if not log.handlers:
            log.addHandler(logging.NullHandler())


_QUERY = re.compile(r"""(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#'"]*)\?[^\s'"]*""")
_CREDENTIAL_ERRORS = ("credential", "token", "auth", "forbidden", "denied", "unauthori")


def _problem(exc: BaseException, failed: str = "cannot read") -> str:
    """One line for a back end's exception (its own kinds: see the module docstring). A
    URL's query string (a signature, an access token) is left out of it."""
    kind = type(exc).__name__
    # huggingface_hub's RepositoryNotFoundError, EntryNotFoundError...: not all of them
    # become FileNotFoundError in its file system. The Hub answers a private repository
    # it will not show as a missing one.
    if isinstance(exc, FileNotFoundError) or kind.endswith("NotFoundError"):
        return "no such file or folder"
    if isinstance(exc, PermissionError):
        return "permission denied (check the credentials in the environment)"
    text = _QUERY.sub(r"\1?...", " ".join(str(exc).split())) or kind
    hint = ""
    if failed != "cannot read" or any(w in f"{kind} {text}".lower() for w in _CREDENTIAL_ERRORS):
        hint = " (check the credentials in the environment)"
    return f"{failed}: {kind}: {text[:300]}{hint}"


GCS_LOOKED_FOR = (
    "GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials "
    "(`gcloud auth application-default login`), gcsfs's token cache (~/.gcs_tokens) and a "
    "Google Cloud machine's metadata server"
)


def _anonymous_fallback(fs: Any, exc: BaseException) -> str:
    """For gcsfs connected anonymously because it found no credentials (it tries Google's
    default credentials, its token cache and the metadata server, then goes on without
    any, silently: `GoogleCredentials.connect`), what it looked for; else nothing. A
    public bucket reads fine that way; any other fails with 401 or 403."""
    credentials = getattr(fs, "credentials", None)
    fell_back = getattr(credentials, "method", None) == "anon"
    if not fell_back or getattr(credentials, "token", None) is not None:
        return ""  # credentials were found, or anonymous access was asked for
    if isinstance(exc, FileNotFoundError):
        return ""
    return (
        f"; no Google credentials were found, so gcsfs read the bucket anonymously "
        f"(it looked for {GCS_LOOKED_FOR}; FSSPEC_GS_TOKEN can name a token file)"
    )


@dataclass
class _Copy:
    """One mirrored object: where it is in the file system, and what was copied."""

    remote: str
    size: int
    tag: str


@dataclass
class Staged:
    """A URL pattern staged in the mirror: glob `pattern` under `base` as a local one."""

    base: Path
    pattern: str
    """The URL's path as a local pattern relative to `base` (`bucket/runs/*.csv`)."""
    prefix: str
    """`scheme://`: a mirrored path relative to `base` with this before it is its URL."""
    left_out: list[str] = field(default_factory=list)
    """URLs the pattern matched that were not copied (weights and other binary files)."""

    def url_of(self, path: Path) -> str:
        """The URL a mirrored path stands for."""
        return self.prefix + path.relative_to(self.base).as_posix()


@dataclass
class Mirror:
    """The local copy of the remote objects this process was asked for."""

    root: Path
    copies: dict[Path, _Copy] = field(default_factory=dict)

    def stage(self, url: str) -> Staged:
        """List what `url` (a glob or one object or folder) names and bring the copy up to
        date. InputError naming the URL when the listing or a read fails."""
        scheme, rest = _split(url)
        shown = f"{scheme}://{rest}"
        parts = _safe_parts(rest, shown)
        globbed = scheme not in ("http", "https") and bool(_GLOB_CHARS.search(rest))
        fixed = parts
        if globbed:
            first = next(i for i, p in enumerate(parts) if _GLOB_CHARS.search(p))
            if first == 0:
                raise InputError(shown, "a URL pattern must name its bucket or host, not glob it")
            fixed = parts[:first]
        fs, _ = filesystem(url)
        base = self.root / scheme
        prefix = "/".join(fixed)
        pattern = "/".join(parts)
        try:
            fs.invalidate_cache()
            wanted, left_out = self._listing(fs, url, scheme, prefix, pattern, globbed)
            self._sync(fs, base, wanted, prefix if globbed else pattern)
        except InputError:
            raise
        except Exception as exc:  # a back end's own error kinds (module docstring)
            raise InputError(shown, _problem(exc) + _anonymous_fallback(fs, exc)) from None
        left = [f"{scheme}://{r}" for r in left_out]
        return Staged(base, pattern, f"{scheme}://", left)

    def _listing(
        self, fs: Any, url: str, scheme: str, prefix: str, pattern: str, globbed: bool
    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Mirror-relative path -> the object's info, for every object to copy; and the
        objects the pattern itself matched that are not copied (`NOT_LOG_SUFFIXES`)."""
        if scheme in ("http", "https"):
            return {pattern: fs.info(url)}, []
        root = fs._strip_protocol(f"{scheme}://{prefix if globbed else pattern}")
        try:
            info = fs.info(root)
        except FileNotFoundError:
            return {}, []
        if info.get("type") != "directory":
            return ({}, []) if globbed else ({pattern: info}, [])
        wanted: dict[str, dict[str, Any]] = {}
        left_out: list[str] = []
        direct = path_pattern_regex(pattern)
        for remote, detail in fs.find(root, detail=True).items():
            relative = _relative(fs, scheme, remote)
            if relative is None or (globbed and not path_matches(pattern, relative)):
                continue
            if not is_weights(relative):
                wanted[relative] = detail
            elif globbed and direct.match(relative):
                left_out.append(relative)
        return wanted, left_out

    def _sync(self, fs: Any, base: Path, wanted: dict[str, dict[str, Any]], scope: str) -> None:
        """Bring the copies of `wanted` up to date; drop copies under `scope` that are gone."""
        whole = [
            (base / relative, info)
            for relative, info in wanted.items()
            if not self._updated(fs, base / relative, info)
        ]
        # Whole copies in batches: an async back end (s3fs, gcsfs) reads each batch at once.
        for batch in _batches(whole):
            names = [str(info.get("name") or "") for _, info in batch]
            contents = fs.cat(names, on_error="raise") if len(names) > 1 else {}
            for (local, info), name in zip(batch, names, strict=True):
                data = contents.get(name)
                self._write(local, name, fs.cat_file(name) if data is None else data, _tag(info))
        keep = {base / r for r in wanted}
        top = base / scope
        for local in [p for p in self.copies if p == top or top in p.parents]:
            if local not in keep:
                del self.copies[local]
                local.unlink(missing_ok=True)

    def _updated(self, fs: Any, local: Path, info: dict[str, Any]) -> bool:
        """Whether the copy is current, or was brought up to date by appending; False: it
        must be copied whole."""
        size = int(info.get("size") or 0)
        tag = _tag(info)
        copy = self.copies.get(local)
        if copy is None or not local.is_file():
            return False
        if copy.size == size and copy.tag == tag:
            return True
        if size > copy.size and self._append(fs, local, copy, size):
            copy.size, copy.tag = size, tag
            return True
        return False

    def _write(self, local: Path, remote: str, data: bytes, tag: str) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        partial = local.with_name(local.name + ".trainspotter-part")
        partial.write_bytes(data)
        os.replace(partial, local)  # a new file: a follower sees the log replaced
        self.copies[local] = _Copy(remote, len(data), tag)

    def _append(self, fs: Any, local: Path, copy: _Copy, size: int) -> bool:
        """Append the bytes after the old end, when the bytes before it are unchanged."""
        start = max(0, copy.size - OVERLAP_BYTES)
        data = fs.cat_file(copy.remote, start=start, end=size)
        with local.open("rb+") as handle:
            handle.seek(start)
            old = handle.read(copy.size - start)
            if len(data) != size - start or data[: len(old)] != old:
                return False
            handle.seek(copy.size)
            handle.write(data[len(old) :])
        return True


def _batches(
    items: list[tuple[Path, dict[str, Any]]],
) -> Iterator[list[tuple[Path, dict[str, Any]]]]:
    """At most FETCH_BATCH objects and FETCH_BATCH_BYTES (by their listed sizes) at once."""
    batch: list[tuple[Path, dict[str, Any]]] = []
    size = 0
    for item in items:
        item_size = int(item[1].get("size") or 0)
        if batch and (len(batch) >= FETCH_BATCH or size + item_size > FETCH_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += item_size
    if batch:
        yield batch


def _relative(fs: Any, scheme: str, remote: str) -> str | None:
    """A listed object's path as the mirror lays it out (`bucket/key`), or None when it
    cannot be laid out safely."""
    url = fs.unstrip_protocol(remote)
    if not is_url(url):
        return None
    _, rest = _split(url)
    parts = [p for p in rest.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        return None
    return str(PurePosixPath(*parts))


def _tag(info: dict[str, Any]) -> str:
    """What changes when an object is rewritten (an ETag, else a modification time)."""
    for key in ("ETag", "etag", "md5Hash", "blob_id", "LastModified", "mtime", "updated"):
        if info.get(key):
            return str(info[key])
    return ""


_mirror: Mirror | None = None


def mirror() -> Mirror:
    """This process' mirror, made at first use and removed when the process that made it
    exits (forked workers inherit it and leave it alone)."""
    global _mirror
    if _mirror is None:
        root = Path(tempfile.mkdtemp(prefix="trainspotter-remote-"))
        owner = os.getpid()

        def remove() -> None:
            if os.getpid() == owner:
                shutil.rmtree(root, ignore_errors=True)

        atexit.register(remove)
        _mirror = Mirror(root)
    return _mirror


__all__ = [
    "NOT_LOG_SUFFIXES",
    "Mirror",
    "RemoteUnavailable",
    "Staged",
    "filesystem",
    "is_url",
    "is_weights",
    "mirror",
    "shown_url",
]
