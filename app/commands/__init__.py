"""The `trellis` commands, a module each, with `main(args, log_secrets) -> int` as its entry;
`app.cli` parses the command line and imports the one module it names (`app.cli.COMMANDS`)."""
