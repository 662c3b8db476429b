"""argparse value types shared by every subcommand's parser (step: the command line).

Every option and positional value is declared with one of these as its ``type=``, so a value
that breaks its rule is refused while the line is parsed - before a file is read or written -
and reported by argparse as one line naming the option and the rule (exit 2), like every
other bad input:

* counts: :func:`count` (an integer >= 1), :func:`budget` (1 to :data:`MAX_POINTS`) and
  :func:`nonneg_int` (>= 0, where 0 means something: a seed, "no lines", "in this
  process");
* numbers: :func:`finite_pct` (a finite number >= 0);
* paths, names and specs: :func:`nonempty` (an empty string is never a path, a preset or a
  case: it was a shell variable that expanded to nothing);
* ``--window``: :func:`window` (two finite non-negative times, the end after the start);
  ``--cores``: :func:`cores`; ``--max-memory``: :func:`size`; ``--workers``, ``--jobs``:
  :func:`workers`, :func:`jobs` (at most the usable CPUs); ``--scheduler``: :func:`scheduler`.
"""

from __future__ import annotations

import argparse
import math


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def nonneg_int(text: str) -> int:
    """Seeds and counts where 0 means something: an integer >= 0."""
    v = _int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def count(text: str) -> int:
    """A count of things to do (points, jobs, tokens, cases): an integer >= 1."""
    v = _int(text)
    if v < 1:  # reported as "argument --tokens 0: must be >= 1" (the parser adds the value)
        raise argparse.ArgumentTypeError("must be >= 1")
    return v


MAX_POINTS = 100_000
"""Points a sweep (or a search's budget) runs at most unless ``sweep --max-points`` raises
it."""


def budget(text: str) -> int:
    """``search --budget``: points to simulate, 1 to :data:`MAX_POINTS`."""
    v = count(text)
    if v > MAX_POINTS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_POINTS} (points a search runs at "
                                         "most; a sweep spec covers more)")
    return v


def finite_pct(text: str) -> float:
    """A percentage: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def nonempty(text: str) -> str:
    """A path, a name or a spec: not the empty string (nor only blanks)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must not be empty, got {text!r}")
    return text


def tiling_setting(text: str) -> tuple[str, int]:
    """``FIELD=VALUE`` of ``--tiling``: a field name and an integer value."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {text!r}")
    try:
        return name, int(value, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not an integer") from None


_UNITS = (("us", "us"), ("µs", "us"), ("ns", "ns"))


def window_ends(text: str) -> list[tuple[float, str] | None]:
    """The two ends of ``--window A:B`` as (value, unit) with unit ``""`` (cycles), ``"us"`` or
    ``"ns"``; an end left out is None. Each end is a finite number >= 0."""
    if ":" not in text:
        raise ValueError("expected START:END (cycles, or e.g. 0.5us:2us)")
    ends: list[tuple[float, str] | None] = []
    for part in text.split(":", 1):
        part = part.strip().lower()
        if not part:
            ends.append(None)
            continue
        unit = ""
        for suffix, name in _UNITS:
            if part.endswith(suffix):
                part, unit = part[: -len(suffix)], name
                break
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"'{part}' is not a number") from None
        if not math.isfinite(v):
            raise ValueError("times must be finite")
        if v < 0:
            raise ValueError("times must be >= 0")
        ends.append((v, unit))
    a, b = ends
    if a is not None and b is not None and a[1] == b[1] and b[0] <= a[0]:
        raise ValueError("the end must be after the start")
    return ends


def _kept(check, text: str) -> str:
    """``text`` once ``check(text)`` accepts it (its ValueError becomes argparse's error)."""
    try:
        check(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def window(text: str) -> str:
    """``--window A:B``: checked by :func:`window_ends`, kept as text (cycles need the clock)."""
    return _kept(window_ends, text)


MAX_CORES = 1024  # platform.py LIMITS: at most 1024 AIV cores


def core_ranges(text: str) -> list[tuple[int, int]]:
    """``--cores 0,5`` / ``0-3,8`` as (first, last) ranges of core numbers: integers >= 0, each
    range increasing, below :data:`MAX_CORES` (ValueError naming the part otherwise)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        a, sep, b = part.partition("-")
        if not (a.isascii() and a.isdigit() and (not sep or (b.isascii() and b.isdigit()))):
            raise ValueError(f"'{part}' is not a core number or range (e.g. 0,5 or 0-3,8)")
        first, last = int(a), int(b) if sep else int(a)
        if last < first:
            raise ValueError(f"'{part}': a range goes up (first-last)")
        if last >= MAX_CORES:
            raise ValueError(f"'{part}': cores are below {MAX_CORES}")
        out.append((first, last))
    return out


def cores(text: str) -> str:
    """``--cores LIST``: checked by :func:`core_ranges`, kept as text (the platform's core
    count is known later)."""
    return _kept(core_ranges, text)


def size(text: str) -> str:
    """``--max-memory SIZE``: a size like 512M or 4G of at least one byte (checked by
    :func:`aicore_sim.util.resources.parse_size`), kept as text."""
    from aicore_sim.util.resources import parse_size

    return _kept(parse_size, text)


def _within_cpus(v: int) -> int:
    from aicore_sim.util.background import usable_cpus

    cap = usable_cpus()
    if v > cap:
        raise argparse.ArgumentTypeError(f"must be <= {cap}, the CPUs this process may use")
    return v


def workers(text: str) -> int:
    """``--workers N``: local worker processes, 0 (in this process) up to the CPUs this process
    may use - more would only share those CPUs, each worker holding its own records in memory."""
    return _within_cpus(nonneg_int(text))


def jobs(text: str) -> int:
    """``run --jobs N``: processes of one run, 1 up to the CPUs this process may use."""
    return _within_cpus(count(text))


def scheduler(text: str) -> str:
    """``--scheduler``: ``local`` or ``local:N`` (N >= 1 workers of a new Dask LocalCluster),
    or the address of an existing scheduler (``tcp://host:8786``)."""
    nonempty(text)
    if text.startswith("local"):
        rest = text[len("local"):]
        if rest and not (rest.startswith(":") and rest[1:].isdigit() and int(rest[1:]) >= 1):
            raise argparse.ArgumentTypeError("expected local or local:N with N >= 1 workers")
        if rest:
            workers(rest[1:])  # a local cluster's workers share this machine's CPUs too
    return text


__all__ = ["MAX_CORES", "core_ranges", "cores", "count", "finite_pct", "nonempty",
           "nonneg_int", "scheduler", "size", "window", "window_ends"]


# What each type above accepts, in a few words: appended to the ``--help`` of every option
# declared with it (:func:`state_domains`), so the help and the check come from one place.
DOMAINS = {
    count: "an integer >= 1",
    budget: f"an integer from 1 to {MAX_POINTS}",
    nonneg_int: "an integer >= 0",
    finite_pct: "a finite number >= 0",
    nonempty: "not empty",
    tiling_setting: "FIELD=VALUE, a tiling field of the op and an integer",
    window: "START:END, finite times >= 0 in cycles, us or ns, END after START",
    cores: f"core numbers or increasing ranges below {MAX_CORES}, e.g. 0,5 or 0-3,8",
    size: "a size of at least one byte, e.g. 512M or 4G",
    workers: "an integer from 0 to the CPUs this process may use",
    jobs: "an integer from 1 to the CPUs this process may use",
    scheduler: "local, local:N with N from 1 to the CPUs this process may use, or a scheduler "
               "address tcp://host:port",
}


def state_domains(parser: argparse.ArgumentParser) -> None:
    """Append the domain of its type (:data:`DOMAINS`) to the help of every option and
    positional of ``parser`` and its subcommands whose help does not already state it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share one parser
                state_domains(sub)
            continue
        domain = DOMAINS.get(action.type)
        if domain and action.help and action.help is not argparse.SUPPRESS \
                and domain not in action.help:
            action.help = f"{action.help} [{domain}]"
