"""``pt.inspect`` support: a transformer's constructor options read back from the instance.

``pt.inspect.transformer_attributes`` reads the parameters of ``type(t).__init__`` from same-named attributes and
gives up at ``**kwargs``; a reranker that forwards its options to a parent constructor (``SoftAlign``,
``MapVerifier``) lists them with :func:`constructor_attributes` instead, so that
``pt.inspect.transformer_apply_attributes(t, batch_size=8)`` rebuilds it with one option changed.
"""

from __future__ import annotations

import inspect

import pyterrier as pt

_FORWARDED = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def constructor_attributes(transformer, *, fixed: tuple[str, ...] = ()) -> list:
    """The parameters of ``type(transformer).__init__`` with their current values (attribute ``name`` or
    ``_name``), followed by those of each parent ``__init__`` it forwards ``**kwargs`` to (keyword-only there);
    ``fixed`` names parent parameters the class sets itself (e.g. ``head``), which are left out.

    Returns a list of ``pt.inspect.TransformerAttribute``; a parameter without an attribute raises
    ``pt.inspect.InspectError``."""
    result, seen = [], set(fixed)
    forwarded = False
    for cls in type(transformer).__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]  # without self
        for p in params:
            if p.kind in _FORWARDED or p.name in seen:
                continue
            seen.add(p.name)
            kind = inspect.Parameter.KEYWORD_ONLY if forwarded else p.kind
            result.append(pt.inspect.TransformerAttribute(p.name, _value(transformer, p.name), p.default, kind))
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return result
        forwarded = True
    return result


def _value(transformer, name: str):
    for attr in (f"_{name}", name):
        if hasattr(transformer, attr):
            return getattr(transformer, attr)
    raise pt.inspect.InspectError(f"{type(transformer).__name__} keeps no attribute for its option {name!r}")
