package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"talon/internal/store/catalog"
)

// PutLibrary inserts or replaces a library entry.
func (s *Store) PutLibrary(ctx context.Context, e catalog.Entry) error {
	if err := e.Normalize(s.now()); err != nil {
		return fmt.Errorf("putting library entry: %w", err)
	}
	_, err := s.exec(ctx, `INSERT INTO library (slug, name, description, emoji, category, default_model, skills, public, template_version, template_hash, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (slug) DO UPDATE SET name = excluded.name, description = excluded.description, emoji = excluded.emoji,
			category = excluded.category, default_model = excluded.default_model, skills = excluded.skills, public = excluded.public,
			template_version = excluded.template_version, template_hash = excluded.template_hash, updated_at = excluded.updated_at`,
		e.Slug, e.Name, e.Description, e.Emoji, e.Category, e.DefaultModel, e.Skills, e.Public,
		e.TemplateVersion, e.TemplateHash, e.UpdatedAt)
	if err != nil {
		return fmt.Errorf("putting library entry %q: %w", e.Slug, mapErr(err, nil))
	}
	return nil
}

const entryColumns = `slug, name, description, emoji, category, default_model, skills, public, template_version, template_hash, updated_at`

func scanEntry(row pgx.Row) (catalog.Entry, error) { // pgx.CollectableRow is a pgx.Row
	var e catalog.Entry
	err := row.Scan(&e.Slug, &e.Name, &e.Description, &e.Emoji, &e.Category, &e.DefaultModel, &e.Skills, &e.Public,
		&e.TemplateVersion, &e.TemplateHash, &e.UpdatedAt)
	if e.Skills == nil {
		e.Skills = []string{}
	}
	e.UpdatedAt = e.UpdatedAt.UTC()
	return e, err
}

// Library lists the library by slug.
func (s *Store) Library(ctx context.Context) ([]catalog.Entry, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+entryColumns+` FROM library ORDER BY slug`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (catalog.Entry, error) { return scanEntry(r) })
	if err != nil {
		return nil, fmt.Errorf("listing library: %w", err)
	}
	return out, nil
}

// LibraryEntry returns one library entry.
func (s *Store) LibraryEntry(ctx context.Context, slug string) (catalog.Entry, error) {
	e, err := scanEntry(s.pool.QueryRow(ctx, `SELECT `+entryColumns+` FROM library WHERE slug = $1`, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return catalog.Entry{}, fmt.Errorf("reading library entry %q: %w", slug, err)
	}
	return e, nil
}

// DeleteLibrary deletes a library entry that has no installations.
func (s *Store) DeleteLibrary(ctx context.Context, slug string) error {
	n, err := s.exec(ctx, `DELETE FROM library WHERE slug = $1`, slug)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting library entry %q: %w", slug, mapErr(err, map[string]error{"installations_slug_fk": catalog.ErrInUse}))
	}
	return nil
}

// PutTenant inserts a tenant or renames it.
func (s *Store) PutTenant(ctx context.Context, t catalog.Tenant) error {
	if err := t.Normalize(s.now()); err != nil {
		return fmt.Errorf("putting tenant: %w", err)
	}
	if _, err := s.exec(ctx, `INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name`, t.ID, t.Name, t.Created); err != nil {
		return fmt.Errorf("putting tenant %q: %w", t.ID, mapErr(err, nil))
	}
	return nil
}

// Tenants lists the tenants by id.
func (s *Store) Tenants(ctx context.Context) ([]catalog.Tenant, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, name, created_at FROM tenants ORDER BY id`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (catalog.Tenant, error) {
		var t catalog.Tenant
		err := row.Scan(&t.ID, &t.Name, &t.Created)
		t.Created = t.Created.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	return out, nil
}

// DeleteTenant deletes a tenant and, by cascade, its installations.
func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM tenants WHERE id = $1`, id)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting tenant %q: %w", id, err)
	}
	return nil
}
