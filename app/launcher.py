"""The `trellis` console script: `trellis --version` is answered before the command line (argparse,
asyncio and every command's parser) is even imported; everything else goes to `app.cli.main`."""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from app.version import version_line

        print(version_line())
        return 0
    from app.cli import main as run_command_line

    return run_command_line()


if __name__ == "__main__":
    raise SystemExit(main())
