#!/usr/bin/env bash
# Run once by the postgres image on an empty data directory (docker-entrypoint-initdb.d).
# Creates the service's login role (not a superuser: it may create the service's own
# cpersona_app role and owns its database), the database, and the extensions the migrations
# need, which a non-superuser cannot create (vector is not a trusted extension).
set -euo pipefail
: "${CPERSONA_DB_PASSWORD:?set CPERSONA_DB_PASSWORD in deploy/env/postgres.env}"

psql --no-psqlrc -v ON_ERROR_STOP=1 -v password="$CPERSONA_DB_PASSWORD" \
    --username "$POSTGRES_USER" --dbname postgres <<'SQL'
CREATE ROLE cpersona LOGIN CREATEROLE NOSUPERUSER NOCREATEDB PASSWORD :'password';
CREATE DATABASE cpersona OWNER cpersona;
\connect cpersona
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;
SQL
