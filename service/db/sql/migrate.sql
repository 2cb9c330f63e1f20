-- current_revision --
-- The Alembic revision the database is at (NULL before the first migration).
SELECT (SELECT version_num FROM alembic_version LIMIT 1)
