"""Workspace checkpoints: a shadow git repository per workspace that records what every turn
changed (shell commands included) and puts the files back (DESIGN-NOTES, "Checkpoints")."""

from engine.checkpoints.changes import FileChange
from engine.checkpoints.checkpoint import Checkpoint, CheckpointsOffError, SkippedFile, Unavailable
from engine.checkpoints.restore import PathNote, PlannedWrite, RestorePlan, RestoreResult
from engine.checkpoints.shadow_repo import CheckpointError
from engine.checkpoints.store import CheckpointStore, UnknownCheckpointError
from engine.checkpoints.usage import WorkspaceUsage, disk_usage

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "CheckpointsOffError",
    "FileChange",
    "PathNote",
    "PlannedWrite",
    "RestorePlan",
    "RestoreResult",
    "SkippedFile",
    "Unavailable",
    "UnknownCheckpointError",
    "WorkspaceUsage",
    "disk_usage",
]
