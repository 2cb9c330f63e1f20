"""Word lists that more than one synthetic text generator draws from (data only).

Order matters: generators draw by index from a seeded RNG, so the same seed gives the
same texts only while these lists stay as they are.
"""

from __future__ import annotations

NAMES = (
    "Ada",
    "Bruno",
    "Chen",
    "Dara",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Mateo",
    "Nadia",
    "Oskar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sami",
    "Tomoko",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zofia",
)
CITIES = ("Lisbon", "Osaka", "Montreal", "Nairobi", "Tallinn", "Valencia", "Seoul", "Denver")
