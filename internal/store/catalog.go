package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"talon/internal/sqlitedb"
	"talon/internal/store/catalog"
)

// Catalog is the platform's agent library, tenants and installations in
// one SQLite file, <stateDir>/platform.db by convention: the platform's
// rows span tenants, and tenant stores are one file per tenant with no
// tenant column, so the catalog lives beside them rather than inside one
// of them. Concurrency is DB's: one writer connection, parallel readers.
type Catalog struct {
	// Now stamps zero times in writes. Tests may set it before first use.
	Now func() time.Time

	db *sqlitedb.DB
}

var _ catalog.Store = (*Catalog)(nil)

// OpenCatalog opens the catalog at path, creating it (0600, parent
// directories 0700) if needed, and brings its schema up to date.
func OpenCatalog(path string) (*Catalog, error) {
	sdb, err := sqlitedb.Open(path, sqlitedb.Options{What: "platform catalog", Synchronous: "FULL", Pragmas: []string{"foreign_keys(1)"}})
	if err != nil {
		return nil, err
	}
	c := &Catalog{Now: time.Now, db: sdb}
	ctx := context.Background()
	if err := writeTx(ctx, sdb.W, func(tx *sql.Tx) error {
		return applyMigrations(ctx, tx, "catalog_migrations", catalogMigrations, c.now())
	}); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("opening platform catalog %q: %w", sdb.Path, err)
	}
	return c, nil
}

// Close closes the database.
func (c *Catalog) Close() error { return c.db.Close() }

func (c *Catalog) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// constraintCode is err's SQLite extended result code when it is a
// constraint violation, else 0.
func constraintCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return se.Code()
	}
	return 0
}

// checkErr maps a refused check constraint to catalog.ErrInvalid.
func checkErr(err error) error {
	if constraintCode(err) == sqlite3.SQLITE_CONSTRAINT_CHECK {
		return fmt.Errorf("%w (%v)", catalog.ErrInvalid, err)
	}
	return err
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// exec runs one write statement and returns the rows it changed.
func (c *Catalog) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := writeTx(ctx, c.db.W, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// PutLibrary inserts or replaces a library entry.
func (c *Catalog) PutLibrary(ctx context.Context, e catalog.Entry) error {
	if err := e.Normalize(c.now()); err != nil {
		return fmt.Errorf("putting library entry: %w", err)
	}
	skills, err := json.Marshal(e.Skills)
	if err != nil {
		return fmt.Errorf("putting library entry %q: %w", e.Slug, err)
	}
	_, err = c.exec(ctx, `INSERT INTO library (slug, name, description, emoji, category, default_model, skills, public, template_version, template_hash, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (slug) DO UPDATE SET name = excluded.name, description = excluded.description, emoji = excluded.emoji,
			category = excluded.category, default_model = excluded.default_model, skills = excluded.skills, public = excluded.public,
			template_version = excluded.template_version, template_hash = excluded.template_hash, updated_at = excluded.updated_at`,
		e.Slug, e.Name, e.Description, e.Emoji, e.Category, e.DefaultModel, string(skills), e.Public,
		e.TemplateVersion, e.TemplateHash, ms(e.UpdatedAt))
	if err != nil {
		return fmt.Errorf("putting library entry %q: %w", e.Slug, checkErr(err))
	}
	return nil
}

const entryColumns = `slug, name, description, emoji, category, default_model, skills, public, template_version, template_hash, updated_at`

func scanEntry(row interface{ Scan(...any) error }) (catalog.Entry, error) {
	var e catalog.Entry
	var skills string
	var updated int64
	if err := row.Scan(&e.Slug, &e.Name, &e.Description, &e.Emoji, &e.Category, &e.DefaultModel, &skills, &e.Public,
		&e.TemplateVersion, &e.TemplateHash, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(skills), &e.Skills); err != nil {
		return e, fmt.Errorf("library entry %q: decoding skills: %w", e.Slug, err)
	}
	if e.Skills == nil {
		e.Skills = []string{}
	}
	e.UpdatedAt = fromMS(updated)
	return e, nil
}

// Library lists the library by slug.
func (c *Catalog) Library(ctx context.Context) ([]catalog.Entry, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT `+entryColumns+` FROM library ORDER BY slug`)
	if err != nil {
		return nil, fmt.Errorf("listing library: %w", err)
	}
	defer rows.Close()
	var out []catalog.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("listing library: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing library: %w", err)
	}
	return out, nil
}

// LibraryEntry returns one library entry.
func (c *Catalog) LibraryEntry(ctx context.Context, slug string) (catalog.Entry, error) {
	e, err := scanEntry(c.db.R.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM library WHERE slug = ?`, slug))
	if errors.Is(err, sql.ErrNoRows) {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return catalog.Entry{}, fmt.Errorf("reading library entry %q: %w", slug, err)
	}
	return e, nil
}

// DeleteLibrary deletes a library entry that has no installations.
func (c *Catalog) DeleteLibrary(ctx context.Context, slug string) error {
	n, err := c.exec(ctx, `DELETE FROM library WHERE slug = ?`, slug)
	switch code := constraintCode(err); {
	// SQLite reports ON DELETE RESTRICT with the trigger code.
	case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY || code == sqlite3.SQLITE_CONSTRAINT_TRIGGER:
		err = catalog.ErrInUse
	case err == nil && n == 0:
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting library entry %q: %w", slug, err)
	}
	return nil
}

// PutTenant inserts a tenant or renames it.
func (c *Catalog) PutTenant(ctx context.Context, t catalog.Tenant) error {
	if err := t.Normalize(c.now()); err != nil {
		return fmt.Errorf("putting tenant: %w", err)
	}
	if _, err := c.exec(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name`, t.ID, t.Name, ms(t.Created)); err != nil {
		return fmt.Errorf("putting tenant %q: %w", t.ID, checkErr(err))
	}
	return nil
}

// Tenants lists the tenants by id.
func (c *Catalog) Tenants(ctx context.Context) ([]catalog.Tenant, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT id, name, created_at FROM tenants ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	defer rows.Close()
	var out []catalog.Tenant
	for rows.Next() {
		var t catalog.Tenant
		var created int64
		if err := rows.Scan(&t.ID, &t.Name, &created); err != nil {
			return nil, fmt.Errorf("listing tenants: %w", err)
		}
		t.Created = fromMS(created)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	return out, nil
}

// DeleteTenant deletes a tenant and, by cascade, its installations.
func (c *Catalog) DeleteTenant(ctx context.Context, id string) error {
	n, err := c.exec(ctx, `DELETE FROM tenants WHERE id = ?`, id)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting tenant %q: %w", id, err)
	}
	return nil
}
