package store

import (
	"context"
	"database/sql"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"talon/internal/store/catalog"
)

// Install records a new installation with its shipped files. The primary
// key refuses a second one of the same pair and the foreign keys an
// unknown tenant or slug; the refused statement leaves the transaction
// usable, so it then asks which side is missing to say so.
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
		if err != nil {
			return checkErr(err)
		}
		return putFiles(ctx, tx, in)
	})
	if err != nil {
		return fmt.Errorf("installing %q for tenant %q: %w", in.Slug, in.TenantID, err)
	}
	return nil
}

// putFiles replaces the installation's shipped files with in.Files; nil
// leaves them as they are.
func putFiles(ctx context.Context, tx *sql.Tx, in catalog.Installation) error {
	if in.Files == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM installation_files WHERE tenant_id = ? AND slug = ?`, in.TenantID, in.Slug); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO installation_files (tenant_id, slug, path, sha256, exec) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, f := range in.Files {
		if _, err := st.ExecContext(ctx, in.TenantID, in.Slug, f.Path, f.SHA256, f.Exec); err != nil {
			return fmt.Errorf("recording shipped file %q: %w", f.Path, checkErr(err))
		}
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
	err := writeTx(ctx, c.db.W, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE installations SET template_hash = ?, installed_at = COALESCE(?, installed_at),
			updated_at = ?, status = ?, message = ? WHERE tenant_id = ? AND slug = ?`,
			in.TemplateHash, installed, ms(in.UpdatedAt), string(in.Status), in.Message, in.TenantID, in.Slug)
		if err != nil {
			return checkErr(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = catalog.ErrNotFound
			}
			return err
		}
		return putFiles(ctx, tx, in)
	})
	if err != nil {
		return fmt.Errorf("updating installation of %q for tenant %q: %w", in.Slug, in.TenantID, err)
	}
	return nil
}

// Installations lists the installations f selects, by tenant then slug,
// each with its shipped files: one query, so the files are those of the
// installation row read.
func (c *Catalog) Installations(ctx context.Context, f catalog.Filter) ([]catalog.Installation, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT i.tenant_id, i.slug, i.template_hash, i.installed_at, i.updated_at, i.status, i.message,
			f.path, f.sha256, f.exec
		FROM installations i LEFT JOIN installation_files f ON f.tenant_id = i.tenant_id AND f.slug = i.slug
		WHERE (?1 = '' OR i.tenant_id = ?1) AND (?2 = '' OR i.slug = ?2) ORDER BY i.tenant_id, i.slug, f.path`,
		f.TenantID, f.Slug)
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	defer rows.Close()
	var out []catalog.Installation
	for rows.Next() {
		var in catalog.Installation
		var installed, updated int64
		var path, sum sql.NullString
		var exec sql.NullBool
		if err := rows.Scan(&in.TenantID, &in.Slug, &in.TemplateHash, &installed, &updated, &in.Status, &in.Message,
			&path, &sum, &exec); err != nil {
			return nil, fmt.Errorf("listing installations: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].TenantID != in.TenantID || out[n-1].Slug != in.Slug {
			in.InstalledAt, in.UpdatedAt = fromMS(installed), fromMS(updated)
			out = append(out, in)
		}
		if path.Valid {
			last := &out[len(out)-1]
			last.Files = append(last.Files, catalog.ShippedFile{Path: path.String, SHA256: sum.String, Exec: exec.Bool})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	return out, nil
}

// Uninstall deletes an installation and, by cascade, its shipped files.
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
