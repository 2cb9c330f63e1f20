"""The wire shapes of tool answers: the only code that spells wire keys and wire order.

Each module renders one family's library records into the JSON object its tools answer.
"""
