"""The `trellis` command line: each command run through `app.cli.main` or as a process."""
