"""argparse that names a mistyped flag or command and the nearest real one, for both programs
(`xgpu-advisor`, `xgpu-exporter`): "unknown flag --senario; did you mean --scenario?".

Python 3.11's argparse has no `suggest_on_error` (3.14 adds it, for choices only), so the
nearest name is difflib's, over the option strings of the parser that was reading the flag.

Flags are read as written (`allow_abbrev=False`): a prefix is an unknown flag with the flag
it was probably meant to be, never silently another flag. `report --output out/` would
otherwise be `--output-dir` and `--kube` an "ambiguous option"; and a script that abbreviates
would change meaning the day a flag with the same prefix is added.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def nearest(word: str, names: Iterable[str]) -> tuple[str, ...]:
    """The names `word` begins (an abbreviation; a family `--x.y` counted once, as `--x`),
    when there are at most four; else the one name most like it if any is close. Leading
    dashes aside, which every flag shares and which would make any two flags look alike."""
    by_stem = {name.lstrip("-"): name for name in names}
    stem = word.lstrip("-")
    longer = [s for s in by_stem if stem and s.startswith(stem)]
    heads = [s for s in longer if not any(s.startswith(f"{other}.") for other in longer)]
    if 0 < len(heads) <= 4:
        return tuple(by_stem[s] for s in heads)
    return tuple(by_stem[s] for s in difflib.get_close_matches(stem, by_stem, n=1, cutoff=0.6))


def _did_you_mean(guesses: tuple[str, ...]) -> str:
    return f"did you mean {' or '.join(guesses)}?"


class SuggestingParser(argparse.ArgumentParser):
    """`parse_args` that refuses an unknown flag or command by name, with the nearest real
    one; every parser made by `add_subparsers` is one too (argparse's `parser_class`)."""

    help_hint = True  # name `PROG --help` when no flag is near (False: error() says it)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(**kwargs)
        self._commands: dict[str, argparse.ArgumentParser] = {}

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        self._commands = action.choices  # the same dict, filled as commands register
        return action

    def parse_args(  # type: ignore[override]  # argparse's overloads; only this form is used
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        given = list(sys.argv[1:] if args is None else args)
        self._check_words(given)
        parsed, extras = self.parse_known_args(given, namespace)
        reader = self._commands.get(getattr(parsed, "command", None) or "", self)
        if extras:  # what the check above leaves to argparse: a stray word, a short flag
            reader.error(unknown(extras, reader))
        # Which long flags were written, beside their values: a flag with a default that
        # the chosen input never uses is refused by name, not silently ignored.
        parsed.given_flags = frozenset(_given(given, reader))
        return parsed

    def _check_words(self, given: list[str]) -> None:
        """The command and the long flags, before argparse reads them: a mistyped flag is
        named even where argparse would first say that a flag it stood for is missing."""
        at = next((i for i, a in enumerate(given) if not a.startswith("-")), len(given))
        if self._commands:  # the command: the first word (the top level's flags take none)
            if at == len(given):  # no command: argparse says one is needed, or --help prints
                _check_flags(given, self)
                return
            if given[at] not in self._commands:
                self.error(unknown_command(given[at], self._commands))
            _check_flags(given[:at], self)
            _check_flags(given[at + 1 :], self._commands[given[at]])
        else:
            _check_flags(given, self)


def unknown_command(word: str, commands: Iterable[str]) -> str:
    guesses = nearest(word, commands)
    hint = _did_you_mean(guesses) if guesses else f"the commands are {', '.join(commands)}"
    return f"unknown command {word}; {hint}"


def _check_flags(words: Sequence[str], reader: argparse.ArgumentParser) -> None:
    """Every word argparse would take for a long flag (`--name` or `--name=value`, no space,
    before a lone `--`) must be one of `reader`'s."""
    known = _flags(reader)
    for word in words:
        if word == "--":
            return
        looks_long = word.startswith("--") and " " not in word
        if looks_long and word.partition("=")[0] not in known:
            reader.error(unknown((word,), reader))


def given_flags(args: argparse.Namespace) -> frozenset[str]:
    """The long flags written on the command line (empty for a namespace made otherwise)."""
    given: frozenset[str] = getattr(args, "given_flags", frozenset())
    return given


def _given(words: Sequence[str], reader: argparse.ArgumentParser) -> Iterable[str]:
    known = _flags(reader)
    for word in words:
        if word == "--":
            return
        name = word.partition("=")[0]
        if word.startswith("--") and name in known:
            yield name


def _flags(reader: argparse.ArgumentParser) -> Mapping[str, object]:
    # argparse keeps no public list of a parser's flags; this mapping is the one it parses by
    return reader._option_string_actions


def unknown(extras: Sequence[str], reader: argparse.ArgumentParser) -> str:
    """The first word `reader` could not take, and the nearest of its flags."""
    flag = next((e for e in extras if e.startswith("-")), None)
    if flag is None:
        return f"unexpected argument {' '.join(extras)}"
    name = flag.partition("=")[0]
    guesses = nearest(name, _flags(reader))
    if guesses:
        return f"unknown flag {name}; {_did_you_mean(guesses)}"
    hint = f"; {reader.prog} --help lists them" if getattr(reader, "help_hint", True) else ""
    return f"unknown flag {name}{hint}"
