"""Wire shapes: the only code that turns the library's typed records into the JSON objects
tools answer, with their keys, key order and omissions
(docs/architecture.md, "The read family's seam")."""
