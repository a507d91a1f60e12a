"""Whether a dataset on the Hugging Face Hub can be read, checked in a blink before ``datasets``
tries: while the Hub cannot be reached and the dataset is not in the local cache, one clear line
(instead of half a minute of the Hub client's retries, a dozen lines of them); while it cannot
be reached and the dataset is cached, ``datasets`` reads the cache without trying the Hub.
Models get the same check in :mod:`localeval.backends.hub`."""

from __future__ import annotations

import os
import socket
import sys
from glob import glob
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import LocalevalError

TRUE = ("1", "true", "yes", "on")
PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def hub_unreachable(offline_flags: tuple[str, ...] = ("HF_HUB_OFFLINE",)) -> bool:
    """True when one of ``offline_flags`` is set or the Hub's host does not answer within 3 s.
    Behind a proxy the loader is left to decide. (Models use this check too: backends.hub.)"""
    if any(os.environ.get(v, "").strip().lower() in TRUE for v in offline_flags):
        return True
    if any(os.environ.get(v) for v in PROXIES):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=3).close()
    except OSError:
        return True
    return False


def dataset_cached(repo_id: str, cache_dir: str | None = None) -> bool:
    """Whether ``datasets``' own cache (``cache_dir``, else its default) holds a prepared copy of
    ``repo_id``: the only copy it reads offline. Its layout, as ``datasets`` looks it up when the
    Hub is out of reach: ``<cache>/<owner>___<name in snake case>/<config>/<version>/<hash>/``."""
    from datasets import config
    from datasets.naming import camelcase_to_snakecase

    owner, _, name = repo_id.rpartition("/")
    folder = "___".join(part for part in (owner, camelcase_to_snakecase(name)) if part)
    root = Path(cache_dir or config.HF_DATASETS_CACHE).expanduser() / folder
    return any(Path(p).is_dir() for p in glob(str(root / "*" / "*" / "*")))


def check_dataset_source(repo_id: str, cache_dir: str | None = None,
                         local_copy: str = "a local copy") -> None:
    """Raise one line when the Hub dataset ``repo_id`` can be read neither from the Hub nor from
    the local cache; when only the cache can serve it, have ``datasets`` read it offline.
    ``local_copy``: what --data takes instead, in words."""
    if Path(repo_id).expanduser().exists():  # a local folder in the Hub's layout
        return
    if not hub_unreachable(("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        return
    _offline()
    if not dataset_cached(repo_id, cache_dir):
        raise LocalevalError(f"cannot reach the Hugging Face Hub and dataset {repo_id!r} is not "
                             "in the local cache; connect (and accept its terms if it is "
                             f"gated), or pass --data with {local_copy}")


def _offline() -> None:
    """No Hub requests, hence no retries: ``datasets`` reads its offline flag when imported,
    so one already imported has it set too."""
    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    config: Any = sys.modules.get("datasets.config")  # datasets ships no types
    if config is not None:
        config.HF_HUB_OFFLINE = config.HF_DATASETS_OFFLINE = True
