package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"talon/internal/store/catalog"
)

// PutNode inserts a node or changes its URL.
func (c *Catalog) PutNode(ctx context.Context, n catalog.Node) error {
	if err := n.Normalize(c.now()); err != nil {
		return fmt.Errorf("putting node: %w", err)
	}
	if _, err := c.exec(ctx, `INSERT INTO nodes (id, url, added_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url`, n.ID, n.URL, ms(n.Added)); err != nil {
		return fmt.Errorf("putting node %q: %w", n.ID, checkErr(err))
	}
	return nil
}

// Nodes lists the nodes by id.
func (c *Catalog) Nodes(ctx context.Context) ([]catalog.Node, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT id, url, added_at FROM nodes ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	defer rows.Close()
	var out []catalog.Node
	for rows.Next() {
		var n catalog.Node
		var added int64
		if err := rows.Scan(&n.ID, &n.URL, &added); err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		n.Added = fromMS(added)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return out, nil
}

// DeleteNode deletes a node no tenant is placed on.
func (c *Catalog) DeleteNode(ctx context.Context, id string) error {
	n, err := c.exec(ctx, `DELETE FROM nodes WHERE id = ?`, id)
	switch code := constraintCode(err); {
	case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY || code == sqlite3.SQLITE_CONSTRAINT_TRIGGER:
		err = catalog.ErrInUse
	case err == nil && n == 0:
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting node %q: %w", id, err)
	}
	return nil
}

// Place puts a tenant on a node. A refused foreign key leaves the
// transaction usable, so it then asks which side is missing.
func (c *Catalog) Place(ctx context.Context, tenantID, nodeID string) error {
	if err := catalog.CheckTenantID(tenantID); err != nil {
		return fmt.Errorf("placing: %w", err)
	}
	if err := catalog.CheckNodeID(nodeID); err != nil {
		return fmt.Errorf("placing: %w", err)
	}
	err := writeTx(ctx, c.db.W, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO placements (tenant_id, node_id) VALUES (?, ?)
			ON CONFLICT (tenant_id) DO UPDATE SET node_id = excluded.node_id`, tenantID, nodeID)
		if constraintCode(err) != sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return checkErr(err)
		}
		var tenant bool
		if qerr := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tenants WHERE id = ?)`, tenantID).Scan(&tenant); qerr != nil {
			return fmt.Errorf("%w (and finding which side is missing: %v)", err, qerr)
		}
		if !tenant {
			return catalog.ErrUnknownTenant
		}
		return catalog.ErrUnknownNode
	})
	if err != nil {
		return fmt.Errorf("placing tenant %q on node %q: %w", tenantID, nodeID, err)
	}
	return nil
}

// PlacementOf is the node id of a tenant.
func (c *Catalog) PlacementOf(ctx context.Context, tenantID string) (string, error) {
	var id string
	err := c.db.R.QueryRowContext(ctx, `SELECT node_id FROM placements WHERE tenant_id = ?`, tenantID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("reading the placement of tenant %q: %w", tenantID, err)
	}
	return id, nil
}

// Placements lists the placements by tenant id.
func (c *Catalog) Placements(ctx context.Context) ([]catalog.Placement, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT tenant_id, node_id FROM placements ORDER BY tenant_id`)
	if err != nil {
		return nil, fmt.Errorf("listing placements: %w", err)
	}
	defer rows.Close()
	var out []catalog.Placement
	for rows.Next() {
		var p catalog.Placement
		if err := rows.Scan(&p.TenantID, &p.NodeID); err != nil {
			return nil, fmt.Errorf("listing placements: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing placements: %w", err)
	}
	return out, nil
}

// PlacedCounts counts the tenants of each node.
func (c *Catalog) PlacedCounts(ctx context.Context) (map[string]int, error) {
	rows, err := c.db.R.QueryContext(ctx, `SELECT node_id, count(*) FROM placements GROUP BY node_id`)
	if err != nil {
		return nil, fmt.Errorf("counting placements: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("counting placements: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting placements: %w", err)
	}
	return out, nil
}
