"""The consent page's throttle: API keys tried per client address and per key prefix.

The consent page checks a pasted API key, so it is a place to guess keys. Each post
that tries a key spends one attempt of its client address and one of its key prefix
(the public KEY_ID, when the pasted text has the shape of a key):
``CPERSONA_OAUTH_CONSENT_ATTEMPTS_PER_HOUR`` an hour each, all of them at once at most,
per server process; beyond that the page answers 429 with ``Retry-After``, before the
key is looked up. Per address stops one script trying many keys; per prefix stops many
addresses trying one key's secret. Successful attempts count too, so the throttle says
nothing about which keys are right; a person authorizes a few connectors an hour.
"""

from __future__ import annotations

import math

from service.app.admission import RateBuckets
from service.app.oauth import audit
from service.config import Settings


class KeyAttempts:
    """Token buckets of API keys tried by address and by key prefix, ``per_hour`` each
    (0: unlimited); the web console's sign-in uses them too (docs/console.md)."""

    def __init__(self, per_hour: float) -> None:
        self._addresses = RateBuckets(per_hour / 3600, per_hour)
        self._prefixes = RateBuckets(per_hour / 3600, per_hour)

    def wait(self, address: str, pasted: str) -> int:
        """Seconds to wait before ``address`` may try ``pasted`` (0: go on, one attempt
        of each spent)."""
        wait = self._addresses.take(address)
        prefix = audit.key_id(pasted)
        if not wait and prefix:
            wait = self._prefixes.take(prefix)
        return max(1, math.ceil(wait)) if wait else 0


class ConsentAttempts(KeyAttempts):
    """The consent page's attempts: CPERSONA_OAUTH_CONSENT_ATTEMPTS_PER_HOUR."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.oauth_consent_attempts_per_hour)
