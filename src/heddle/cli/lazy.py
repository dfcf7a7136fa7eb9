"""Command groups imported only when they run, so that `heddle --help` stays fast.

`heddle --help` once took 2 s: every command module was imported with everything it uses (the
control plane, SQLAlchemy, FastAPI through the schemas). The CLI's own modules now import their
heavy dependencies inside the commands; a group whose module is heavy at import time (Identify's
importers) is named here instead and imported on first use. While the top-level help lists the
commands, such a group is shown by its one-line help without being imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    import click


class LazyGroup(TyperGroup):
    """A TyperGroup whose `lazy` entries, `name: ("module:attribute", "one-line help")`, are
    imported on first use; the attribute is a `typer.Typer` or a click command."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {}
    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        target, help_line = self.lazy[cmd_name]
        if self._listing:  # only its line in this group's help: no import
            return TyperCommand(cmd_name, help=help_line)
        module, _, attribute = target.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        command = typer.main.get_command(found) if isinstance(found, typer.Typer) else found
        command.name, command.help = cmd_name, help_line
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


class LazyModule:
    """`ws_control = LazyModule("heddle.control.workspaces")`: the module, imported at the first
    attribute read (by a command that runs), not when the CLI module is."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)
