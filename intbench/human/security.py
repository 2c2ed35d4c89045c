"""Tokens and origin checks that keep one participant's session in one browser.

A participant's session token lives only in their browser's cookie; the study
stores its SHA-256 digest, so the participant files grant no session.  The
per-session CSRF token that every form carries is derived from the session
token, so it changes whenever the session does and needs no storage.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

TOKEN_BYTES = 32
CSRF_PURPOSE = b"intbench-human-csrf"


def new_token() -> str:
    """An unguessable URL-safe token (256 bits)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> str:
    """What the study stores in place of a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token_for(session_token: str) -> str:
    """The CSRF token of the session ``session_token``."""
    return hmac.new(session_token.encode(), CSRF_PURPOSE, hashlib.sha256).hexdigest()


def same_token(given: str | None, expected: str | None) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time; missing tokens never match."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of ``url``, or ``None`` when it has none (e.g. ``"null"``)."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def cross_origin(origin: str | None, referer: str | None, allowed: set[str]) -> bool:
    """Whether a request's Origin header (else its Referer) names an origin outside ``allowed``.

    A request with neither header is not cross-origin here: the CSRF token alone decides.
    An ``Origin: null`` (sandboxed frames, some redirects) is cross-origin.
    """
    claimed = origin or referer
    if not claimed:
        return False
    return origin_of(claimed) not in allowed
