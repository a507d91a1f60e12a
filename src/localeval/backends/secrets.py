"""What of a secret may be recorded or printed: nothing. One place says how a URL, a ``KEY=VALUE``
option and a command line are redacted; what is secret is declared where it is defined (the
secret keys of a dict option in its :class:`~localeval.backends.config.BackendConfig` field's
metadata, ``secret_keys``).

* A URL (with a scheme, or without one: ``alice:PW@host/v1``) loses its user information (the
  ``user:password@``; a results store's keeps the user: ``user:***@``) and the values of its
  secret query parameters (``?api_key=``, ``key``, ``token``, ``password`` …, see
  :data:`SECRET_QUERY`).
* A ``KEY=VALUE`` whose key is declared secret (``--model-args token=hf_…``) keeps its key.
* A command line: each argument, and the value of each ``--flag=value``, comma by comma.
"""

from __future__ import annotations

import re
import urllib.parse

MASK = "***"
# Query parameters that carry a credential (compared lower-case, "-" as "_").
SECRET_QUERY = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "auth_token", "password",
    "passwd", "pwd", "secret", "client_secret", "sig", "signature", "x_api_key", "sslpassword"})
# user:password@host without a scheme ("alice:PW@host/v1"), or any scheme://…
_SCHEMELESS = re.compile(r"^[^\s/@:]+:[^\s/@]*@[^\s/@]+")
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
    if netloc == parts.netloc and query == parts.query:
        return text  # nothing secret: as given, not as urllib would rebuild it
    out = urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))
    return out.removeprefix("//") if schemeless else out


def _redact_pair(pair: str) -> str:
    key, sep, _ = pair.partition("=")
    return f"{key}={MASK}" if sep and _norm(urllib.parse.unquote_plus(key)) in SECRET_QUERY \
        else pair


def url_secrets(url: str) -> list[str]:
    """The secrets ``url`` holds (its password, secret query values), as they are and decoded:
    what must be scrubbed from a message that may repeat them."""
    text = str(url)
    if "://" not in text and _SCHEMELESS.match(text):
        text = "//" + text
    parts = urllib.parse.urlsplit(text)
    found = [parts.password or ""]
    found += [v for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
              if _norm(k) in SECRET_QUERY]
    found += [p.partition("=")[2] for p in parts.query.split("&")
              if _norm(urllib.parse.unquote_plus(p.partition("=")[0])) in SECRET_QUERY]
    return sorted({s for f in found for s in (f, urllib.parse.unquote(f)) if s}, key=len,
                  reverse=True)


def redact_options(options: dict | None, secret_keys: frozenset[str]) -> dict | None:
    """A dict option (``--model-args``) with the values of its secret keys masked."""
    if not options:
        return options
    return {k: MASK if _norm(k) in secret_keys else v for k, v in options.items()}


def redact_value(text: str, secret_keys: frozenset[str]) -> str:
    """One command-line value, comma by comma: a ``KEY=VALUE`` with a secret key keeps its key,
    a URL is :func:`redact_url`'d."""
    pieces = []
    for piece in text.split(","):
        key, sep, _ = piece.partition("=")
        if sep and "://" not in key and _norm(key.rpartition(".")[2]) in secret_keys:
            pieces.append(f"{key}={MASK}")  # role options name ROLE.KEY
        elif "://" in piece or "?" in piece or _SCHEMELESS.match(piece):
            pieces.append(redact_url(piece))
        else:
            pieces.append(piece)
    return ",".join(pieces)


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
