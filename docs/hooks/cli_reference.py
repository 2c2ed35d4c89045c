"""Build-time CLI reference: renders every ``intbench`` command's ``--help`` into
``cli.md`` (an mkdocs hook, so the page is made from the parsers themselves and
cannot drift from them)."""

from __future__ import annotations

import os

PAGE = "cli.md"
WIDTH = "100"  # argparse wraps to $COLUMNS; fixed so the page is the same on every machine

INTRO = """# CLI reference

Every `intbench` command with its options, as `intbench <command> --help` prints
them. This page is generated from the command-line parsers when the site is
built. The model specs that `--student`, `--teacher`, `--judge` and `--model`
take are listed at the end of each command that has one.
"""


def render() -> str:
    """The Markdown page: one section per command, its help in a code block."""
    from intbench.cli import _every_parser, build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        sections = [INTRO]
        for parser in _every_parser(build_parser()):
            sections.append(
                f"## `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"
            )
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(sections)


def on_files(files, config):
    """mkdocs hook: add the generated page to the site."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files
