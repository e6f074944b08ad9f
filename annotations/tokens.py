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

A request is `local` only when its `Host` (and `Origin`, when sent) names a loopback address: a page of
another site whose name resolves to 127.0.0.1 (DNS rebinding) is not the owner. The committed config also
sets `server.allowedHosts` to the loopback names, so Streamlit refuses such a WebSocket outright.

Rater links to anything but a loopback address are handed out (CLI and app) only when an admin token
is configured: otherwise the rater could drop `?token=` and be the owner. A visitor carrying a rater
token is always a rater only. Failed admin sign-ins are limited per browser session and throttled per
client address (`SignInLimiter`); the address is the TCP peer unless `$GCPC_TRUSTED_PROXIES` names the
proxy in front (`client_address`).
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode, urlsplit

__all__ = [
    "ADMIN_TOKEN_ENV",
    "LINK_KEY_ENV",
    "PUBLIC_URL_ENV",
    "RATE_PATH",
    "LinkKeyError",
    "TRUSTED_PROXIES_ENV",
    "AddressSet",
    "LinkRefused",
    "SignIn",
    "SignInLimiter",
    "access_mode",
    "check_links_allowed",
    "client_address",
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
TRUSTED_PROXIES_ENV = "GCPC_TRUSTED_PROXIES"
"""Addresses or networks of the reverse proxies in front of the app (`127.0.0.1,10.0.0.0/8`): only their
`X-Forwarded-For` names the client a failed sign-in is counted against."""
UVICORN_TRUSTED_ENV = "FORWARDED_ALLOW_IPS"
"""uvicorn's own list (default `127.0.0.1,::1`): from these peers it replaces the client address Streamlit
reports with an `X-Forwarded-For` entry, whatever the entry says."""
UVICORN_TRUSTED_DEFAULT = "127.0.0.1,::1"
LOOPBACK_CLIENT = "loopback"
"""The client key of every loopback peer (127.0.0.0/8, ::1): one machine, whichever address it used."""


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


def _url_host(url: str) -> str | None:
    """The host name of a URL (`//host:port` for a Host header); None when there is none or it is malformed
    (user info included: no browser sends that)."""
    try:
        parts = urlsplit(url)
        return parts.hostname if parts.username is None and parts.password is None else None
    except ValueError:
        return None


def access_mode(configured: str | None, bound_address: str | None, headers: Mapping[str, str] | None = None) -> str:
    """`protected`, `local` or `open` (see the module docstring). A request that came through a
    proxy (forwarding headers) is never local: the proxy makes a loopback-bound app public. Nor is one
    whose `Host` or `Origin` names anything but a loopback address: a browser sends the name it resolved,
    and a foreign name resolving to 127.0.0.1 is a DNS-rebinding page of another site. (A request without
    either header, as in AppTest, is judged by the bound address alone.)"""
    if configured:
        return "protected"
    named = {k.lower(): v for k, v in (headers or {}).items()}
    proxied = any(h in named for h in PROXY_HEADERS)
    foreign = any(not is_loopback(_url_host(f"//{named['host']}" if h == "host" else named[h]))
                  for h in ("host", "origin") if h in named)
    return "local" if is_loopback(bound_address) and not proxied and not foreign else "open"


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


@dataclass(frozen=True)
class AddressSet:
    """Addresses and networks, as `$GCPC_TRUSTED_PROXIES` and uvicorn's `$FORWARDED_ALLOW_IPS` list them
    (comma-separated; `*` is everything; a loopback address stands for every loopback address)."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    everything: bool = False

    @classmethod
    def parse(cls, value: str, *, source: str) -> AddressSet:
        """Parse `value`; a malformed entry is a ValueError naming `source` (the variable) and the entry."""
        items = [item.strip() for item in value.split(",") if item.strip()]
        if "*" in items:
            return cls(everything=True)
        try:
            networks = tuple(ipaddress.ip_network(item, strict=False) for item in items)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc} (expected addresses or networks separated by commas, "
                             "e.g. 127.0.0.1,10.0.0.0/8)") from None
        if any(n.is_loopback for n in networks):  # one loopback address stands for all: the same machine
            networks += (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
        return cls(networks)

    def __contains__(self, host: object) -> bool:
        if self.everything:
            return True
        try:
            address = ipaddress.ip_address(str(host))
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def covers(self, other: AddressSet) -> bool:
        """Whether every address of `other` is in this set."""
        if self.everything:
            return True
        return not other.everything and all(
            any(n.version == m.version and n.subnet_of(m) for m in self.networks) for n in other.networks)


def _forwarded_hosts(values: Iterable[str]) -> list[str]:
    """The hosts of `X-Forwarded-For` header values, left (first hop) to right (last), ports dropped."""
    hosts = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if item.startswith("[") and "]" in item:
                item = item[1:item.index("]")]
            elif item.count(":") == 1:
                item = item.split(":")[0]
            if item:
                hosts.append(item)
    return hosts


def _client_key(host: str) -> str:
    """One key per machine: loopback addresses are all `loopback`; IPs in their canonical spelling."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    return LOOPBACK_CLIENT if address.is_loopback else str(address)


def client_address(reported: str | None, forwarded_for: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The client a failed sign-in is counted against: what no client can forge.

    Without `$GCPC_TRUSTED_PROXIES` that is the TCP peer. Streamlit reports the peer as uvicorn leaves it,
    and uvicorn replaces the peer with an `X-Forwarded-For` entry when the peer is one it trusts
    (`$FORWARDED_ALLOW_IPS`, default loopback): so any loopback process could name itself anew on every
    guess. A reported address (`reported`, None for loopback as `st.context.ip_address` gives it) that is
    among the forwarded entries is therefore taken for "a peer uvicorn trusts" (`loopback` by default),
    never for the entry; one that is not among them is the peer itself.

    With `$GCPC_TRUSTED_PROXIES` (the proxies in front), the client is the right-most hop of
    `X-Forwarded-For` + peer that is not a trusted proxy: the entry the first trusted proxy wrote, which the
    client cannot choose."""
    env = os.environ if env is None else env
    trusted = AddressSet.parse(env.get(TRUSTED_PROXIES_ENV, ""), source=TRUSTED_PROXIES_ENV)
    uvicorn = AddressSet.parse(env.get(UVICORN_TRUSTED_ENV, UVICORN_TRUSTED_DEFAULT), source=UVICORN_TRUSTED_ENV)
    hops = _forwarded_hosts(forwarded_for)
    reported = reported or "127.0.0.1"
    rewritable = uvicorn.everything or bool(uvicorn.networks)
    if rewritable and _client_key(reported) in {_client_key(h) for h in hops}:  # uvicorn may have put it there
        loopback_only = bool(uvicorn.networks) and all(n.is_loopback for n in uvicorn.networks)
        peer = LOOPBACK_CLIENT if loopback_only else f"a peer in {UVICORN_TRUSTED_ENV}"
        peer_trusted = trusted.covers(uvicorn)
    else:
        peer, peer_trusted = _client_key(reported), reported in trusted
    if not peer_trusted:
        return peer
    for hop in reversed(hops):
        if hop not in trusted:
            return _client_key(hop)
    return _client_key(hops[0]) if hops else peer


class SignIn(NamedTuple):
    """One sign-in attempt: `admin` True (signed in), False (wrong; counted) or None (refused unchecked:
    this session failed too often); `throttled`: the client's address had failed too often, so the check
    waited its turn (`waited_s` seconds)."""

    admin: bool | None
    throttled: bool = False
    waited_s: float = 0.0


class SignInLimiter:
    """Failed admin sign-ins: a budget per browser session, and a throttle per client address that delays
    checks instead of refusing them. Process-wide (one per server), thread-safe.

    Why both: many people can share one address (every SSH tunnel, socat relay or same-host proxy arrives
    as loopback, the real admin included), so refusing an address after N failures would let anyone lock
    the admin out with N wrong guesses; and a session is free to open, so a per-session budget alone does
    not bound guessing. Hence:

    - a session with `max_failures` failures within `window_s` is refused (unchecked) until they age out;
      that costs nobody else anything;
    - an address with `max_failures` failures within `window_s` gets one check per `spacing_s` seconds,
      first come first served, across all its sessions: it checks at most `max_failures + window_s /
      spacing_s` tokens per window (70 per 5 minutes by default), however many sessions it opens, and the
      real admin behind it is delayed, never refused (by at most `spacing_s` for each check queued ahead;
      a session runs one script, so queues at most one check, at a time).

    A successful sign-in resets nothing."""

    def __init__(self, max_failures: int = 10, window_s: float = 300.0, spacing_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.max_failures, self.window_s, self.spacing_s = max_failures, window_s, spacing_s
        self._clock, self._sleep = clock, sleep
        self._sessions: dict[str, deque[float]] = {}
        self._addresses: dict[str, deque[float]] = {}
        self._next_slot: dict[str, float] = {}
        self._lock = threading.Lock()

    def _recent(self, failures: dict[str, deque[float]], key: str) -> deque[float]:
        """`key`'s failures within the window (older ones dropped; a key without any is forgotten)."""
        times = failures.get(key, deque())
        while times and times[0] <= self._clock() - self.window_s:
            times.popleft()
        if not times:
            failures.pop(key, None)
        return times

    def wait_s(self, session: str) -> float:
        """Seconds until `session` may try again (0: now)."""
        with self._lock:
            times = self._recent(self._sessions, session)
            if len(times) < self.max_failures:
                return 0.0
            return max(0.0, times[0] + self.window_s - self._clock())

    def attempt(self, session: str, address: str, presented: str | None, configured: str | None, *,
                mode: str) -> SignIn:
        """Check a presented admin token for `session` from client `address` (see the class docstring)."""
        if self.wait_s(session) > 0:
            return SignIn(None)
        with self._lock:
            failures = self._recent(self._addresses, address)
            throttled = len(failures) >= self.max_failures
            if throttled:  # one check per `spacing_s`, the first one after the latest failure
                now = self._clock()
                slot = max(now, self._next_slot.get(address, failures[-1] + self.spacing_s))
                self._next_slot[address] = slot + self.spacing_s
                waited = slot - now
            else:
                self._next_slot.pop(address, None)
                waited = 0.0
        if waited > 0:
            self._sleep(waited)
        if is_admin(presented, configured, mode=mode):
            return SignIn(True, throttled, waited)
        with self._lock:
            now = self._clock()
            for failures, key in ((self._sessions, session), (self._addresses, address)):
                failures.setdefault(key, deque()).append(now)
            for failures in (self._sessions, self._addresses):  # forget who has not failed within the window
                for key in [k for k, times in failures.items() if times[-1] <= now - self.window_s]:
                    del failures[key]
            self._next_slot = {k: t for k, t in self._next_slot.items() if k in self._addresses}
        return SignIn(False, throttled, waited)
