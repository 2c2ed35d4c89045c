"""Griffe extension for the API reference: the docstrings use Sphinx roles
(``:func:`summarize```, ``:class:`~intbench.records.Episode```), which Markdown
would show verbatim; each becomes inline code naming the object (``~`` keeps
only the last dotted part, as Sphinx does)."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role replaced by inline code."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
