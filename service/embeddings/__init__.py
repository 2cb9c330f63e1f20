"""The embedding adapters: the models and providers that turn texts into vectors.

An adapter layer beside ``service/db`` (docs/contributing.md, "The layers are packages"):
the library (``service/memory``) uses it and owns every policy that needs a tenant's
rows; this package talks only to a model (the bundled MiniLM and its query form, E5)
or a remote provider, with what stands in front of every call (the batcher, the
circuit breaker, the query cache). It imports no layer of the service, storage
included, so import-linter holds it to that (pyproject.toml).
"""

from __future__ import annotations
