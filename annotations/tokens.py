"""Secrets and access: rater invitation tokens, the admin check, when links may be handed out, sign-in limits.

A rater's link carries `?token=<secret>`; the project DB keeps `sha256(secret)`, so a copy of the DB
does not hand out working links. Tokens are 192-bit values, so hashing without a salt is enough
(nothing to brute-force). A token is derived, not drawn: `HMAC(link key, study, rater, nonce)`, where
the nonce is stored in the DB and the link key lives outside it (`$GCPC_LINK_KEY`, else a file
`<project DB>.link-key` readable by its owner only). An admin can therefore be shown a rater's link
again at any time, while the DB alone still holds no working link; issuing a new nonce replaces it.

**Access policy** (the app fails closed):

- `protected` — `$GCPC_ADMIN_TOKEN` is set: every page except the rate page needs it (`?admin=…`,
  which is removed from the URL at once, or the sign-in form); raters open their links.
- `local` — no admin token, and the server listens on a loopback address only (the committed
  `.streamlit/config.toml` binds 127.0.0.1) with no proxy in front: whoever reaches it is on this
  machine, the owner, and is admin.
- `open` — no admin token while the server listens on another interface (or behind a proxy): nobody
  is admin, and rater links are refused, because a rater who deleted `?token=` would have had every
  admin page, which include reading arbitrary server paths (the Runs page).

Rater links to anything but a loopback address are handed out (CLI and app) only when an admin token
is configured: otherwise the rater could drop `?token=` and be the owner. A visitor carrying a rater
token is always a rater only. Failed admin sign-ins are limited per client (`SignInLimiter`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
import tempfile
import threading
import time
import tomllib
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlencode, urlsplit

__all__ = [
    "ADMIN_TOKEN_ENV",
    "LINK_KEY_ENV",
    "PUBLIC_URL_ENV",
    "RATE_PATH",
    "LinkKeyError",
    "LinkRefused",
    "SignInLimiter",
    "access_mode",
    "check_links_allowed",
    "default_base_url",
    "derive_token",
    "hash_token",
    "invite_link",
    "is_admin",
    "is_loopback",
    "link_key",
    "new_token",
    "served_url",
]

ADMIN_TOKEN_ENV = "GCPC_ADMIN_TOKEN"
PUBLIC_URL_ENV = "GCPC_PUBLIC_URL"
"""The app's public address for rater links (e.g. `https://gcpc.example.org`), when the address it
serves is not the one raters reach (a proxy in front)."""
LINK_KEY_ENV = "GCPC_LINK_KEY"
LINK_KEY_MIN_CHARS = 32
"""Shortest link key accepted (the key file holds 64 hex characters, 256 bits)."""
RATE_PATH = "rate"
"""URL path of `pages/rate.py` under `st.navigation`."""
STREAMLIT_CONFIG = Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml"
"""The repository's committed Streamlit config: where `streamlit run app.py` serves by default."""
PROXY_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host")


class LinkRefused(ValueError):
    """Rater links would be handed out while the app lets anyone without a token be admin."""


class LinkKeyError(ValueError):
    """The link key is unusable: empty, too short, or in a file others may read or write."""


def new_token() -> str:
    """A fresh random secret (32 URL-safe characters): nonces, and tokens not tied to a link key."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """What the DB stores and compares: sha256 hex of the token."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def link_key(db_path: str | Path, env: Mapping[str, str] | None = None) -> bytes:
    """The key rater tokens are derived with: `$GCPC_LINK_KEY`, else `<db>.link-key` (created once,
    mode 0600, beside the DB but not in it).

    A key that is empty or short, or a key file that others could read or replace, is refused
    (`LinkKeyError`) rather than used: tokens derived from a guessable key follow from the DB alone.
    """
    configured = (os.environ if env is None else env).get(LINK_KEY_ENV)
    if configured is not None:
        if len(configured.strip()) < LINK_KEY_MIN_CHARS:
            raise LinkKeyError(
                f"${LINK_KEY_ENV} is {_too_short(configured.strip())}: set it to at least {LINK_KEY_MIN_CHARS} "
                f"random characters (e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`), or unset it "
                "to use the key file beside the project DB.")
        return configured.encode()
    path = Path(f"{db_path}.link-key")
    if not path.exists():
        _create_key_file(path)
    return _read_key_file(path)


def _create_key_file(path: Path) -> None:
    """Write a new key to a private temporary file, then link it into place: the key file appears
    complete or not at all, and when two processes race, the first link wins and both read its key."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return  # another caller made it first: its key is the one
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the new name survives a crash too
        finally:
            os.close(folder)
    finally:
        os.unlink(temp)


def _read_key_file(path: Path) -> bytes:
    """The key in `path`, refused unless it is a regular file of this user's that nobody else may read
    or write, holding a key of `LINK_KEY_MIN_CHARS` or more."""
    try:
        with path.open("rb") as f:
            info = os.fstat(f.fileno())
            key = f.read().strip()
    except OSError as exc:
        raise LinkKeyError(f"link key {path} cannot be read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise LinkKeyError(f"link key {path} is not a regular file")
    if info.st_uid != os.geteuid():
        raise LinkKeyError(f"link key {path} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}): "
                           "whoever owns it can change the key. Make it yours (chown) or remove it and issue new "
                           "links.")
    if info.st_mode & 0o077:
        raise LinkKeyError(f"link key {path} has mode {stat.S_IMODE(info.st_mode):04o}: group or others may read "
                           f"or write it, and with it forge rater links. Run `chmod 600 {path}` (or remove it and "
                           "issue new links).")
    if len(key) < LINK_KEY_MIN_CHARS:
        raise LinkKeyError(f"link key {path} is {_too_short(key.decode(errors='replace'))}: remove it to have a new "
                           "key made (links issued before stop working; issue new ones).")
    return key


def _too_short(key: str) -> str:
    return "empty" if not key else f"too short ({len(key)} characters; at least {LINK_KEY_MIN_CHARS})"


def derive_token(key: bytes, study_id: str, rater: str, nonce: str) -> str:
    """A rater's secret (32 URL-safe characters, 192 bits) for one study, rater and nonce."""
    mac = hmac.new(key, "\0".join(("gcpc-rater-link", study_id, rater, nonce)).encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:24]).decode()


def invite_link(token: str, base_url: str | None = None) -> str:
    """The rater's invitation link: `<base>/rate?token=<secret>` (base: `default_base_url()`)."""
    base = (base_url or default_base_url()).rstrip("/")
    return f"{base}/{RATE_PATH}?{urlencode({'token': token})}"


def default_base_url(env: Mapping[str, str] | None = None, config: Path = STREAMLIT_CONFIG) -> str:
    """Where rater links point when no base URL is given: `$GCPC_PUBLIC_URL`, else the address
    `streamlit run app.py` serves under the committed config (address, port, base path)."""
    public = (os.environ if env is None else env).get(PUBLIC_URL_ENV)
    if public:
        return public.rstrip("/")
    try:
        server = tomllib.loads(config.read_text(encoding="utf-8")).get("server", {})
    except (OSError, tomllib.TOMLDecodeError):
        server = {}
    return served_url(server.get("address"), server.get("port", 8501), server.get("baseUrlPath", ""))


def served_url(address: str | None, port: int, base_path: str = "", scheme: str = "http") -> str:
    """The URL of a server bound to `address` (unset or a wildcard: this host's loopback name)."""
    host = address if address and address not in ("0.0.0.0", "::") else "localhost"
    host = f"[{host}]" if ":" in host else host
    path = "/" + base_path.strip("/") if base_path.strip("/") else ""
    return f"{scheme}://{host}:{port}{path}"


def is_loopback(host: str | None) -> bool:
    """True for `localhost` and loopback IP addresses; False for unset (every interface) and others."""
    if not host:
        return False
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def access_mode(configured: str | None, bound_address: str | None, headers: Mapping[str, str] | None = None) -> str:
    """`protected`, `local` or `open` (see the module docstring). A request that came through a
    proxy (forwarding headers) is never local: the proxy makes a loopback-bound app public."""
    if configured:
        return "protected"
    proxied = any(h in {k.lower() for k in (headers or {})} for h in PROXY_HEADERS)
    return "local" if is_loopback(bound_address) and not proxied else "open"


def is_admin(presented: str | None, configured: str | None, *, mode: str) -> bool:
    """Admin: in `protected` mode when the presented token matches, in `local` mode always, in `open`
    mode never."""
    if mode == "local":
        return True
    if mode != "protected" or not configured or not presented:
        return False
    return hmac.compare_digest(hash_token(presented), hash_token(configured))


def check_links_allowed(base_url: str, configured: str | None) -> None:
    """Refuse (`LinkRefused`) to hand out a rater link to a non-loopback address while no admin token is
    configured: the rater could drop `?token=` and be admin."""
    if configured or is_loopback(urlsplit(base_url).hostname):
        return
    raise LinkRefused(
        f"refusing to hand out rater links to {base_url}: {ADMIN_TOKEN_ENV} is not set, so anyone who reaches "
        f"the app there without a token would be admin. Set {ADMIN_TOKEN_ENV} (here and for the app), or use a "
        "loopback address (http://127.0.0.1:…) for local use.")


class SignInLimiter:
    """At most `max_failures` failed admin sign-ins per client within `window_s` seconds; process-wide
    (one per server), thread-safe. A successful sign-in does not reset the count."""

    def __init__(self, max_failures: int = 10, window_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures, self.window_s, self._clock = max_failures, window_s, clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str) -> deque[float]:
        now = self._clock()
        times = self._failures.setdefault(client, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        return times

    def wait_s(self, client: str) -> float:
        """Seconds until `client` may try again (0: now)."""
        with self._lock:
            times = self._recent(client)
            if len(times) < self.max_failures:
                return 0.0
            return max(0.0, times[0] + self.window_s - self._clock())

    def attempt(self, client: str, presented: str | None, configured: str | None, *, mode: str) -> bool | None:
        """Check a presented admin token: True (admin), False (wrong; counted), None (refused unchecked:
        too many recent failures)."""
        if self.wait_s(client) > 0:
            return None
        if is_admin(presented, configured, mode=mode):
            return True
        with self._lock:
            self._recent(client).append(self._clock())
        return False
