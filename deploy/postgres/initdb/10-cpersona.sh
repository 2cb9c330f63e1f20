#!/usr/bin/env bash
# Run once by the postgres image on an empty data directory (docker-entrypoint-initdb.d).
# Creates the service's login role (not a superuser: it owns its database and may create the
# service's own roles, cpersona_app and cpersona_ops), the database, and the extensions the
# migrations need, which a non-superuser cannot create (vector is not a trusted extension).
#
# createrole_self_grant: since Postgres 16 a role made by a CREATEROLE (non-superuser) role is
# only administered by its creator, not usable by it, unless this setting says so. The service
# switches to cpersona_app (SET LOCAL ROLE) in every tenant transaction, so the login role needs
# SET on the role its migration creates; without it every tool call fails with
# "permission denied to set role cpersona_app".
set -euo pipefail
: "${CPERSONA_DB_PASSWORD:?set CPERSONA_DB_PASSWORD in deploy/env/postgres.env}"

psql --no-psqlrc -v ON_ERROR_STOP=1 -v password="$CPERSONA_DB_PASSWORD" \
    --username "$POSTGRES_USER" --dbname postgres <<'SQL'
CREATE ROLE cpersona LOGIN CREATEROLE NOSUPERUSER NOCREATEDB PASSWORD :'password';
ALTER ROLE cpersona SET createrole_self_grant = 'set, inherit';
CREATE DATABASE cpersona OWNER cpersona;
\connect cpersona
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;
SQL
