"""The console's widgets, one per file, each with its TCSS in DEFAULT_CSS."""
