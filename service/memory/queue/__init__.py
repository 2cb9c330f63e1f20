"""The embedding queue: inline embedding on writes, the durable backlog, the worker."""
