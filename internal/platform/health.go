package platform

import (
	"context"
	"errors"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"

	"talon/internal/store/catalog"
)

// HealthTimeout bounds one node's health check: a node that does not
// answer within it is down until a later check passes.
const HealthTimeout = 5 * time.Second

// board holds each node's last health check.
type board struct {
	mu sync.RWMutex
	m  map[string]nodeState
}

type nodeState struct {
	checked time.Time
	err     error  // the last check's failure; nil when it passed
	h       Health // the last passing check's report
	seen    bool   // a check ever passed
}

func (b *board) get(id string) (nodeState, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	st, ok := b.m[id]
	return st, ok
}

func (b *board) set(id string, at time.Time, h Health, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]nodeState{}
	}
	st := b.m[id]
	st.checked, st.err = at, err
	if err == nil {
		st.h, st.seen = h, true
	}
	b.m[id] = st
}

// CheckNodes asks every node for its health at once and records the
// answers: a node whose check fails is down, and its tenants are
// unavailable, until a check passes. A single-node platform has nothing
// to check.
func (p *Platform) CheckNodes(ctx context.Context) {
	if !p.multi {
		return
	}
	var wg sync.WaitGroup
	for id, n := range p.nodes {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, HealthTimeout)
			defer cancel()
			h, err := n.Health(cctx)
			if ctx.Err() != nil {
				return // shutting down: no verdict on the node
			}
			before, _ := p.health.get(id)
			p.health.set(id, p.o.Now(), h, err)
			switch {
			case err != nil && before.err == nil:
				p.o.Log.Error("node down", "node", id, "err", err)
			case err == nil && before.err != nil:
				p.o.Log.Info("node up again", "node", id)
			}
		})
	}
	wg.Wait()
}

// WatchNodes checks the nodes now and then every period until ctx ends.
func (p *Platform) WatchNodes(ctx context.Context, every time.Duration) {
	p.CheckNodes(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.CheckNodes(ctx)
		}
	}
}

// NodeStatus is a node as GET /api/nodes shows it.
type NodeStatus struct {
	catalog.Node
	// Serving says the node is one of this platform's (--gateways); a
	// node only the catalog remembers is not, and its tenants are
	// unavailable.
	Serving bool `json:"serving"`
	Up      bool `json:"up"`
	// Reason says why a node is down.
	Reason  string    `json:"reason,omitempty"`
	Checked time.Time `json:"checked,omitzero"`
	// Placed counts the tenants the catalog places on it.
	Placed int `json:"tenants"`
	// Reported is the node's last passing health report.
	Reported *NodeReport `json:"reported,omitempty"`
}

// NodeReport is a node's own account of itself.
type NodeReport struct {
	Tenants      int    `json:"tenants"`
	Warm         int    `json:"warm"`
	OpenFiles    int    `json:"openFiles"`
	MaxOpenFiles int    `json:"maxOpenFiles"`
	Version      string `json:"version,omitempty"`
}

// NodeStatuses lists the catalog's nodes with their health, by id.
func (p *Platform) NodeStatuses(ctx context.Context) ([]NodeStatus, error) {
	if !p.multi {
		return []NodeStatus{}, nil
	}
	nodes, err := p.o.Store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := p.o.Store.PlacedCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]NodeStatus, 0, len(nodes))
	for _, n := range nodes {
		s := NodeStatus{Node: n, Serving: p.nodes[n.ID] != nil, Placed: counts[n.ID]}
		up, reason := p.available(n.ID)
		s.Up, s.Reason = up != nil, reason
		if st, ok := p.health.get(n.ID); ok {
			s.Checked = st.checked
			if st.seen {
				h := st.h
				s.Reported = &NodeReport{Tenants: h.Tenants, Warm: h.Warm, OpenFiles: h.OpenFiles, MaxOpenFiles: h.MaxOpenFiles, Version: h.Version}
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Unreachable takes err, a failure to connect to tenant's node, as a
// failed health check of that node: the node is down, and the platform
// says so for each of its tenants, until a check passes — rather than
// answering a bad gateway until the next check notices. It returns the
// tenant's *UnavailableError then, and other errors (a refused handshake,
// a single-node platform's) as they are.
func (p *Platform) Unreachable(ctx context.Context, tenant string, err error) error {
	var ne net.Error
	if !p.multi || err == nil || !errors.As(err, &ne) && !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	id, perr := p.o.Store.PlacementOf(ctx, tenant)
	if perr != nil || p.nodes[id] == nil {
		return err
	}
	before, _ := p.health.get(id)
	p.health.set(id, p.o.Now(), Health{}, err)
	if before.err == nil {
		p.o.Log.Error("node down: a connection to it failed", "node", id, "tenant", tenant, "err", err)
	}
	return &UnavailableError{Tenant: tenant, Node: id, Reason: err.Error()}
}
