"""The checks of numeric options, one place each: real numbers (weights, temperatures, thresholds) and whole numbers
(counts, steps, lengths)."""

from __future__ import annotations

import math
import numbers


def check_number(value, name: str, *, at_least: float | None = None, above: float | None = None) -> float:
    """``value`` as a float if it is a finite real number (not a bool, not a string), at least ``at_least`` and
    above ``above`` where given; else a ValueError that names it ``name``.

    >>> check_number(0.5, "beta", at_least=0), check_number(-2, "tau")
    (0.5, -2.0)
    >>> check_number(float("nan"), "beta", at_least=0)
    Traceback (most recent call last):
    ValueError: beta must be a finite number >= 0, not nan
    >>> check_number(0, "tau", above=0)
    Traceback (most recent call last):
    ValueError: tau must be a finite number > 0, not 0
    """
    real = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if real and (at_least is None or value >= at_least) and (above is None or value > above):
        return float(value)
    bound = f" >= {at_least:g}" if at_least is not None else f" > {above:g}" if above is not None else ""
    raise ValueError(f"{name} must be a finite number{bound}, not {value!r}")


def check_whole(value, name: str, *, at_least: int = 1) -> int:
    """``value`` as an int if it is a whole number (an int, a numpy integer, or a float such as 128.0; not a bool,
    not a string) of at least ``at_least``; else a ValueError that names it ``name``.

    >>> check_whole(300.0, "depth"), check_whole(0, "seed", at_least=0)
    (300, 0)
    >>> check_whole("300", "depth")
    Traceback (most recent call last):
    ValueError: depth must be a whole number, got '300'
    >>> check_whole(0, "steps")
    Traceback (most recent call last):
    ValueError: steps must be at least 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        whole = False
    else:  # an int of any size; a float only where it is finite and whole
        whole = isinstance(value, numbers.Integral) or (math.isfinite(value) and float(value).is_integer())
    if not whole:  # 2.7 became 2 without a word; "300" read as text
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < at_least:
        raise ValueError(f"{name} must be at least {at_least}, got {int(value)}")
    return int(value)
