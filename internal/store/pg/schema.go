package pg

// migrations[i] brings the schema from version i to i+1. Append only. It
// is package store's catalogMigrations for PostgreSQL; the constraint
// names are part of the contract, since errors are mapped by them.
var migrations = []string{
	// 1: agent library, tenants, installations.
	`
CREATE TABLE library (
	slug             text        NOT NULL PRIMARY KEY CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
	name             text        NOT NULL CHECK (name <> ''),
	description      text        NOT NULL,
	emoji            text        NOT NULL,
	category         text        NOT NULL,
	default_model    text        NOT NULL,
	skills           text[]      NOT NULL CHECK (array_position(skills, '') IS NULL AND array_position(skills, NULL) IS NULL),
	public           boolean     NOT NULL,
	template_version text        NOT NULL,
	template_hash    text        NOT NULL,
	updated_at       timestamptz NOT NULL
);

CREATE TABLE tenants (
	id         text        NOT NULL PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$'),
	name       text        NOT NULL,
	created_at timestamptz NOT NULL
);

CREATE TABLE installations (
	tenant_id     text        NOT NULL,
	slug          text        NOT NULL,
	template_hash text        NOT NULL,
	installed_at  timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	status        text        NOT NULL CHECK (status IN ('ok', 'error')),
	message       text        NOT NULL,
	CHECK ((status = 'ok') = (message = '')),
	CONSTRAINT installations_pkey PRIMARY KEY (tenant_id, slug),
	-- Declared tenant first: PostgreSQL checks them in that order, so an
	-- installation naming neither reports the tenant.
	CONSTRAINT installations_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (id) ON DELETE CASCADE,
	CONSTRAINT installations_slug_fk FOREIGN KEY (slug) REFERENCES library (slug) ON DELETE RESTRICT
);
CREATE INDEX installations_by_slug ON installations (slug, tenant_id);
`,
	// 2: the files each installation's template shipped (see package
	// store's migration 2).
	`
CREATE TABLE installation_files (
	tenant_id text    NOT NULL,
	slug      text    NOT NULL,
	path      text    NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 1024 AND ('/' || path || '/') !~ '/(\.\.?)?/'),
	sha256    text    NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	exec      boolean NOT NULL,
	CONSTRAINT installation_files_pkey PRIMARY KEY (tenant_id, slug, path),
	CONSTRAINT installation_files_installation_fk FOREIGN KEY (tenant_id, slug)
		REFERENCES installations (tenant_id, slug) ON DELETE CASCADE
);
`,
	// 3: gateway nodes and placements (see package store's migration 3).
	`
CREATE TABLE nodes (
	id       text        NOT NULL PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$'),
	url      text        NOT NULL CHECK (octet_length(url) <= 2048 AND url ~ '^https?://.'),
	added_at timestamptz NOT NULL
);

CREATE TABLE placements (
	tenant_id text NOT NULL,
	node_id   text NOT NULL,
	CONSTRAINT placements_pkey PRIMARY KEY (tenant_id),
	CONSTRAINT placements_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (id) ON DELETE CASCADE,
	CONSTRAINT placements_node_fk FOREIGN KEY (node_id) REFERENCES nodes (id) ON DELETE RESTRICT
);
CREATE INDEX placements_by_node ON placements (node_id);
`,
}
