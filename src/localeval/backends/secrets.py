"""What of a secret may be recorded or printed: nothing. One place says how a URL, a ``KEY=VALUE``
option and a command line are redacted; what is secret is declared where it is defined (the
secret keys of a dict option in its :class:`~localeval.backends.config.BackendConfig` field's
metadata, ``secret_keys``).

* A URL (with a scheme, or without one: ``alice:PW@host/v1``) loses its user information (the
  ``user:password@``; a results store's keeps the user: ``user:***@``), the value of every
  query parameter (``?code=``, ``?subscription-key=``, a signed URL's ``X-Amz-Signature=``:
  which of a gateway's parameters hold a credential cannot be known, so none is kept; the keys
  are) and its fragment.
* A ``KEY=VALUE`` whose key is declared secret (``--model-args token=hf_…``) keeps its key.
* A command line: each argument, and the value of each ``--flag=value``, comma by comma (a URL's
  user information first, whole: a password may hold a comma).
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from typing import Any

MASK = "***"
# Query parameters known to carry a credential (compared lower-case, "-" as "_"): their values
# are scrubbed from server text at any length, and kept out of an identity's query digest
# (Azure API Management's subscription-key, Azure Functions' code).
SECRET_QUERY = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "auth_token", "password",
    "passwd", "pwd", "secret", "client_secret", "sig", "signature", "x_api_key", "sslpassword",
    "subscription_key", "code"})
LONG_VALUE = 8  # any other query value this long is scrubbed from server text too
# user:password@host without a scheme ("alice:PW@host/v1"), or any scheme://…
_SCHEMELESS = re.compile(r"^[^\s/@:]+:[^\s/@]*@[^\s/@]+")
# scheme://USER:PASSWORD@ up to the last @ before the host's end: a password may hold a comma
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)@")
# Each alternative starts only where a word starts and never backtracks (possessive), so a
# 100,000-character word is scanned once, not once per character.
_URL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://[^\s'\"<>]++"
                          r"|(?<![^\s'\"<>=,(])[^\s/@:'\"<>=,(]++:[^\s/@'\"<>]*+@"
                          r"[^\s/@'\"<>,]++[^\s'\"<>,]*+")


def _norm(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def redact_url(url: str, keep_user: bool = False) -> str:
    """``url`` as it may be recorded or printed: no password or token in its user information
    (dropped; ``keep_user``: ``user:***@``) nor in its query."""
    text = str(url)
    schemeless = "://" not in text and _SCHEMELESS.match(text) is not None
    parts = urllib.parse.urlsplit("//" + text if schemeless else text)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        name, _, password = user.partition(":")
        kept = keep_user or password == MASK  # a store's URL, shown once already
        netloc = f"{name}:{MASK}@{host}" if kept and name else host
    query = "&".join(_redact_pair(p) for p in parts.query.split("&")) if parts.query else ""
    fragment = MASK if parts.fragment else ""
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return text  # nothing secret: as given, not as urllib would rebuild it
    out = urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query, fragment=fragment))
    return out.removeprefix("//") if schemeless else out


def _redact_pair(pair: str) -> str:
    """A query's ``key=value`` as ``key=***`` (a value alone, ``?VALUE``, as ``***``)."""
    key, sep, value = pair.partition("=")
    if not sep:
        return MASK if pair else pair
    return f"{key}={MASK}" if value else pair


def url_secrets(url: str) -> list[str]:
    """The secrets ``url`` holds (its password, secret query values), as they are and decoded:
    what must be scrubbed from a message that may repeat them."""
    text = str(url)
    if "://" not in text and _SCHEMELESS.match(text):
        text = "//" + text
    parts = urllib.parse.urlsplit(text)
    found = [parts.password or ""] + [value for key, value in _pairs(parts.query)
                                      if len(value) >= LONG_VALUE or _secret_key(key)]
    return sorted({s for f in found for s in (f, urllib.parse.unquote(f),
                                              urllib.parse.unquote_plus(f)) if s},
                  key=len, reverse=True)


def _pairs(query: str) -> list[tuple[str, str]]:
    return [(key, value) for key, _, value in (p.partition("=") for p in query.split("&") if p)]


def _secret_key(key: str) -> bool:
    return _norm(urllib.parse.unquote_plus(key)) in SECRET_QUERY


def query_digest(urls: list[str]) -> dict[str, str]:
    """``{"query_digest": …}`` for a backend's identity: a hash of its URLs' query parameters
    but the known credentials, whose values the identity's URLs never show, so two URLs that
    differ only there (``?api-version=``, a gateway's ``?deployment=``) never share cached
    answers, while a new key (``?code=``) still reads the cache. ``{}`` when there are none: the
    identity of a URL without a query, or with only a key in it, is what it always was."""
    kept = [[(k, v) for k, v in _pairs(urllib.parse.urlsplit(u).query) if not _secret_key(k)]
            for u in urls]
    if not any(kept):
        return {}
    return {"query_digest": hashlib.sha256(repr(kept).encode()).hexdigest()[:16]}


def redact_options(options: dict[str, Any] | None,
                   secret_keys: frozenset[str]) -> dict[str, Any] | None:
    """A dict option (``--model-args``) with the values of its secret keys masked."""
    if not options:
        return options
    return {k: MASK if _norm(k) in secret_keys else v for k, v in options.items()}


def redact_value(text: str, secret_keys: frozenset[str]) -> str:
    """One command-line value, comma by comma: a ``KEY=VALUE`` with a secret key keeps its key,
    a URL is :func:`redact_url`'d (its user information first, whole: a password with a comma
    in it is no two pieces)."""
    pieces = []
    for piece in _USERINFO.sub(_drop_userinfo, text).split(","):
        key, sep, _ = piece.partition("=")
        if sep and "://" not in key and _norm(key.rpartition(".")[2]) in secret_keys:
            pieces.append(f"{key}={MASK}")  # role options name ROLE.KEY
        elif "://" in piece or "?" in piece or _SCHEMELESS.match(piece):
            pieces.append(redact_url(piece))
        else:
            pieces.append(piece)
    return ",".join(pieces)


def _drop_userinfo(match: re.Match[str]) -> str:
    """``scheme://`` without its ``user:password@`` (a ``user:***@`` shown already stays)."""
    password = match.group(2).partition(":")[2]
    return str(match.group(0) if password == MASK else match.group(1))


def redact_command(argv: list[str], secret_keys: frozenset[str]) -> list[str]:
    """The command line as it may be recorded: every argument, and the value of every
    ``--flag=value``, through :func:`redact_value`."""
    out = []
    for arg in argv:
        flag, sep, value = arg.partition("=")
        if arg.startswith("-") and sep:
            out.append(f"{flag}={redact_value(value, secret_keys)}")
        else:
            out.append(redact_value(arg, secret_keys))
    return out


def redact_text(text: str) -> str:
    """Free text (an error or warning line) with every URL in it :func:`redact_url`'d: the last
    guard before a line is printed."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
