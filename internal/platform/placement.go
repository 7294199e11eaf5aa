package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"talon/internal/store/catalog"
)

// Errors of placement, mapped by the API.
var (
	// ErrNodeUnavailable is a tenant whose node is down or gone; the
	// error is an *UnavailableError.
	ErrNodeUnavailable = errors.New("node unavailable")
	// ErrNoNode is a new tenant with no healthy node to go on.
	ErrNoNode = errors.New("no healthy node to place the tenant on")
	// ErrMoving is a tenant being moved between nodes.
	ErrMoving = errors.New("the tenant is moving to another node; try again when the move is done")
	// ErrBusy refuses to move a tenant while operations on it run.
	ErrBusy = errors.New("the tenant has platform operations in progress; try the move again")
	// ErrUnplaced is a tenant of a multi-node catalog with no node.
	ErrUnplaced = errors.New("the tenant is not placed on any node")
)

// UnavailableError says which node a tenant is on and why it cannot be
// reached. Error names the tenant and node; Reason (the health check's
// error) is for the operator's views.
type UnavailableError struct {
	Tenant, Node, Reason string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("tenant %q is unavailable: its node %s is down", e.Tenant, e.Node)
}

func (e *UnavailableError) Is(target error) bool { return target == ErrNodeUnavailable }

// register records the nodes of a multi-node platform in the catalog; a
// node id already known keeps its Added time and takes its new URL.
func (p *Platform) register(ctx context.Context) error {
	if !p.multi {
		return nil
	}
	if len(p.nodes) == 0 {
		return errors.New("platform: no gateway nodes")
	}
	for id, n := range p.nodes {
		if err := p.o.Store.PutNode(ctx, catalog.Node{ID: id, URL: n.URL()}); err != nil {
			return fmt.Errorf("registering node %s: %w", id, err)
		}
	}
	return nil
}

// nodeOf is the node serving tenant, or why it cannot be used now.
func (p *Platform) nodeOf(ctx context.Context, tenant string) (string, Node, error) {
	if !p.multi {
		return LocalID, p.nodes[LocalID], nil
	}
	id, err := p.o.Store.PlacementOf(ctx, tenant)
	if errors.Is(err, catalog.ErrNotFound) {
		return "", nil, fmt.Errorf("tenant %q: %w", tenant, ErrUnplaced)
	}
	if err != nil {
		return "", nil, err
	}
	n, reason := p.available(id)
	if n == nil {
		return id, nil, &UnavailableError{Tenant: tenant, Node: id, Reason: reason}
	}
	return id, n, nil
}

// available is node id when it is one of the platform's and its last
// health check passed (or none ran yet), else nil and why not.
func (p *Platform) available(id string) (Node, string) {
	n := p.nodes[id]
	if n == nil {
		return nil, fmt.Sprintf("node %s is not one of this platform's gateways (--gateways)", id)
	}
	if st, ok := p.health.get(id); ok && st.err != nil {
		return nil, fmt.Sprintf("its health check failed at %s: %v", st.checked.UTC().Format(time.RFC3339), st.err)
	}
	return n, ""
}

// candidate is a node as placement sees it.
type candidate struct {
	ID     string
	Up     bool
	Placed int // tenants the catalog places on it
	Health Health
}

// choose picks the node for a new tenant: the healthy one with the
// fewest placed tenants; ties go to the one using the smaller share of
// its open-file limit, then fewer warm tenants, then the smaller id.
func choose(cands []candidate) (string, error) {
	up := slices.DeleteFunc(slices.Clone(cands), func(c candidate) bool { return !c.Up })
	if len(up) == 0 {
		return "", ErrNoNode
	}
	share := func(h Health) float64 {
		if h.MaxOpenFiles <= 0 {
			return 0
		}
		return float64(h.OpenFiles) / float64(h.MaxOpenFiles)
	}
	best := slices.MinFunc(up, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.Placed, b.Placed), cmp.Compare(share(a.Health), share(b.Health)),
			cmp.Compare(a.Health.Warm, b.Health.Warm), strings.Compare(a.ID, b.ID))
	})
	return best.ID, nil
}

// placeNew is the node a new tenant goes on.
func (p *Platform) placeNew(ctx context.Context) (string, Node, error) {
	if !p.multi {
		return LocalID, p.nodes[LocalID], nil
	}
	counts, err := p.o.Store.PlacedCounts(ctx)
	if err != nil {
		return "", nil, err
	}
	cands := make([]candidate, 0, len(p.nodes))
	for id := range p.nodes {
		n, _ := p.available(id)
		st, _ := p.health.get(id)
		cands = append(cands, candidate{ID: id, Up: n != nil, Placed: counts[id], Health: st.h})
	}
	id, err := choose(cands)
	if err != nil {
		return "", nil, err
	}
	return id, p.nodes[id], nil
}

// TenantStatus is a tenant with where it is and whether it can be
// reached now.
type TenantStatus struct {
	catalog.Tenant
	Node      string `json:"node"`
	Available bool   `json:"available"`
	// Reason says why a tenant is unavailable.
	Reason string `json:"reason,omitempty"`
}

// TenantStatuses lists the catalog's tenants with their nodes.
func (p *Platform) TenantStatuses(ctx context.Context) ([]TenantStatus, error) {
	list, err := p.o.Store.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	placed := map[string]string{}
	if p.multi {
		pl, err := p.o.Store.Placements(ctx)
		if err != nil {
			return nil, err
		}
		for _, x := range pl {
			placed[x.TenantID] = x.NodeID
		}
	}
	out := make([]TenantStatus, len(list))
	for i, t := range list {
		out[i] = p.status(t, placed)
	}
	return out, nil
}

func (p *Platform) status(t catalog.Tenant, placed map[string]string) TenantStatus {
	st := TenantStatus{Tenant: t, Node: LocalID, Available: true}
	if !p.multi {
		return st
	}
	st.Node = placed[t.ID]
	switch n, reason := p.available(st.Node); {
	case st.Node == "":
		st.Available, st.Reason = false, ErrUnplaced.Error()
	case n == nil:
		st.Available, st.Reason = false, reason
	case p.busy.check(t.ID) != nil:
		st.Available, st.Reason = false, ErrMoving.Error()
	}
	return st
}

// Gateway is the WebSocket URL of the gateway serving tenant and the
// tenant's token there: what a relay dials.
func (p *Platform) Gateway(ctx context.Context, tenant string) (url, token string, err error) {
	if err := p.busy.check(tenant); err != nil {
		return "", "", err
	}
	_, n, err := p.nodeOf(ctx, tenant)
	if err != nil {
		return "", "", err
	}
	if token, err = p.Token(ctx, tenant); err != nil {
		return "", "", err
	}
	u := n.URL()
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	default:
		return "", "", fmt.Errorf("node of tenant %q has no http(s) URL (%q)", tenant, u)
	}
	return strings.TrimSuffix(u, "/"), token, nil
}

// tokenTTL is how long a remote node's answer for a tenant's token is
// used before it is asked again; a node that does not answer leaves the
// last one in use, so a caller's token still checks while it is down.
const tokenTTL = 30 * time.Second

type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedToken
}

type cachedToken struct {
	tok string
	at  time.Time
}

func (c *tokenCache) get(id string) (cachedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[id]
	return t, ok
}

func (c *tokenCache) put(id, tok string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedToken{}
	}
	c.m[id] = cachedToken{tok, at}
}

func (c *tokenCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// Token is the tenant's gateway token, from its node: for the API's and
// Studio's tenant sign-in and the relay's dial.
func (p *Platform) Token(ctx context.Context, tenant string) (string, error) {
	if !p.multi {
		return p.nodes[LocalID].Token(ctx, tenant)
	}
	c, cached := p.tokens.get(tenant)
	now := p.o.Now()
	if cached && now.Sub(c.at) < tokenTTL {
		return c.tok, nil
	}
	_, n, err := p.nodeOf(ctx, tenant)
	if err == nil {
		var tok string
		if tok, err = n.Token(ctx, tenant); err == nil {
			p.tokens.put(tenant, tok, now)
			return tok, nil
		}
	}
	if cached && !errors.Is(err, ErrUnplaced) {
		return c.tok, nil
	}
	return "", err
}

// busy follows the operations running on each tenant, so a move runs
// alone: operations refuse a tenant being moved, and a move refuses a
// tenant with operations in flight.
type busy struct {
	mu sync.Mutex
	m  map[string]*tenantOps
}

type tenantOps struct {
	n      int
	moving bool
}

// enter starts an operation on id; done ends it.
func (b *busy) enter(id string) (done func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*tenantOps{}
	}
	o := b.m[id]
	if o == nil {
		o = &tenantOps{}
		b.m[id] = o
	}
	if o.moving {
		return nil, fmt.Errorf("tenant %q: %w", id, ErrMoving)
	}
	o.n++
	return func() { b.leave(id, func(o *tenantOps) { o.n-- }) }, nil
}

// move starts moving id; done ends it.
func (b *busy) move(id string) (done func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*tenantOps{}
	}
	o := b.m[id]
	if o == nil {
		o = &tenantOps{}
		b.m[id] = o
	}
	switch {
	case o.moving:
		return nil, fmt.Errorf("tenant %q: %w", id, ErrMoving)
	case o.n > 0:
		return nil, fmt.Errorf("tenant %q: %w", id, ErrBusy)
	}
	o.moving = true
	return func() { b.leave(id, func(o *tenantOps) { o.moving = false }) }, nil
}

func (b *busy) leave(id string, f func(*tenantOps)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.m[id]
	f(o)
	if o.n == 0 && !o.moving {
		delete(b.m, id)
	}
}

// check refuses a tenant being moved.
func (b *busy) check(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.m[id]; o != nil && o.moving {
		return fmt.Errorf("tenant %q: %w", id, ErrMoving)
	}
	return nil
}
