"""The console's screens, one per file."""
