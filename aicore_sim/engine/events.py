"""The one place the replay reaches into SimPy's event internals.

``fire_at`` triggers an existing event ``delay`` cycles from now with a value, without the
second event ``Event.succeed`` plus a timeout would create (the replay's hot paths fire one
event per wait; SimPy offers no public "succeed later"). It sets the two private fields
``Event.succeed`` sets and schedules the event as ``succeed`` does (SimPy 4).
"""

from __future__ import annotations

from typing import Any

import simpy


def fire_at(env: simpy.Environment, ev: simpy.Event, delay: int, value: Any = None) -> None:
    """Trigger ``ev`` with ``value``, ``delay`` (>= 0) cycles from now."""
    ev._ok = True
    ev._value = value
    env.schedule(ev, delay=delay)


__all__ = ["fire_at"]
