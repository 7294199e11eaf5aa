package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"talon/internal/store/catalog"
)

// placeFKs says which side a placement's refused foreign key names.
var placeFKs = map[string]error{
	"placements_tenant_fk": catalog.ErrUnknownTenant,
	"placements_node_fk":   catalog.ErrUnknownNode,
}

// PutNode inserts a node or changes its URL.
func (s *Store) PutNode(ctx context.Context, n catalog.Node) error {
	if err := n.Normalize(s.now()); err != nil {
		return fmt.Errorf("putting node: %w", err)
	}
	if _, err := s.exec(ctx, `INSERT INTO nodes (id, url, added_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url`, n.ID, n.URL, n.Added); err != nil {
		return fmt.Errorf("putting node %q: %w", n.ID, mapErr(err, nil))
	}
	return nil
}

// Nodes lists the nodes by id.
func (s *Store) Nodes(ctx context.Context) ([]catalog.Node, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, url, added_at FROM nodes ORDER BY id`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (catalog.Node, error) {
		var n catalog.Node
		err := row.Scan(&n.ID, &n.URL, &n.Added)
		n.Added = n.Added.UTC()
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return out, nil
}

// DeleteNode deletes a node no tenant is placed on.
func (s *Store) DeleteNode(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM nodes WHERE id = $1`, id)
	if err == nil && n == 0 {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting node %q: %w", id, mapErr(err, map[string]error{"placements_node_fk": catalog.ErrInUse}))
	}
	return nil
}

// Place puts a tenant on a node.
func (s *Store) Place(ctx context.Context, tenantID, nodeID string) error {
	if err := catalog.CheckTenantID(tenantID); err != nil {
		return fmt.Errorf("placing: %w", err)
	}
	if err := catalog.CheckNodeID(nodeID); err != nil {
		return fmt.Errorf("placing: %w", err)
	}
	if _, err := s.exec(ctx, `INSERT INTO placements (tenant_id, node_id) VALUES ($1, $2)
		ON CONFLICT (tenant_id) DO UPDATE SET node_id = excluded.node_id`, tenantID, nodeID); err != nil {
		return fmt.Errorf("placing tenant %q on node %q: %w", tenantID, nodeID, mapErr(err, placeFKs))
	}
	return nil
}

// PlacementOf is the node id of a tenant.
func (s *Store) PlacementOf(ctx context.Context, tenantID string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT node_id FROM placements WHERE tenant_id = $1`, tenantID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("reading the placement of tenant %q: %w", tenantID, err)
	}
	return id, nil
}

// Placements lists the placements by tenant id.
func (s *Store) Placements(ctx context.Context) ([]catalog.Placement, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id, node_id FROM placements ORDER BY tenant_id`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (catalog.Placement, error) {
		var p catalog.Placement
		return p, row.Scan(&p.TenantID, &p.NodeID)
	})
	if err != nil {
		return nil, fmt.Errorf("listing placements: %w", err)
	}
	return out, nil
}

// PlacedCounts counts the tenants of each node.
func (s *Store) PlacedCounts(ctx context.Context) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT node_id, count(*) FROM placements GROUP BY node_id`)
	var id string
	var n int
	out := map[string]int{}
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil }); err != nil {
		return nil, fmt.Errorf("counting placements: %w", err)
	}
	return out, nil
}
