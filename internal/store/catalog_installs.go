package store

import (
	"context"
	"database/sql"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"talon/internal/store/catalog"
)

// Install records a new installation. The primary key refuses a second
// one of the same pair and the foreign keys an unknown tenant or slug; the
// refused statement leaves the transaction usable, so it then asks which
// side is missing to say so.
func (c *Catalog) Install(ctx context.Context, in catalog.Installation) error {
	if err := in.Normalize(c.now(), false); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	err := writeTx(ctx, c.db.W, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO installations (tenant_id, slug, template_hash, installed_at, updated_at, status, message)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			in.TenantID, in.Slug, in.TemplateHash, ms(in.InstalledAt), ms(in.UpdatedAt), string(in.Status), in.Message)
		switch constraintCode(err) {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return catalog.ErrExists
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			var tenant bool
			if qerr := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tenants WHERE id = ?)`, in.TenantID).Scan(&tenant); qerr != nil {
				return fmt.Errorf("%w (and finding which side is missing: %v)", err, qerr)
			}
			if !tenant {
				return catalog.ErrUnknownTenant
			}
			return catalog.ErrUnknownEntry
		}
		return checkErr(err)
	})
	if err != nil {
		return fmt.Errorf("installing %q for tenant %q: %w", in.Slug, in.TenantID, err)
	}
	return nil
}

// UpdateInstallation rewrites an installation after an update or sync.
func (c *Catalog) UpdateInstallation(ctx context.Context, in catalog.Installation) error {
	if err := in.Normalize(c.now(), true); err != nil {
		return fmt.Errorf("updating installation: %w", err)
	}
	var installed any // NULL keeps the stored time
	if !in.InstalledAt.IsZero() {
		installed = ms(in.InstalledAt)
	}
	n, err := c.exec(ctx, `UPDATE installations SET template_hash = ?, installed_at = COALESCE(?, installed_at),
		updated_at = ?, status = ?, message = ? WHERE tenant_id = ? AND slug = ?`,
		in.TemplateHash, installed, ms(in.UpdatedAt), string(in.Status), in.Message, in.TenantID, in.Slug)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("updating installation of %q for tenant %q: %w", in.Slug, in.TenantID, checkErr(err))
	}
	return nil
}

// Installations lists the installations f selects, by tenant then slug.
func (c *Catalog) Installations(ctx context.Context, f catalog.Filter) ([]catalog.Installation, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT tenant_id, slug, template_hash, installed_at, updated_at, status, message
		FROM installations WHERE (?1 = '' OR tenant_id = ?1) AND (?2 = '' OR slug = ?2) ORDER BY tenant_id, slug`,
		f.TenantID, f.Slug)
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	defer rows.Close()
	var out []catalog.Installation
	for rows.Next() {
		var in catalog.Installation
		var installed, updated int64
		if err := rows.Scan(&in.TenantID, &in.Slug, &in.TemplateHash, &installed, &updated, &in.Status, &in.Message); err != nil {
			return nil, fmt.Errorf("listing installations: %w", err)
		}
		in.InstalledAt, in.UpdatedAt = fromMS(installed), fromMS(updated)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	return out, nil
}

// Uninstall deletes an installation.
func (c *Catalog) Uninstall(ctx context.Context, tenantID, slug string) error {
	n, err := c.exec(ctx, `DELETE FROM installations WHERE tenant_id = ? AND slug = ?`, tenantID, slug)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("uninstalling %q from tenant %q: %w", slug, tenantID, err)
	}
	return nil
}
