"""Failed credentials, throttled per client address before the database is asked.

Every API key or built-in OAuth token is one database lookup; a flood of bogus ones
(issue 36 measured ~400/s taking another tenant's p50 from 16 to 118 ms) would spend
the pool on strangers. :class:`CredentialGate` sits in front of the lookup:

- **recent misses**: a refused credential is remembered (its hash, for
  ``MISS_SECONDS``, at most ``CPERSONA_AUTH_MISS_CACHE`` of them, oldest forgotten
  first) and answered 401 again without the database;
- **failures per address**: each refused credential spends a token of its client
  address's bucket (``CPERSONA_AUTH_FAILURE_BURST``, refilled at
  ``CPERSONA_AUTH_FAILURE_RATE`` per second); an address with none left gets ``429``
  with ``Retry-After`` for any credential not recently accepted, before any lookup.
  A credential accepted within ``GOOD_SECONDS`` still passes (and is still checked in
  the database, so a revocation holds), so the clients of a busy NAT keep working
  while one of its hosts floods.

External issuers' JWTs are verified without the database; their failures count
toward the address but are not remembered (a key-set fetch that failed now may
succeed in a moment). A request without a credential is no failure (the OAuth
discovery starts with one). The address is the one uvicorn reports: behind a proxy,
the ``X-Forwarded-For`` of a proxy in ``FORWARDED_ALLOW_IPS``.
"""

from __future__ import annotations

import collections
import hashlib
import time
from typing import Final

from starlette.types import Scope

from service.app.admission import RateBuckets, Refusal
from service.app.oauth.bearer import INVALID, Denial
from service.config import Settings
from service.memory import tenants
from service.models import Caller

MISS_SECONDS: Final = 60.0
"""How long a refused credential is answered from memory."""
GOOD_SECONDS: Final = 600.0
"""How long an accepted credential passes a throttled address's check."""


class RecentSet:
    """Fingerprints remembered for ``ttl`` seconds, at most ``size`` (oldest out first)."""

    def __init__(self, size: int, ttl: float) -> None:
        self._size, self._ttl = size, ttl
        self._until: collections.OrderedDict[bytes, float] = collections.OrderedDict()

    def add(self, fingerprint: bytes) -> None:
        if self._size <= 0:
            return
        self._until[fingerprint] = time.monotonic() + self._ttl
        self._until.move_to_end(fingerprint)
        while len(self._until) > self._size:
            self._until.popitem(last=False)

    def __contains__(self, fingerprint: bytes) -> bool:
        until = self._until.get(fingerprint)
        if until is None:
            return False
        if until < time.monotonic():
            del self._until[fingerprint]
            return False
        return True

    def __len__(self) -> int:
        return len(self._until)


def fingerprint(credential: str) -> bytes:
    """A short hash of a credential: the process never keeps the secret itself."""
    return hashlib.blake2b(credential.encode("utf-8", "replace"), digest_size=16).digest()


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


class CredentialGate:
    """The per-address failure throttle and the cache of recent misses of one process."""

    def __init__(self, settings: Settings) -> None:
        self._failures = RateBuckets(settings.auth_failure_rate, settings.auth_failure_burst)
        self._misses = RecentSet(settings.auth_miss_cache, MISS_SECONDS)
        self._good = RecentSet(settings.auth_miss_cache, GOOD_SECONDS)
        self._remember_jwt_misses = settings.oauth_mode != "external"
        self.lookups_saved = 0

    def before(self, address: str, credential: str) -> Denial | None:
        """The answer for ``credential`` from ``address`` without a lookup (401 for a
        recent miss), None to look it up; Refusal (429) for an address over its limit."""
        key = fingerprint(credential)
        if key in self._misses:
            self.lookups_saved += 1
            self._failed(address)
            return INVALID
        wait = self._failures.due(address)
        if wait and key not in self._good:
            self.lookups_saved += 1
            raise _too_many(wait)
        return None

    def after(self, address: str, credential: str, resolved: Caller | Denial) -> None:
        """Record the outcome of a lookup: a refused credential is a failure of its address."""
        key = fingerprint(credential)
        if isinstance(resolved, Caller):
            self._good.add(key)
            return
        if not resolved.invalid_token:
            return  # a valid token of an unknown tenant (403): not a guess
        if credential.startswith(tenants.KEY_SCHEME + "_") or self._remember_jwt_misses:
            self._misses.add(key)
        self._failures.take(address)

    def _failed(self, address: str) -> None:
        wait = self._failures.take(address)
        if wait:
            raise _too_many(wait)


def _too_many(wait: float) -> Refusal:
    message = (
        "too many failed credentials from this address (CPERSONA_AUTH_FAILURE_RATE); "
        "check the API key or token and retry later"
    )
    return Refusal(429, "auth_failures", message, wait)
