package store

// catalogMigrations[i] brings the platform catalog's schema (table
// catalog_migrations) from version i to i+1. Append only. The checks
// mirror package catalog's Normalize, so a row written around Go is held
// to the same rules; internal/store/pg has the same schema for PostgreSQL.
var catalogMigrations = []string{
	// 1: agent library, tenants, installations.
	`
CREATE TABLE library (
	slug             TEXT    NOT NULL PRIMARY KEY
		CHECK (length(slug) BETWEEN 1 AND 64 AND slug NOT GLOB '*[^a-z0-9_-]*' AND substr(slug, 1, 1) NOT GLOB '[_-]'),
	name             TEXT    NOT NULL CHECK (name <> ''),
	description      TEXT    NOT NULL,
	emoji            TEXT    NOT NULL,
	category         TEXT    NOT NULL,
	default_model    TEXT    NOT NULL,
	skills           TEXT    NOT NULL CHECK (json_valid(skills) AND json_type(skills) = 'array'),
	public           INTEGER NOT NULL CHECK (public IN (0, 1)),
	template_version TEXT    NOT NULL,
	template_hash    TEXT    NOT NULL,
	updated_at       INTEGER NOT NULL
) STRICT;

CREATE TABLE tenants (
	id         TEXT    NOT NULL PRIMARY KEY
		CHECK (length(id) BETWEEN 1 AND 128 AND id NOT GLOB '*[^A-Za-z0-9_-]*' AND substr(id, 1, 1) NOT GLOB '[_-]'),
	name       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE installations (
	tenant_id     TEXT    NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	slug          TEXT    NOT NULL REFERENCES library (slug) ON DELETE RESTRICT,
	template_hash TEXT    NOT NULL,
	installed_at  INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	status        TEXT    NOT NULL CHECK (status IN ('ok', 'error')),
	message       TEXT    NOT NULL,
	CHECK ((status = 'ok') = (message = '')),
	PRIMARY KEY (tenant_id, slug)
) STRICT;
-- Sync walks the installations of one slug; deleting a library entry
-- checks them.
CREATE INDEX installations_by_slug ON installations (slug, tenant_id);
`,
	// 2: the files each installation's template shipped, so an update
	// replaces exactly those and tells the employee's edits by hash. An
	// installation from version 1 has none: the platform then proves
	// ownership from the workspace (see platform.Sync).
	`
CREATE TABLE installation_files (
	tenant_id TEXT    NOT NULL,
	slug      TEXT    NOT NULL,
	path      TEXT    NOT NULL CHECK (length(CAST(path AS BLOB)) BETWEEN 1 AND 1024
		AND ('/' || path || '/') NOT GLOB '*//*' AND ('/' || path || '/') NOT GLOB '*/./*'
		AND ('/' || path || '/') NOT GLOB '*/../*'),
	sha256    TEXT    NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
	exec      INTEGER NOT NULL CHECK (exec IN (0, 1)),
	PRIMARY KEY (tenant_id, slug, path),
	FOREIGN KEY (tenant_id, slug) REFERENCES installations (tenant_id, slug) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
`,
	// 3: the gateway nodes tenants are placed on, and where each tenant
	// is (talon serve --gateways). A single-node platform writes neither.
	`
CREATE TABLE nodes (
	id       TEXT    NOT NULL PRIMARY KEY
		CHECK (length(id) BETWEEN 1 AND 64 AND id NOT GLOB '*[^A-Za-z0-9._:-]*' AND substr(id, 1, 1) NOT GLOB '[._:-]'),
	url      TEXT    NOT NULL CHECK (length(url) <= 2048 AND (url GLOB 'http://?*' OR url GLOB 'https://?*')),
	added_at INTEGER NOT NULL
) STRICT;

CREATE TABLE placements (
	tenant_id TEXT NOT NULL PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
	node_id   TEXT NOT NULL REFERENCES nodes (id) ON DELETE RESTRICT
) STRICT;
-- Placement counts tenants per node; deleting a node checks them.
CREATE INDEX placements_by_node ON placements (node_id);
`,
}
