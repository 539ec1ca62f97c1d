"""Strict validation of a run_command line before the user's shell sees it.

The rule is *fail closed*: the line is split by a small lexer that knows
exactly the shell syntax it accepts (words, single and double quotes,
backslash escapes, and the operators ``|``, ``||``, ``&&``, ``;``, ``>``,
``>>``, ``<``, ``N>``, ``N>&M``), and anything else is refused with the
reason: background jobs (``&``), expansions (``$``, backticks), subshells and
grouping (``(``, ``{``), newlines, here-documents, comments, variable
assignments, shell keywords and builtins that change the shell. Then every
command word (after each operator, and behind wrappers such as ``nice``)
must pass denied_commands and allowed_commands, every redirect target must
be a plain path inside the roots, and every argument is read as the
command's spec says (``argspecs``): unknown options and options that run
programs, follow symlinks or read lists of names are refused, every file
read or written passes the path policy, every file a glob could match too,
and a folder a program walks on its own may hold nothing hidden. A command
without a spec runs only when trusted (``trusted_commands``), with a
best-effort path check of its arguments.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from nexus_core import PathPolicy, ToolError

from .argspecs import Kind, Use, command_uses
from .config import FilesConfig
from .walk import first_hidden

SEPARATORS = {"|", "||", "&&", ";", "&"}
REDIRECTS = {">", ">>", "<"}
DUPLICATIONS = {">&", "<&"}  # only as N>&M, >&M or >&- (M a file descriptor number)
OPERATOR_CHARS = set(";&|<>")
SUBSHELLS = "subshells, grouping and function definitions ('(' and ')') are not allowed"
BRACES = "grouping and brace expansion ('{' and '}') are not allowed"
REFUSED_CHARS = {
    "(": SUBSHELLS,
    ")": SUBSHELLS,
    "{": BRACES,
    "}": BRACES,
    "$": "variables, command substitution and other expansions ('$') are not allowed; "
    "put literal text in single quotes",
    "`": "command substitution ('`') is not allowed",
}
GLOB_CHARS = set("*?[#^")  # '#', '^' (and '~') are glob operators in zsh with extendedglob
KEYWORDS = {
    "!", "[[", "]]", "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "select", "function", "time", "coproc", "repeat", "foreach", "end", "nocorrect", "noglob",
    "begin", "not", "and", "or", "switch",
}  # fmt: skip
# Builtins that change the shell itself (aliases, options, functions, the folder the checks assume).
SHELL_STATE = {
    "cd", "pushd", "popd", "alias", "unalias", "trap", "set", "setopt", "unsetopt", "shopt", "enable", "hash",
    "export", "declare", "typeset", "readonly", "local", "unset", "source", ".", "eval", "exec", "emulate",
    "autoload", "zmodload", "builtin", "fc", "bind", "functions", "disown", "wait", "bg", "fg", "jobs",
}  # fmt: skip
PLAIN_TARGET = re.compile(r"[\w./@%+,-]+")  # a redirect target the shell cannot expand
MAX_GLOB_MATCHES = 10_000


def refuse(reason: str) -> ToolError:
    return ToolError(f"refused: {reason}")


@dataclass
class Word:
    """One shell word: its value after quote removal, and which characters were unquoted."""

    raw: str = ""
    value: str = ""
    plain: list[bool] = field(default_factory=list)

    def add(self, text: str, *, plain: bool) -> None:
        self.value += text
        self.plain += [plain] * len(text)

    def unquoted(self, chars: set[str]) -> bool:
        return any(p and c in chars for c, p in zip(self.value, self.plain, strict=True))


@dataclass
class Operator:
    op: str
    fd: str | None = None  # the N of N> / N>&M
    dup: str | None = None  # the M of >&M


@dataclass
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[Operator, Word | None]] = field(default_factory=list)


def _check_characters(command: str) -> None:
    for ch in command:
        if ch in "\n\r":
            raise refuse("newlines are not allowed in run_command; join commands with ';' or '&&'")
        category = unicodedata.category(ch)
        if (category.startswith("C") and ch != "\t") or category in ("Zl", "Zp") or (category == "Zs" and ch != " "):
            raise refuse(f"the command contains the control or space character U+{ord(ch):04X}")


def tokenize(command: str, *, fish: bool = False) -> list[Word | Operator]:
    """Split a line into words and operators, refusing any syntax outside the accepted subset."""
    _check_characters(command)
    tokens: list[Word | Operator] = []
    word: Word | None = None
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in " \t":
            _finish(tokens, word)
            word = None
            i += 1
        elif c in OPERATOR_CHARS:
            i = _operator(command, i, word, tokens)
            word = None
        else:
            if word is None:
                word = Word()
            start = i
            i = _word_part(command, i, word, fish=fish)
            word.raw += command[start:i]
    _finish(tokens, word)
    return tokens


def _finish(tokens: list[Word | Operator], word: Word | None) -> None:
    if word is not None:
        _check_word(word)
        tokens.append(word)


def _operator(command: str, i: int, word: Word | None, tokens: list[Word | Operator]) -> int:
    """Append the operator at ``i`` (and the word before it) to ``tokens``; the index after it."""
    n = len(command)
    j = i
    while j < n and command[j] in OPERATOR_CHARS:
        j += 1
    op = command[i:j]
    fd = None
    if op[0] in "<>" and word is not None and word.raw.isdigit():
        if len(word.raw) > 1:  # dash reads 12>x as the argument 12, bash as descriptor 12
            raise refuse(f"'{word.raw}{op}': only single-digit file descriptors are supported")
        fd, word = word.raw, None  # 2>file: the digit names a file descriptor
    _finish(tokens, word)
    if op in DUPLICATIONS:
        k = j
        while k < n and command[k].isdigit():
            k += 1
        if k == j and command[j : j + 1] == "-":
            k = j + 1
        if k == j or (k < n and command[k] not in " \t;&|"):
            raise refuse(f"'{op}' must be followed by a file descriptor number (as in 2>&1)")
        tokens.append(Operator(op, fd, command[j:k]))
        return k
    if op not in SEPARATORS | REDIRECTS:
        raise refuse(
            f"the operator {op!r} is not supported; use only |, ||, &&, ;, &, >, >>, <, 2> and 2>&1, "
            "separated by spaces when in doubt"
        )
    tokens.append(Operator(op, fd))
    return j


def _word_part(command: str, i: int, word: Word, *, fish: bool) -> int:
    """Add the quoted string, escape or character at ``i`` to ``word``; the index after it."""
    c, n = command[i], len(command)
    if c == "'":
        end = command.find("'", i + 1)
        if end < 0:
            raise refuse("unterminated single quote")
        text = command[i + 1 : end]
        if fish and "\\" in text:
            raise refuse("backslashes inside single quotes are read differently by fish; avoid them")
        word.add(text, plain=False)
        return end + 1
    if c == '"':
        return _double_quoted(command, i + 1, word)
    if c == "\\":
        if fish:
            raise refuse("backslash escapes are read differently by fish; quote the text instead")
        if i + 1 >= n:
            raise refuse("the command ends with a backslash")
        word.add(command[i + 1], plain=False)
        return i + 2
    if c in REFUSED_CHARS:
        raise refuse(REFUSED_CHARS[c])
    if fish and c in "^%":
        raise refuse(f"'{c}' is special to fish; quote it")
    word.add(c, plain=True)
    return i + 1


def _double_quoted(command: str, i: int, word: Word) -> int:
    """Add the inside of a double-quoted string starting at ``i`` to ``word``; the index after its quote."""
    n = len(command)
    while True:
        if i >= n:
            raise refuse("unterminated double quote")
        d = command[i]
        if d == '"':
            return i + 1
        if d == "\\" and i + 1 < n and command[i + 1] in '"\\$`':
            word.add(command[i + 1], plain=False)
            i += 2
            continue
        if d in "$`":
            raise refuse(REFUSED_CHARS[d])
        word.add(d, plain=False)
        i += 1


def _check_word(word: Word) -> None:
    """Refuse unquoted characters a shell would expand in ways the checks cannot follow."""
    if word.plain and word.plain[0]:
        if word.value[0] == "#":
            raise refuse("comments ('#') are not allowed in run_command")
        if re.match(r"=+[^=]", word.value):
            raise refuse(f"{word.raw!r}: a word starting with '=' is expanded by zsh; quote it")
    first_equals = word.value.find("=")
    for pos, (ch, plain) in enumerate(zip(word.value, word.plain, strict=True)):
        if ch != "~" or not plain:
            continue
        at_start = pos == 0 or (pos == first_equals + 1 and word.plain[first_equals])
        if not at_start or word.value[pos + 1 : pos + 2] not in ("", "/"):
            raise refuse(f"{word.raw!r}: an unquoted '~' here may be expanded by the shell; quote it")


def parse(tokens: list[Word | Operator]) -> list[SimpleCommand]:
    """Group tokens into simple commands; refuse empty commands and redirects without a target."""
    commands: list[SimpleCommand] = []
    current = SimpleCommand()
    last_separator: str | None = None
    it = iter(tokens)
    for tok in it:
        if isinstance(tok, Word):
            current.words.append(tok)
        elif tok.op in SEPARATORS:
            if tok.op == "&":
                raise refuse(
                    "background jobs ('&') are not allowed: a job left running would outlive run_command and its "
                    "timeout; run the commands one after the other with ';' or '&&'"
                )
            if not current.words and not current.redirects:
                raise refuse(f"empty command before '{tok.op}'")
            commands.append(current)
            current, last_separator = SimpleCommand(), tok.op
        elif tok.op in DUPLICATIONS:
            current.redirects.append((tok, None))
        else:
            target = next(it, None)
            if not isinstance(target, Word):
                raise refuse(f"'{tok.op}' needs a file name after it")
            current.redirects.append((tok, target))
    if current.words or current.redirects:
        commands.append(current)
    elif last_separator not in (None, ";", "&"):
        raise refuse(f"the command ends with '{last_separator}'")
    if not any(c.words for c in commands):
        raise refuse("no command found")
    return commands


def _command_name(word: Word, config: FilesConfig) -> str:
    """The program a command word runs, after the allow and deny lists."""
    if word.unquoted(GLOB_CHARS | {"~"}) or not word.value:
        raise refuse(f"the command name {word.raw!r} is not literal; name the program directly")
    if (eq := word.value.find("=")) > 0 and word.value[:eq].isidentifier() and all(word.plain[: eq + 1]):
        raise refuse(f"variable assignments ({word.raw!r}) are not allowed in run_command")
    if word.value in KEYWORDS and all(word.plain):
        raise refuse(f"the shell keyword '{word.value}' is not supported; run simple commands joined by |, && or ;")
    name = os.path.basename(word.value)
    if name in SHELL_STATE:
        hint = "; use the cwd parameter" if name in ("cd", "pushd", "popd") else ""
        raise refuse(f"'{name}' changes the shell itself and is not allowed in run_command{hint}")
    if name in set(config.denied_commands):
        raise refuse(f"'{name}' is in denied_commands of [plugins.files]")
    allowed = {*config.allowed_commands, *config.trusted_commands}
    if not allowed:
        raise refuse(
            "run_command runs only commands listed in allowed_commands of [plugins.files], which is empty; "
            f"add {name!r} there to allow it"
        )
    if name not in allowed:
        raise refuse(f"'{name}' is not in allowed_commands of [plugins.files] (allowed: {', '.join(sorted(allowed))})")
    if "/" in word.value:
        found = shutil.which(name)
        if found is None or os.path.realpath(found) != os.path.realpath(word.value):
            raise refuse(f"{word.raw!r} is not the '{name}' found on PATH; run it by its name")
    return name


def _superset_component(component: str, mask: list[bool]) -> str:
    """One path component of a shell glob as a Python glob matching at least the same names.

    '*' and '?' mean the same in both; a whole '**' component is recursive (zsh,
    bash globstar); from a bracket expression or a zsh operator ('#', '^') on,
    anything matches, since their exact extent is the shell's to decide.
    """
    if len(component) >= 2 and set(component) == {"*"} and all(mask):
        return "**"  # zsh's *** follows symlinks as well
    out = ""
    for ch, plain in zip(component, mask, strict=True):
        if plain and ch in "*?":
            out += ch
        elif plain and ch in GLOB_CHARS:
            return out + "*"
        else:
            out += glob.escape(ch)
    return out


class ArgumentChecker:
    """The path policy for arguments and redirect targets, relative to the command's folder."""

    def __init__(self, policy: PathPolicy, cwd: Path) -> None:
        self.policy, self.cwd = policy, cwd

    def path(self, text: str, shown: str, *, write: bool) -> None:
        target = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
        try:
            self.linked(self.policy.resolve(self.cwd / target, write=write))
        except ToolError as exc:
            raise refuse(f"{shown!r}: {exc}") from None

    def linked(self, real: Path) -> None:
        """A file with other names (hard links) gets the read tools' refusals: the program opens it by this one."""
        try:
            info = os.stat(real, follow_symlinks=False)
        except OSError:
            return  # not there yet (a file the command creates), or gone: nothing to read through
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            with self.policy.open_read(real):  # PermissionDenied: a linked secret, key material, another's file
                pass

    def looks_like_path(self, text: str) -> bool:
        if "/" in text or text.startswith((".", "~")):
            return True
        try:
            return os.path.lexists(self.cwd / text)
        except (OSError, ValueError):
            return True

    def argument(self, word: Word, *, write: bool) -> None:
        """Best effort: the argument, an option's value (--file=X, -oX) and what a glob could match."""
        value, plain = word.value, word.plain
        if value.startswith("-"):
            cut = value.index("=") + 1 if "=" in value else len(value) if value.startswith("--") else 2
            value, plain = value[cut:], plain[cut:]
            if not ("/" in value or value.startswith((".", "~"))):
                return
        elif (eq := value.find("=")) > 0 and self.looks_like_path(value[eq + 1 :]):
            self.path(value[eq + 1 :], word.raw, write=write)  # VAR=~/x style words, dd's if=PATH
        globby = any(p and c in GLOB_CHARS for c, p in zip(value, plain, strict=True))
        if globby or self.looks_like_path(value):
            self.path(value, word.raw, write=write)
        if globby:
            self.glob(value, plain, word.raw, write=write)

    def use(self, use: Use, *, writes: bool) -> None:
        """One argument as its command's spec reads it: a path read or written, or text (whose globs expand)."""
        if use.kind in (Kind.READ, Kind.WRITE):
            self.path(use.value, use.shown, write=use.kind is Kind.WRITE)
            if use.walk:
                self.walked(use.value, use.shown)
        if any(p and c in GLOB_CHARS for c, p in zip(use.value, use.plain, strict=True)):
            self.glob(use.value, use.plain, use.shown, write=writes, walk=use.walk)

    def walked(self, text: str, shown: str) -> None:
        """A folder the program goes through on its own must hold nothing deny_paths hide."""
        real = self.policy.resolve(self.cwd / (os.path.expanduser(text) if text.startswith("~") else text))
        if real.is_dir() and (hidden := first_hidden(real, self.policy)):
            raise refuse(
                f"{shown!r}: the program goes through every file in it, and '{hidden}' there is hidden by the "
                "path policy; use the grep, glob or list_directory tools (they skip hidden files) or a narrower folder"
            )
        if real.is_dir():
            self.linked_below(real, shown)

    def linked_below(self, folder: Path, shown: str) -> None:
        """``linked`` for every file with other names that a program going through ``folder`` would read."""
        for here, _, files in os.walk(folder):
            for name in files:
                try:
                    self.linked(Path(here, name))
                except ToolError as exc:
                    raise refuse(f"{shown!r}: the program goes through every file in it: {exc}") from None

    def glob(self, value: str, plain: list[bool], shown: str, *, write: bool, walk: bool = False) -> None:
        """Check every file a superset of the shell's glob would match (hidden files and ** included)."""
        if value.startswith("~"):
            home = os.path.expanduser("~")
            value, plain = home + value[1:], [False] * len(home) + plain[1:]
        parts: list[str] = []
        pos = 0
        for component in value.split("/"):
            mask = plain[pos : pos + len(component)]
            pos += len(component) + 1
            parts.append(_superset_component(component, mask))
        pattern = "/".join(parts)
        base = "" if value.startswith("/") else str(self.cwd) + "/"
        matches = glob.iglob(glob.escape(base) + pattern, recursive=True, include_hidden=True)
        for count, match in enumerate(matches):
            if count >= MAX_GLOB_MATCHES:
                raise refuse(f"{shown!r} matches more than {MAX_GLOB_MATCHES} files; narrow the pattern")
            if match[len(base) :].startswith("-"):
                raise refuse(f"{shown!r} would expand to {match[len(base) :]!r}, which the command reads as an option")
            try:
                self.linked(self.policy.resolve(match, write=write))
            except ToolError as exc:
                raise refuse(f"{shown!r} would match a file the path policy refuses: {exc}") from None
            if walk:
                self.walked(match, shown)

    def redirect(self, op: Operator, target: Word) -> None:
        if target.raw == "/dev/null":
            return
        if not PLAIN_TARGET.fullmatch(target.raw):
            raise refuse(
                f"the redirect target {target.raw!r} must be a plain file name (letters, digits, . / _ - + @ % ,), "
                "without quotes, '~', '$', globs or backslashes"
            )
        self.path(target.value, target.raw, write=op.op != "<")


def check_command(command: str, config: FilesConfig, policy: PathPolicy, cwd: Path, *, fish: bool = False) -> list[str]:
    """Validate a run_command line; return the command names it runs, or raise the reason it may not run."""
    commands = parse(tokenize(command, fish=fish))
    checker = ArgumentChecker(policy, cwd)
    names: list[str] = []
    for cmd in commands:
        for op, target in cmd.redirects:
            if target is not None:
                checker.redirect(op, target)
        words = cmd.words
        while words:
            name = _command_name(words[0], config)
            names.append(name)
            words = _check_arguments(name, words[1:], config, checker)  # a wrapper's command is checked in turn
    return names


def _check_arguments(name: str, args: list[Word], config: FilesConfig, checker: ArgumentChecker) -> list[Word]:
    """Check what each argument of ``name`` reads, writes or runs; the words of a wrapped command, if any."""
    found = command_uses(name, args)
    if found is None:
        if name not in config.trusted_commands:
            raise refuse(
                f"run_command has no argument spec for '{name}', so it cannot tell what its options read, write or "
                f"run; to run it anyway, trusting its options, list it in trusted_commands of [plugins.files] "
                "(its arguments then get only the path check)"
            )
        for arg in args:
            checker.argument(arg, write=False)
        return []
    uses, wrapped = found
    writes = any(u.kind is Kind.WRITE for u in uses)
    for use in uses:
        checker.use(use, writes=writes)
    return list(wrapped)
