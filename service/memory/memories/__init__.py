"""Memories: store, edits by id (update, lock, delete) and the newest-first listing."""
