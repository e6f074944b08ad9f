"""Secrets: rater invitation tokens (only their hash is stored) and the admin check.

A rater's link carries `?token=<secret>`; the project DB keeps `sha256(secret)`, so a copy of the DB
does not hand out working links. Tokens are 192-bit `secrets.token_urlsafe` values, so hashing without
a salt is enough (nothing to brute-force).

Admin rights (the study-admin page and every non-rater page): when `GCPC_ADMIN_TOKEN` is set, the
visitor must present it (`?admin=<token>` or the sign-in box); when it is unset, the app is taken to
run locally for its owner, who is admin. A visitor carrying a rater token is always a rater only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlencode

__all__ = ["ADMIN_TOKEN_ENV", "DEFAULT_BASE_URL", "RATE_PATH", "hash_token", "invite_link", "is_admin", "new_token"]

ADMIN_TOKEN_ENV = "GCPC_ADMIN_TOKEN"
DEFAULT_BASE_URL = "http://localhost:8501"
RATE_PATH = "rate"
"""URL path of `pages/rate.py` under `st.navigation`."""


def new_token() -> str:
    """A fresh rater secret (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """What the DB stores and compares: sha256 hex of the token."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def invite_link(token: str, base_url: str | None = None) -> str:
    """The rater's invitation link: `<base>/rate?token=<secret>`."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    return f"{base}/{RATE_PATH}?{urlencode({'token': token})}"


def is_admin(presented: str | None, configured: str | None) -> bool:
    """Admin when no admin token is configured (local use), else when the presented one matches."""
    if not configured:
        return True
    if not presented:
        return False
    return hmac.compare_digest(hash_token(presented), hash_token(configured))
