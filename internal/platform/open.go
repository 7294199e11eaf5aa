package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/internal/store/pg"
)

// StoreFile is the SQLite catalog in the state dir.
const StoreFile = "platform.db"

// OpenStore opens the catalog database: "" or "sqlite:" is SQLite at
// <stateDir>/platform.db, "sqlite:PATH" SQLite at PATH, and a postgres://
// or postgresql:// URL or a libpq "key=value" string is PostgreSQL.
func OpenStore(ctx context.Context, stateDir, database string) (catalog.Store, error) {
	d := strings.TrimSpace(database)
	switch {
	case d == "" || d == "sqlite:":
		return store.OpenCatalog(filepath.Join(stateDir, StoreFile))
	case strings.HasPrefix(d, "sqlite:"):
		return store.OpenCatalog(strings.TrimPrefix(d, "sqlite:"))
	case strings.HasPrefix(d, "postgres://"), strings.HasPrefix(d, "postgresql://"), strings.Contains(d, "="):
		return pg.Open(ctx, d)
	}
	return nil, fmt.Errorf("platform database %q: want sqlite:[PATH], a postgres:// URL or a libpq key=value string", database)
}
