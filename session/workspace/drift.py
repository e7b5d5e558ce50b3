"""Drift: how the tracked files on disk differ from a stored manifest."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..terminal_text import has_controls
from .manifest import Manifest
from .patterns import TrackedPatterns
from .prefetch import Prefetch
from .safe_paths import is_lexically_safe
from .scanner import build_file_manifest

_ABSENT = object()


@dataclass
class DriftReport:
    """How the tracked files differ from a manifest."""

    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    unsafe: list[str] = field(default_factory=list)
    # of `modified`: files the assistant wrote that reached disk with the user's changes
    after_assistant_edit: list[str] = field(default_factory=list)
    # path -> (the manifest's digest, disk's now) of each changed path (None: no file)
    digests: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def has_drift(self) -> bool:
        """Return True if anything changed."""
        return bool(self.modified or self.deleted or self.created)


def compare_manifests(
    old: Mapping[str, str], new: Manifest, patterns: TrackedPatterns | None = None
) -> DriftReport:
    """Diff a stored manifest against a fresh one."""
    patterns = patterns or TrackedPatterns()
    if new.base_files() is old:  # a scan layered over `old`: only what it changed can differ
        return _report(old, new.changed_paths(), new.digest, patterns)
    files = new.files
    if files == old:  # the usual case, compared in C
        return DriftReport(unchanged=len(old))
    paths = [r for r, digest in old.items() if files.get(r, _ABSENT) != digest]
    if len(files) > len(old) - sum(1 for r in paths if r not in files):  # files not in `old`
        paths += files.keys() - old.keys()
    return _report(old, paths, files.get, patterns)


def _report(
    old: Mapping[str, str],
    paths: Iterable[str],
    digest: Callable[[str], str | None],
    patterns: TrackedPatterns,
) -> DriftReport:
    """Sort the paths that may differ into modified, deleted and created (tracked ones)."""
    report = DriftReport()
    for path in paths:
        before, now = old.get(path), digest(path)
        if before == now or has_controls(path):  # a stored name the scanner now refuses
            continue
        report.digests[path] = (before, now)
        if before is None:
            if patterns.matches(path):
                report.created.append(path)
        elif now is None:
            report.deleted.append(path)
        else:
            report.modified.append(path)
    report.unchanged = len(old) - len(report.modified) - len(report.deleted)
    report.modified.sort()
    report.deleted.sort()
    report.created.sort()
    return report


def detect_file_drift(
    root: Path,
    manifest: Mapping[str, str],
    patterns: TrackedPatterns | None = None,
    previous: Manifest | None = None,
    prefetch: Prefetch | None = None,
) -> tuple[DriftReport, Manifest]:
    """Compare tracked files on disk with `manifest`; unsafe stored paths are skipped."""
    patterns = patterns or TrackedPatterns()
    current = build_file_manifest(
        root, patterns, extra=manifest, previous=previous, prefetch=prefetch
    )
    report = compare_manifests(manifest, current, patterns)
    # Paths met by the walk are safe by construction; the rest were checked with resolve()
    # in list_tracked_files. Of the stored paths not found, those that fail the lexical
    # check are reported unsafe, not deleted.
    unsafe = [k for k in report.deleted if not is_lexically_safe(k)]
    if unsafe:
        report.deleted = [k for k in report.deleted if is_lexically_safe(k)]  # nor unchanged
    report.unsafe = sorted(str(k) for k in unsafe)
    return report, current
