package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"talon/internal/store/catalog"
)

// ErrSameNode is a move to the node the tenant is on.
var ErrSameNode = errors.New("the tenant is already on that node")

// MoveResult is what a move did.
type MoveResult struct {
	Tenant string `json:"tenant"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Warning says what a move that succeeded left behind: the old copy,
	// when deleting it from the source failed.
	Warning string `json:"warning,omitempty"`
}

// rollbackTimeout bounds each step that undoes a failed move; it runs
// even when the move's own context ended.
const rollbackTimeout = time.Minute

// Move moves tenant to node to: drain it on its node (its new work is
// refused, running runs finish, its handles close), copy its directory
// (Export piped into Import on the target), switch its placement, then
// delete it from the source. Until the placement switches a failure
// resumes the tenant on its source and leaves the target without it;
// after, the move stands and a failure to delete the old copy is a
// warning. Platform operations on the tenant are refused meanwhile.
func (p *Platform) Move(ctx context.Context, tenant, to string) (MoveResult, error) {
	if !p.multi {
		return MoveResult{}, ErrLocalMove
	}
	if err := catalog.CheckNodeID(to); err != nil {
		return MoveResult{}, err
	}
	done, err := p.busy.move(tenant)
	if err != nil {
		return MoveResult{}, err
	}
	defer done()
	fromID, from, err := p.nodeOf(ctx, tenant)
	if err != nil {
		return MoveResult{}, err
	}
	res := MoveResult{Tenant: tenant, From: fromID, To: to}
	if fromID == to {
		return res, fmt.Errorf("moving tenant %q to %s: %w", tenant, to, ErrSameNode)
	}
	target, reason := p.available(to)
	if target == nil {
		if p.nodes[to] == nil {
			return res, fmt.Errorf("moving tenant %q: node %s: %w", tenant, to, catalog.ErrUnknownNode)
		}
		return res, fmt.Errorf("moving tenant %q: node %s cannot take it (%s): %w", tenant, to, reason, ErrNodeUnavailable)
	}
	undo := func(step string, err error) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if rerr := from.Resume(rctx, tenant); rerr != nil {
			p.o.Log.Error("move: resuming the tenant on its source", "tenant", tenant, "node", fromID, "err", rerr)
			return fmt.Errorf("moving tenant %q to %s: %s: %w (and resuming it on %s failed: %v)", tenant, to, step, err, fromID, rerr)
		}
		return fmt.Errorf("moving tenant %q to %s: %s: %w (it stays on %s)", tenant, to, step, err, fromID)
	}
	if err := from.Drain(ctx, tenant); err != nil {
		return res, undo("draining it on "+fromID, err)
	}
	if err := copyTenant(ctx, from, target, tenant); err != nil {
		return res, undo("copying it", err)
	}
	if err := p.o.Store.Place(ctx, tenant, to); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if derr := target.DeleteTenant(rctx, tenant); derr != nil {
			p.o.Log.Error("move: deleting the copy on the target", "tenant", tenant, "node", to, "err", derr)
		}
		return res, undo("switching its placement", err)
	}
	p.o.Log.Info("tenant moved", "tenant", tenant, "from", fromID, "to", to)
	if p.o.Moved != nil {
		p.o.Moved(tenant)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := from.DeleteTenant(dctx, tenant); err != nil {
		p.o.Log.Error("move: deleting the old copy", "tenant", tenant, "node", fromID, "err", err)
		res.Warning = fmt.Sprintf("the tenant now runs on %s, but deleting its old copy on %s failed (%v): delete tenants/%s there by hand, or it is served again if the node is ever asked for it", to, fromID, err, tenant)
	}
	return res, nil
}

// copyTenant streams the tenant's archive from one node into the other.
// An export that fails midway ends the import's stream with its error,
// so the target writes nothing.
func copyTenant(ctx context.Context, from, to Node, tenant string) error {
	pr, pw := io.Pipe()
	exported := make(chan error, 1)
	go func() {
		err := from.Export(ctx, tenant, pw)
		pw.CloseWithError(err) // nil closes it cleanly
		exported <- err
	}()
	ierr := to.Import(ctx, tenant, pr)
	pr.CloseWithError(errors.New("the import ended")) // stop an export still writing
	if eerr := <-exported; eerr != nil {
		return fmt.Errorf("exporting: %w", eerr)
	}
	if ierr != nil {
		return fmt.Errorf("importing: %w", ierr)
	}
	return nil
}
