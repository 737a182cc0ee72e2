"""The user's record of trusted project configurations (docs/ARCHITECTURE.md, "Configuration and
trust").

A repository's `.trellis/config.toml` can name programs to start and endpoints to send data to, so
it applies whole only once the user has trusted that directory. Trust is recorded at user level, in
the data directory, keyed by the project's resolved directory and the SHA-256 of the file's bytes:
any edit of the file, by anyone, asks again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine.errors import TrellisError
from engine.paths import trust_file_path

TRUST_FORMAT = 1
"""The version written into the record, so a later layout can be told from this one."""


class TrustStoreError(TrellisError):
    """The trust record cannot be read or written; the message names the file and the problem."""

    def __init__(self, file: Path, problem: str) -> None:
        self.file = file
        self.problem = problem
        super().__init__(f"{file}: {problem}")


def file_digest(data: bytes) -> str:
    """The SHA-256 of a config file's bytes, as recorded with its trust."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedProject:
    """One record: the directory as resolved and the digest of the file the user trusted."""

    directory: str
    sha256: str


class TrustStore:
    """Reads and writes the trust record; every call reads the file again, so two processes agree.

    Writes replace the file atomically (write a temporary file, then rename), readable by the user
    only. Two processes trusting at the same instant may lose one of the two records; the loser is
    simply asked again.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else trust_file_path()

    def trusted(self, directory: Path, digest: str) -> bool:
        """Whether the user trusted `directory` with a config file of exactly this digest."""
        record = self._read().get(_key(directory))
        return record is not None and record.sha256 == digest

    def trust(self, directory: Path, digest: str) -> TrustedProject:
        """Record that the config file of `directory` with this digest may apply whole."""
        records = self._read()
        record = TrustedProject(directory=_key(directory), sha256=digest)
        records[record.directory] = record
        self._write(records)
        return record

    def revoke(self, directory: Path) -> bool:
        """Forget the trust in `directory`; False when there was none."""
        records = self._read()
        if records.pop(_key(directory), None) is None:
            return False
        self._write(records)
        return True

    def _read(self) -> dict[str, TrustedProject]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TrustStoreError(
                self.path, f"cannot read the trust record: {exc.strerror or exc}"
            ) from exc
        except UnicodeDecodeError as exc:
            raise TrustStoreError(self.path, f"the trust record is not UTF-8: {exc}") from exc
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TrustStoreError(self.path, f"the trust record is not valid JSON: {exc}") from exc
        projects = raw.get("projects") if isinstance(raw, dict) else None
        if not isinstance(projects, dict) or raw.get("version") != TRUST_FORMAT:
            raise TrustStoreError(
                self.path,
                f"not a trust record of version {TRUST_FORMAT} "
                '(expected {"version": 1, "projects": {...}})',
            )
        records: dict[str, TrustedProject] = {}
        for directory, entry in projects.items():
            digest = entry.get("sha256") if isinstance(entry, dict) else None
            if not isinstance(digest, str):
                raise TrustStoreError(self.path, f"the record of {directory!r} has no sha256")
            records[directory] = TrustedProject(directory=directory, sha256=digest)
        return records

    def _write(self, records: dict[str, TrustedProject]) -> None:
        payload = {
            "version": TRUST_FORMAT,
            "projects": {key: {"sha256": r.sha256} for key, r in sorted(records.items())},
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(
                prefix=".trust-", suffix=".tmp", dir=self.path.parent
            )
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(payload, out, indent=2)
                    out.write("\n")
                os.replace(temporary, self.path)  # mkstemp made it 0600
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise TrustStoreError(
                self.path, f"cannot write the trust record: {exc.strerror or exc}"
            ) from exc


def _key(directory: Path) -> str:
    """The real path: a symlink or a relative spelling of the same project is the same project."""
    return str(directory.expanduser().resolve())
