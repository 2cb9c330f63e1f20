"""The HTTP application: the Starlette factory, the edge every request passes, probes, metrics."""
