"""Scale-out: recalls/s and stores/s through HAProxy with 1 and 3 ``serve`` replicas
(``python -m bench.scaleout.replicas``) and the cost of PgBouncer in transaction mode
(``pooler``). Page: ``docs/benchmarks/scaleout.md``.
"""

from __future__ import annotations
