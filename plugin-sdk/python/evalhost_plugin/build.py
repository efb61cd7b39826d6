"""Builds a Python grader into an evalhost component with componentize-py.

    evalhost-plugin-build app -o mentions.wasm [--dir .]

``app`` is the module (``app.py`` in ``--dir``) that assigns
``Grader = evalhost_plugin.export(MyGrader)``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def command(app: str, out: str, directory: str, componentize: str) -> list:
    """The componentize-py command line."""
    return [
        componentize,
        "-d",
        str(HERE / "wit"),
        "-w",
        "plugin",
        "componentize",
        "-p",
        directory,
        "-p",
        str(HERE.parent),
        app,
        "-o",
        out,
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="evalhost-plugin-build", description=__doc__.splitlines()[0])
    parser.add_argument("app", help="the app module (app.py → app)")
    parser.add_argument("-o", "--output", required=True, help="the component to write (.wasm)")
    parser.add_argument("--dir", default=".", help="the directory holding the app module")
    parser.add_argument(
        "--componentize-py",
        default=os.environ.get("EVALHOST_COMPONENTIZE_PY") or shutil.which("componentize-py") or "componentize-py",
        help="the componentize-py to run (default: EVALHOST_COMPONENTIZE_PY, else PATH)",
    )
    args = parser.parse_args(argv)
    try:
        return subprocess.call(command(args.app, args.output, args.dir, args.componentize_py))
    except FileNotFoundError:
        print(
            "error: componentize-py was not found; install it with `pip install componentize-py==0.25.1` "
            "(or `pip install evalhost-plugin`)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
