"""Passages: the window-sized parts of a long memory or episode, each with its own vector
(docs/architecture.md, "Passages")."""
