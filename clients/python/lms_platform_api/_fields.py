"""The API's JSON objects in Python's naming: its fields as snake-case attributes, beside the dict of its own names."""

from __future__ import annotations

import json
import re
from typing import Any, Dict

_WORD_AFTER_UNDERSCORE = re.compile(r"_([a-z0-9])")


class Fields(Dict[str, Any]):
    """
    A JSON object of the API: a dict of its fields under the API's names (`task["dueDate"]`, what
    the JSON says), whose fields read as attributes in snake case too (`task.due_date`,
    `job.counts.batches_done`), nested objects included.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        key = api_name(name)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {key!r} (read as {name!r})") from None


def api_name(name: str) -> str:
    """The API's name of a snake-case name: `due_date` is `dueDate`."""
    return _WORD_AFTER_UNDERSCORE.sub(lambda found: found.group(1).upper(), name)


def parse(body: bytes) -> Any:
    """A JSON body, its objects as Fields; None for an empty one."""
    return json.loads(body.decode("utf-8"), object_hook=Fields) if body else None
