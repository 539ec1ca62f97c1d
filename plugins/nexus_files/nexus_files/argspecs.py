"""What the arguments of each command run_command knows mean: files read, files written, or plain text.

A ``Spec`` lists every option a command accepts and what its value is, and what
its operands are. ``Spec.uses`` parses the words the way the command's own
parser will, GNU ``getopt_long`` for coreutils and findutils: abbreviated long
options (``--compress`` is ``--compress-program``), ``--opt=value`` and ``--opt
value``, short options combined with an attached value (``-uo/tmp/x`` is ``-u
-o /tmp/x``), options after operands, ``--``, and ``-NUM`` where the command
takes it. Tools with their own parsers (ripgrep, fd) take exact long names,
and ``find`` has an expression grammar of its own.

It fails closed: an option the spec does not list is refused, as is one that
runs a program (``sort --compress-program``, ``find -exec``, ``split
--filter``, ``rg --pre``), reads names from a file (``--files0-from``, whose
names nothing could check), or follows symlinks out of the roots (``grep -R``,
``find -L``, ``rg -L``, ``ls -L``). A command without a spec runs only when the
user names it in ``trusted_commands``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from nexus_core import ToolError


class Kind(Enum):
    FLAG = "flag"
    TEXT = "text"  # inert: a pattern, a number, a format
    READ = "read"  # a path the command reads (or lists)
    WRITE = "write"  # a path the command creates, changes or removes


class ShellWord(Protocol):
    raw: str
    value: str
    plain: list[bool]


@dataclass(frozen=True)
class Use:
    """One path or text a command line hands to a program, and what the program does with it."""

    kind: Kind
    value: str
    plain: list[bool]  # which characters were unquoted (globs expand there)
    shown: str
    walk: bool = False  # a folder the command goes through (grep -r, rg, find): nothing below may be hidden


@dataclass(frozen=True)
class Option:
    kind: Kind = Kind.FLAG
    optional: bool = False  # GNU optional_argument: a value only as --opt=value (or attached to a short one)
    refused: str | None = None  # why the option is never allowed


def refuse(reason: str) -> ToolError:
    return ToolError(f"refused: {reason}")


RUNS = "runs a program its value names"
LIST_FILE = "reads the names of files to use from a file, which run_command cannot check; name the files instead"
FOLLOWS = "follows symlinks, out of the roots; leave it out (symlinks given as arguments are checked)"


@dataclass
class Spec:
    """A command's options (short: one letter, long: the name after ``--``) and operands.

    ``positions`` gives the kind of the first operands, ``operands`` the rest's,
    ``last`` (when set) the last one's; ``pattern_first``: the first operand is a
    pattern (TEXT) unless an option in ``pattern_options`` gave one (grep -e).
    """

    short: dict[str, Option] = field(default_factory=dict)
    long: dict[str, Option] = field(default_factory=dict)
    operands: Kind = Kind.READ
    positions: tuple[Kind, ...] = ()
    last: Kind | None = None
    pattern_first: bool = False
    pattern_options: frozenset[str] = frozenset()
    numeric: bool = False  # -NUM is an option (head -5, grep -2)
    abbreviations: bool = True  # GNU getopt_long accepts any unique prefix of a long option
    permute: bool = True  # options may follow operands (GNU); False: the first operand ends them (wrappers)
    free: bool = False  # no option parsing at all: every word is an operand (echo)
    walks: bool | frozenset[str] = False  # goes through folders given as operands: always, or with these options

    def uses(self, name: str, words: Sequence[ShellWord]) -> tuple[list[Use], list[Use], list[ShellWord]]:
        """What the options' values are (each option checked), what the operands are, and the operand words."""
        uses: list[Use] = []
        operands: list[ShellWord] = []
        seen: set[str] = set()
        pattern_given = False
        i = 0
        while i < len(words):
            word = words[i]
            value = word.value
            i += 1
            if self.free or value == "-" or not value.startswith("-") or (operands and not self.permute):
                operands.append(word)
                if not self.permute and not self.free:
                    operands += words[i:]
                    break
                continue
            if value == "--":
                operands += words[i:]
                break
            if self.numeric and value[1:].isdigit():
                continue
            if value.startswith("--"):
                key, eq, attached = value[2:].partition("=")
                option_name = self._long_name(name, key)
                option = self.long[option_name]
                shown = f"--{option_name}"
                if option.refused:
                    raise refuse(f"'{name} {shown}' {option.refused}")
                seen.add(option_name)
                pattern_given |= option_name in self.pattern_options
                if option.kind is Kind.FLAG:
                    if eq:
                        raise refuse(f"'{name} {shown}' takes no value")
                    continue
                if eq:
                    start = len(value) - len(attached)
                    uses.append(Use(option.kind, attached, word.plain[start:], word.raw))
                elif not option.optional:
                    if i >= len(words):
                        raise refuse(f"'{name} {shown}' needs a value")
                    uses.append(_use(option.kind, words[i]))
                    i += 1
                continue
            for j in range(1, len(value)):  # -abc: flags; a letter taking a value takes the rest, or the next word
                letter = value[j]
                option = self.short.get(letter)
                if option is None:
                    raise refuse(f"'{name}' has no option -{letter} that run_command knows ({value!r})")
                if option.refused:
                    raise refuse(f"'{name} -{letter}' {option.refused}")
                seen.add(letter)
                pattern_given |= letter in self.pattern_options
                if option.kind is Kind.FLAG:
                    continue
                if j + 1 < len(value):
                    uses.append(Use(option.kind, value[j + 1 :], word.plain[j + 1 :], word.raw))
                elif not option.optional:
                    if i >= len(words):
                        raise refuse(f"'{name} -{letter}' needs a value")
                    uses.append(_use(option.kind, words[i]))
                    i += 1
                break
        kinds = self._operand_kinds(len(operands), skip_pattern=pattern_given)
        walks = self.walks is True or bool(self.walks and seen & self.walks)
        paths = [_use(k, w, walk=walks) for k, w in zip(kinds, operands, strict=True) if k is not Kind.TEXT]
        if walks and not paths:
            paths.append(Use(Kind.READ, ".", [False], ".", walk=True))  # no folder named: the current one
        texts = [_use(k, w) for k, w in zip(kinds, operands, strict=True) if k is Kind.TEXT]
        return uses, texts + paths, operands

    def _long_name(self, command: str, key: str) -> str:
        if key in self.long:
            return key
        if self.abbreviations:
            found = [n for n in self.long if n.startswith(key)] if key else []
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                raise refuse(f"'{command} --{key}' is ambiguous ({', '.join('--' + n for n in sorted(found))})")
        raise refuse(f"'{command}' has no option --{key} that run_command knows")

    def _operand_kinds(self, count: int, *, skip_pattern: bool) -> list[Kind]:
        positions = self.positions
        if self.pattern_first and not skip_pattern:
            positions = (Kind.TEXT, *positions)
        kinds = [positions[i] if i < len(positions) else self.operands for i in range(count)]
        if self.last is not None and count:
            kinds[-1] = self.last
        return kinds


def _use(kind: Kind, word: ShellWord, *, walk: bool = False) -> Use:
    return Use(kind, word.value, word.plain, word.raw, walk=walk)


def gnu(
    short: str = "",
    long: str = "",
    *,
    values: dict[str, Kind] | None = None,
    refused: dict[str, str] | None = None,
    **spec: object,
) -> Spec:
    """A spec in getopt notation: ``short`` like ``"ab:c::"`` (``:`` a value, ``::`` an optional one),
    ``long`` like ``"all size= color? "`` (``=`` a value, ``?`` an optional one). A value is TEXT
    unless ``values`` names its kind; ``refused`` maps option names to the reason. ``--help`` and
    ``--version`` are always there."""
    values, refused = values or {}, refused or {}
    shorts: dict[str, Option] = {}
    i = 0
    while i < len(short):
        letter = short[i]
        colons = len(short[i + 1 :]) - len(short[i + 1 :].lstrip(":"))
        i += 1 + colons
        kind = values.get(letter, Kind.TEXT) if colons else Kind.FLAG
        shorts[letter] = Option(kind, optional=colons == 2, refused=refused.get(letter))
    longs: dict[str, Option] = {"help": Option(), "version": Option()}
    for item in long.split():
        name = item.rstrip("=?")
        kind = values.get(name, Kind.TEXT) if item[-1] in "=?" else Kind.FLAG
        longs[name] = Option(kind, optional=item.endswith("?"), refused=refused.get(name))
    for name, reason in refused.items():  # refused options need not be listed twice
        if len(name) == 1 and name not in shorts:
            shorts[name] = Option(refused=reason)
        elif len(name) > 1 and name not in longs:
            longs[name] = Option(refused=reason)
    return Spec(short=shorts, long=longs, **spec)  # type: ignore[arg-type]


R, W, T = Kind.READ, Kind.WRITE, Kind.TEXT
TEXT_ONLY = Spec(free=True, operands=T)

_GREP = gnu(
    "A:B:C:D:EFGHIPTUVZabcd:e:f:hiLlm:noqRrsuvwxyz",
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp "
    "line-regexp null-data no-messages invert-match max-count= byte-offset line-number no-line-number "
    "line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text directories= "
    "devices= recursive include= exclude= exclude-from= exclude-dir= files-without-match files-with-matches count "
    "initial-tab null before-context= after-context= context= color? colour? binary unix-byte-offsets",
    values={"f": R, "file": R, "exclude-from": R},
    refused={"R": FOLLOWS, "dereference-recursive": FOLLOWS},
    numeric=True,
    pattern_first=True,
    pattern_options=frozenset({"e", "f", "regexp", "file"}),
    walks=frozenset({"r", "R", "d", "recursive", "directories"}),
)

_RG = gnu(
    "A:B:C:d:E:e:f:g:iLm:M:j:pPqr:st:T:uUvwxz0abcFHhlnNoSV.",
    "after-context= before-context= context= binary block-buffered byte-offset case-sensitive color= colors= "
    "column context-separator= count count-matches crlf debug dfa-size-limit= encoding= engine= "
    "field-context-separator= field-match-separator= file= files files-with-matches files-without-match "
    "fixed-strings follow glob= glob-case-insensitive heading hidden iglob= ignore-case ignore-file= "
    "ignore-file-case-insensitive include-zero "
    "invert-match json line-buffered line-number line-regexp max-columns= max-columns-preview max-count= "
    "max-depth= max-filesize= mmap multiline multiline-dotall no-config no-column no-heading no-hidden no-ignore "
    "no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-messages no-ignore-parent "
    "no-ignore-vcs no-line-number no-messages no-mmap no-pcre2-unicode no-require-git no-unicode null null-data "
    "one-file-system only-matching passthru path-separator= pcre2 pretty quiet regex-size-limit= regexp= replace= "
    "search-zip smart-case sort= sortr= stats text threads= trim type= type-add= type-clear= type-list type-not= "
    "unrestricted vimgrep with-filename no-filename word-regexp",
    values={"f": R, "file": R, "ignore-file": R},
    refused={
        "L": FOLLOWS,
        "follow": FOLLOWS,
        "pre": RUNS,
        "pre-glob": RUNS,
        "z": RUNS,
        "search-zip": RUNS,
        "hostname-bin": RUNS,
    },
    abbreviations=False,
    pattern_first=True,
    pattern_options=frozenset({"e", "f", "regexp", "file", "files", "type-list"}),
    walks=True,
)

_SORT = gnu(
    "bcCdfghik:mMno:rRsS:t:T:uVzy:",
    "ignore-leading-blanks check? dictionary-order debug ignore-case general-numeric-sort human-numeric-sort "
    "ignore-nonprinting key= merge month-sort numeric-sort output= random-sort random-source= reverse sort= stable "
    "buffer-size= field-separator= temporary-directory= unique version-sort zero-terminated parallel= batch-size=",
    values={"o": W, "output": W, "T": W, "temporary-directory": W, "random-source": R},
    refused={"compress-program": RUNS, "files0-from": LIST_FILE},
)

_LS = gnu(
    "aAbBcCdDfFgGhHiI:klLmnNoqQrRsStT:uUvw:xXZ1",
    "all almost-all author escape block-size= ignore-backups color? directory dired classify? file-type format= "
    "full-time group-directories-first no-group human-readable si dereference-command-line "
    "dereference-command-line-symlink-to-dir hide= hyperlink? indicator-style= inode ignore= kibibytes literal "
    "numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= "
    "time= time-style= tabsize= width= context zero",
    refused={"L": FOLLOWS, "dereference": FOLLOWS},
    walks=frozenset({"R", "recursive"}),
)

_CHECKSUM = gnu(
    "bctwzl:",
    "binary check tag text zero ignore-missing quiet status strict warn length= base64 raw untagged",
    refused={"c": "reads the files its list names, which run_command cannot check", "check": LIST_FILE},
)

_COMPRESS = "cdfhkLlnNqrS:tvV123456789"
_COMPRESS_LONG = (
    "stdout to-stdout decompress uncompress force keep list license no-name name quiet recursive rsyncable "
    "suffix= synchronous test verbose fast best small"
)

SPECS: dict[str, Spec] = {
    # text in, text out
    "cat": gnu("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"),
    "tac": gnu("bs:r", "before separator= regex"),
    "nl": gnu(
        "b:d:f:h:i:l:n:ps:v:w:",
        "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= join-blank-lines= "
        "number-format= no-renumber number-separator= starting-line-number= number-width=",
    ),
    "head": gnu("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated", numeric=True),
    "tail": gnu(
        "c:fFn:qs:vz",
        "bytes= follow? lines= max-unchanged-stats= pid= quiet retry silent sleep-interval= verbose zero-terminated",
        numeric=True,
    ),
    "wc": gnu(
        "clmwL", "bytes chars lines max-line-length words total= zero-terminated", refused={"files0-from": LIST_FILE}
    ),
    "sort": _SORT,
    "uniq": gnu(
        "cdDf:is:uw:z",
        "count repeated all-repeated? skip-fields= ignore-case skip-chars= unique zero-terminated check-chars= group?",
        positions=(R, W),  # uniq INPUT OUTPUT
        numeric=True,
    ),
    "cut": gnu(
        "b:c:d:f:nsz",
        "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated",
    ),
    "tr": gnu("cCdst", "complement delete squeeze-repeats truncate-set1", operands=T),
    "paste": gnu("d:sz", "delimiters= serial zero-terminated"),
    "join": gnu("a:e:ij:1:2:o:t:v:z", "ignore-case check-order nocheck-order header zero-terminated"),
    "comm": gnu("123z", "check-order nocheck-order output-delimiter= total zero-terminated"),
    "fold": gnu("bsw:", "bytes spaces width=", numeric=True),
    "fmt": gnu(
        "cp:stuw:g:", "crown-margin prefix= split-only tagged-paragraph uniform-spacing width= goal=", numeric=True
    ),
    "expand": gnu("it:", "initial tabs=", numeric=True),
    "unexpand": gnu("at:", "all first-only tabs=", numeric=True),
    "rev": gnu("0", "zero"),
    "base64": gnu("diw:", "decode ignore-garbage wrap="),
    "md5sum": _CHECKSUM,
    "sha1sum": _CHECKSUM,
    "sha224sum": _CHECKSUM,
    "sha256sum": _CHECKSUM,
    "sha384sum": _CHECKSUM,
    "sha512sum": _CHECKSUM,
    "b2sum": _CHECKSUM,
    "cmp": gnu("bi:ln:sv", "print-bytes ignore-initial= verbose bytes= quiet silent"),
    "diff": gnu(
        "0123456789abBcC:dD:eEfF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:y",
        "normal brief report-identical-files context? unified? ed rcs side-by-side left-column "
        "suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab tabsize= "
        "suppress-blank-empty paginate ignore-case ignore-file-name-case no-ignore-file-name-case "
        "ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines "
        "ignore-matching-lines= text strip-trailing-cr new-file unidirectional-new-file exclude= exclude-from= "
        "starting-file= from-file= to-file= minimal speed-large-files horizon-lines= color? palette= width= "
        "old-line-format= new-line-format= unchanged-line-format= line-format= old-group-format= "
        "new-group-format= unchanged-group-format= changed-group-format= no-dereference",
        values={"X": R, "exclude-from": R, "from-file": R, "to-file": R},
        refused={
            "r": "follows symlinks while it recurses; compare files one by one",
            "recursive": "follows symlinks while it recurses; compare files one by one",
        },
    ),
    # files and folders
    "ls": _LS,
    "du": gnu(
        "0abB:cd:hHklLmsStxX:",
        "null all apparent-size block-size= bytes total max-depth= human-readable inodes dereference-args "
        "count-links separate-dirs si summarize threshold= time? time-style= exclude-from= exclude= one-file-system",
        values={"X": R, "exclude-from": R},
        refused={"L": FOLLOWS, "dereference": FOLLOWS, "files0-from": LIST_FILE},
        walks=True,
    ),
    "df": gnu(
        "aB:hHiklPt:Tx:",
        "all block-size= human-readable si inodes local output? portability print-type "
        "type= exclude-type= total sync no-sync",
    ),
    "stat": gnu("c:fLt", "dereference file-system format= printf= terse cached="),
    "realpath": gnu(
        "eLmPqsz",
        "canonicalize-existing canonicalize-missing logical physical quiet "
        "relative-to= relative-base= no-symlinks strip zero",
        values={"relative-to": R, "relative-base": R},
    ),
    "readlink": gnu(
        "efmnqsvz", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero"
    ),
    "basename": gnu("as:z", "multiple suffix= zero", operands=T),
    "dirname": gnu("z", "zero", operands=T),
    "touch": gnu(
        "acd:fhmr:t:", "no-create date= no-dereference reference= time=", values={"r": R, "reference": R}, operands=W
    ),
    "mkdir": gnu("m:pvZ", "mode= parents verbose context?", operands=W),
    "cp": gnu(
        "abdfHilnPpRrsS:t:TuvxZ",
        "archive attributes-only backup? copy-contents debug force interactive link no-clobber no-dereference "
        "preserve? no-preserve= parents recursive reflink? remove-destination sparse= strip-trailing-slashes "
        "symbolic-link suffix= target-directory= no-target-directory update? verbose one-file-system context?",
        values={"t": W, "target-directory": W},
        refused={"L": FOLLOWS, "dereference": FOLLOWS},
        last=W,
        walks=frozenset({"r", "R", "a", "recursive", "archive"}),
    ),
    "mv": gnu(
        "bfinS:t:TuvZ",
        "backup? debug exchange force interactive no-clobber no-copy strip-trailing-slashes suffix= "
        "target-directory= no-target-directory update? verbose context",
        values={"t": W, "target-directory": W},
        operands=W,
        walks=True,
    ),
    "ln": gnu(
        "bdfinrsS:t:TvLP",
        "backup? directory force interactive logical no-dereference physical relative symbolic suffix= "
        "target-directory= no-target-directory verbose",
        values={"t": W, "target-directory": W},
        last=W,
    ),
    "tee": gnu("aip", "append ignore-interrupts output-error?", operands=W),
    "truncate": gnu("cor:s:", "no-create io-blocks reference= size=", values={"r": R, "reference": R}, operands=W),
    "split": gnu(
        "0123456789a:b:C:del:n:t:ux",
        "suffix-length= additional-suffix= bytes= line-bytes= numeric-suffixes? hex-suffixes? elide-empty-files "
        "lines= number= separator= unbuffered verbose",
        refused={"filter": "runs a shell command for each piece"},
        positions=(R, W),  # split INPUT PREFIX
    ),
    # compressors: in place (the file is replaced) unless -c; never a program named by an option
    "gzip": gnu(_COMPRESS, _COMPRESS_LONG, operands=W, walks=frozenset({"r", "recursive"})),
    "gunzip": gnu(_COMPRESS, _COMPRESS_LONG, operands=W, walks=frozenset({"r", "recursive"})),
    "zcat": gnu(_COMPRESS, _COMPRESS_LONG, walks=frozenset({"r", "recursive"})),
    "bzip2": gnu("cdfkLqsStvVz123456789", _COMPRESS_LONG, operands=W),
    "bunzip2": gnu("cdfkLqsStvVz123456789", _COMPRESS_LONG, operands=W),
    "bzcat": gnu("cdfkLqsStvVz123456789", _COMPRESS_LONG),
    "xz": gnu(
        "cdfhHklqQtvVzT:0123456789eF:C:M:", _COMPRESS_LONG + " format= check= memlimit= threads= extreme", operands=W
    ),
    "unxz": gnu("cdfhHklqQtvVzT:F:M:", _COMPRESS_LONG + " format= memlimit= threads=", operands=W),
    "xzcat": gnu("cdfhHklqQtvVzT:F:M:", _COMPRESS_LONG + " format= memlimit= threads="),
    # searching
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "fd": gnu(
        "HIsiguFalLpd:t:e:x:X:E:c:j:S:0hq1",
        "hidden no-ignore no-ignore-vcs no-ignore-parent no-global-ignore-file unrestricted case-sensitive "
        "ignore-case glob regex fixed-strings and= absolute-path list-details full-path max-depth= min-depth= "
        "exact-depth= prune type= extension= exclude= ignore-file= color= threads= size= changed-within= "
        "changed-before= owner= max-results= one-file-system print0 quiet show-errors strip-cwd-prefix? format= "
        "path-separator= search-path= base-directory=",
        values={"ignore-file": R, "search-path": R, "base-directory": R},
        refused={"L": FOLLOWS, "follow": FOLLOWS, "x": RUNS, "exec": RUNS, "X": RUNS, "exec-batch": RUNS},
        abbreviations=False,
        pattern_first=True,
        walks=True,
    ),
    # plain text
    "echo": TEXT_ONLY,
    "printf": gnu("", "", operands=T, permute=False),  # printf -v (bash: set a variable) is no known option
    "true": TEXT_ONLY,
    "false": TEXT_ONLY,
    "pwd": gnu("LP", operands=T),
    "sleep": gnu("", operands=T),
    "seq": gnu("f:s:w", "format= separator= equal-width", operands=T, numeric=True),
    "date": gnu(
        "d:f:I::r:Rs:u",
        "date= file= iso-8601? rfc-email rfc-3339= reference= set= utc universal debug resolution",
        values={"f": R, "file": R, "r": R, "reference": R},
        refused={"s": "sets the clock", "set": "sets the clock"},
        operands=T,
    ),
    "printenv": gnu("0", "null", operands=T),
    "whoami": gnu(operands=T),
    "id": gnu("aGgnrRuzZ", "context group groups name real user zero", operands=T),
    "uname": gnu(
        "asnrvmpio",
        "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system",
        operands=T,
    ),
    "nproc": gnu("", "all ignore=", operands=T),
    "which": gnu("as", operands=T),
}

# Commands that start the command named by their first operand; that command is checked in turn.
WRAPPERS: dict[str, tuple[Spec, int]] = {  # spec, and how many operands come before the command
    "nice": (gnu("n:", "adjustment=", operands=T, permute=False, numeric=True), 0),
    "timeout": (gnu("k:s:v", "kill-after= signal= preserve-status foreground verbose", permute=False), 1),
    "stdbuf": (gnu("i:o:e:", "input= output= error=", permute=False), 0),
    "ionice": (gnu("c:n:t", "class= classdata= ignore", permute=False, abbreviations=False, refused={
        "p": "changes other processes", "P": "changes other processes", "u": "changes other processes",
        "pid": "changes other processes", "pgid": "changes other processes", "uid": "changes other processes"}), 0),
}  # fmt: skip

# Programs refused whatever the lists say, with the reason.
NEVER = {
    "setsid": "starts a process in a session of its own, out of reach of the timeout",
    "nohup": "keeps a process running after run_command ends",
    "disown": "keeps a background job running after run_command ends",
    "less": "is a pager: it waits for a person and runs commands (use cat or read_file)",
    "more": "is a pager: it waits for a person and runs commands (use cat or read_file)",
    "most": "is a pager: it waits for a person and runs commands (use cat or read_file)",
    "pg": "is a pager: it waits for a person and runs commands (use cat or read_file)",
    "nano": "is an editor: it waits for a person and runs commands (use edit_file)",
    "pico": "is an editor: it waits for a person and runs commands (use edit_file)",
    "micro": "is an editor: it waits for a person and runs commands (use edit_file)",
    "joe": "is an editor: it waits for a person and runs commands (use edit_file)",
}


# -- find ----------------------------------------------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FIND_TESTS_0 = _names(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable -nouser -nogroup "
    "-depth -d -mount -xdev -noleaf -ignore_readdir_race -noignore_readdir_race -daystart -a -and -o -or -not "
    "! ( ) ,"
)
_FIND_TESTS_1 = _names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype -size -perm "
    "-user -group -uid -gid -links -inum -mtime -mmin -atime -amin -ctime -cmin -used -maxdepth -mindepth "
    "-printf -regextype -fstype -context"
)
_FIND_PATHS_1 = _names("-newer -anewer -cnewer -samefile")
_FIND_REFUSED = {
    "-exec": RUNS, "-execdir": RUNS, "-ok": RUNS, "-okdir": RUNS,
    "-delete": "deletes what it finds; use delete_file",
    "-fprint": "writes a file", "-fprint0": "writes a file", "-fprintf": "writes a file", "-fls": "writes a file",
    "-follow": FOLLOWS, "-files0-from": LIST_FILE,
}  # fmt: skip


def find_uses(words: Sequence[ShellWord]) -> list[Use]:
    """find's own grammar: -H/-P/-D/-O first, then starting points, then an expression of tests and actions."""
    uses: list[Use] = []
    i = 0
    while i < len(words) and (words[i].value in ("-H", "-P", "-L") or words[i].value.startswith(("-D", "-O"))):
        value = words[i].value
        if value == "-L":
            raise refuse(f"'find -L' {FOLLOWS}")
        if value == "-D" and i + 1 < len(words):
            i += 1
        i += 1
    while i < len(words) and not (words[i].value.startswith("-") or words[i].value in ("!", "(", ")", ",")):
        uses.append(_use(Kind.READ, words[i], walk=True))
        i += 1
    if not uses:
        uses.append(Use(Kind.READ, ".", [False], ".", walk=True))
    while i < len(words):
        test = words[i].value
        i += 1
        if test in _FIND_REFUSED:
            raise refuse(f"'find {test}' {_FIND_REFUSED[test]}")
        if test in _FIND_TESTS_0:
            continue
        newer_xy = test.startswith("-newer") and len(test) == 8  # -newerXY: a file unless Y is t (a date)
        if test in _FIND_TESTS_1 or test in _FIND_PATHS_1 or newer_xy:
            if i >= len(words):
                raise refuse(f"'find {test}' needs a value")
            reads = test in _FIND_PATHS_1 or (newer_xy and test[-1] != "t")
            uses.append(_use(Kind.READ if reads else Kind.TEXT, words[i]))
            i += 1
            continue
        raise refuse(f"'find' has no test or action {test!r} that run_command knows")
    return uses


def command_uses(name: str, words: Sequence[ShellWord]) -> tuple[list[Use], list[ShellWord]] | None:
    """What the arguments of ``name`` do, and (for a wrapper) the words of the command it starts; None: no spec."""
    if name in NEVER:
        raise refuse(f"'{name}' {NEVER[name]}")
    if name == "find":
        return find_uses(words), []
    if name in WRAPPERS:
        spec, before = WRAPPERS[name]
        options, _, operands = spec.uses(name, words)  # the operands are the command, checked on its own
        return options + [_use(Kind.TEXT, w) for w in operands[:before]], list(operands[before:])
    spec = SPECS.get(name)
    if spec is None:
        return None
    options, operand_uses, _ = spec.uses(name, words)
    return options + operand_uses, []
