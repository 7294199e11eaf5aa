package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"talon/internal/atomicfile"
	"talon/internal/config"
	"talon/internal/platform/install"
)

// exportErrorTrailer carries an export that failed after its answer
// began: the client reports it, and the archive, cut short, has no end
// entry, so an import of what arrived fails too.
const exportErrorTrailer = "Talon-Export-Error"

func (h *Handler) drain(w http.ResponseWriter, r *http.Request, id string) error {
	g, err := h.gateway()
	if err != nil {
		return err
	}
	if _, err := h.tenantDir(id); err != nil {
		return err
	}
	if err := g.DrainTenant(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) resume(w http.ResponseWriter, _ *http.Request, id string) error {
	g, err := h.gateway()
	if err != nil {
		return err
	}
	if _, err := h.tenantDir(id); err != nil {
		return err
	}
	if err := g.ResumeTenant(id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// export streams the drained tenant's directory as an archive.
func (h *Handler) export(w http.ResponseWriter, r *http.Request, id string) error {
	g, err := h.gateway()
	if err != nil {
		return err
	}
	dir, err := h.tenantDir(id)
	if err != nil {
		return err
	}
	if !g.Draining(id) {
		return fmt.Errorf("exporting tenant %q: %w: drain it first", id, ErrNotDrained)
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Trailer", exportErrorTrailer)
	w.WriteHeader(http.StatusOK)
	skipped, err := packDir(w, dir)
	if len(skipped) > 0 {
		h.o.Log.Warn("node api: export left out what is not a file or directory", "tenant", id, "entries", skipped)
	}
	if err != nil {
		h.o.Log.Error("node api: export", "tenant", id, "err", err)
		w.Header().Set(exportErrorTrailer, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return nil
}

// importPrefix starts the hidden directory an import unpacks into.
const importPrefix = ".import-"

// importTenant unpacks an archive beside tenants/ and renames it into
// place whole: a tenant never exists half-imported, an existing one is
// never overwritten, and a refused archive leaves nothing behind.
func (h *Handler) importTenant(w http.ResponseWriter, r *http.Request, id string) error {
	g, err := h.gateway()
	if err != nil {
		return err
	}
	parent := filepath.Join(h.o.StateDir, install.TenantsDir)
	dst := filepath.Join(parent, id)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("importing tenant %q: %w", id, install.ErrExists)
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	tmp, err := os.MkdirTemp(parent, importPrefix+id+"-")
	if err != nil {
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	defer os.RemoveAll(tmp) // gone already once renamed
	lim := limits{entries: h.o.MaxImportEntries, fileBytes: h.o.MaxImportBytes, totalBytes: h.o.MaxImportBytes, depth: maxDepth}
	if err := unpack(r.Body, tmp, lim, true); err != nil {
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	// A marker is the source's: the copy is not drained. Export leaves it
	// out; an archive from elsewhere may not.
	if err := os.RemoveAll(filepath.Join(tmp, drainMarker)); err != nil {
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	if _, ok := config.Find(tmp); !ok {
		return fmt.Errorf("%w: importing tenant %q: the archive has no config at its top; it is not a tenant's", ErrInvalid, id)
	}
	if err := syncDirs(tmp); err != nil {
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("importing tenant %q: %w", id, install.ErrExists)
	}
	// A rename onto a non-empty directory fails: of an import and a
	// create racing for the id, one wins.
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Lstat(dst); serr == nil {
			return fmt.Errorf("importing tenant %q: %w", id, install.ErrExists)
		}
		return fmt.Errorf("importing tenant %q: %w", id, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("importing tenant %q: syncing %s: %w", id, parent, err)
	}
	// The tenant is in place; its channels and cron jobs start now rather
	// than at its first request. A failure to start them is the tenant's
	// config's, which its next load reports again.
	if err := g.ResumeTenant(id); err != nil {
		h.o.Log.Error("node api: starting an imported tenant", "tenant", id, "err", err)
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// Drain makes the node refuse the tenant's new work (503 and Retry-After,
// WebSocket UNAVAILABLE: "the tenant is moving"), waits for its runs
// (those left at the gateway's bound are aborted), and closes its handles,
// so that its directory is consistent to Export. It stays drained until
// Resume or DeleteTenant.
func (c *Client) Drain(ctx context.Context, tenant string) error {
	return c.call(ctx, http.MethodPost, tenantPath(tenant, "drain"), nil, nil)
}

// Resume undoes Drain (a move that failed): the tenant serves again.
func (c *Client) Resume(ctx context.Context, tenant string) error {
	return c.call(ctx, http.MethodPost, tenantPath(tenant, "resume"), nil, nil)
}

// Export writes a tar archive of the drained tenant's directory to w.
// An export that fails part way returns an error, and what w received is
// refused by Import (the archive's end entry is missing).
func (c *Client) Export(ctx context.Context, tenant string, w io.Writer) error {
	p := tenantPath(tenant, "archive")
	resp, err := c.send(ctx, http.MethodGet, p, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("node %s: exporting tenant %q: %w", c.base, tenant, ctx.Err())
		}
		return fmt.Errorf("node %s: exporting tenant %q: %w: %w", c.base, tenant, ErrUnreachable, err)
	}
	if msg := resp.Trailer.Get(exportErrorTrailer); msg != "" {
		return fmt.Errorf("node %s: exporting tenant %q: %s", c.base, tenant, msg)
	}
	return nil
}

// Import creates the tenant on the node from an archive Export wrote. It
// refuses a tenant the node has (install.ErrExists) and an archive that is
// not a complete tenant archive or holds anything but files and
// directories within the node's bounds (ErrInvalid), writing nothing.
func (c *Client) Import(ctx context.Context, tenant string, r io.Reader) error {
	resp, err := c.send(ctx, http.MethodPut, tenantPath(tenant, "archive"), io.NopCloser(r), "application/x-tar")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
