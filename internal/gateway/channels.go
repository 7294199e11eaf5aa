package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/channel"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/session"
	"talon/internal/tools"
)

// channelWatch is how often the configs of tenants with channels are
// checked for changes made by hand (config.patch and the other writes
// apply at once); a check is a stat when nothing changed.
const channelWatch = 2 * time.Second

// tenantChannelAccounts is how many channel accounts a tenant's config
// may run: a tenant is untrusted, and each account holds a connection
// and goroutines. The operator's own config has no bound.
const tenantChannelAccounts = 8

// hubTenant is the id a tenant's hub goes by in messages and the token
// registry: "_" for the operator's own (never a valid tenant id).
func hubTenant(t *tenant) string {
	if t.id == "" {
		return "_"
	}
	return t.id
}

// applyChannels makes t's running channel accounts those of rt's config.
// It is called after every new runtime, without t.mu held: starting an
// account builds its adapter, which reads the runtime. The hub is made
// the first time a config has a channel and then kept (it outlives config
// versions, as approvals do), so that removing the block stops accounts.
func (s *Server) applyChannels(t *tenant, rt *runtime) {
	t.mu.Lock()
	h := t.channels
	if h == nil && !t.closed && hasChannels(rt.file.Config) {
		most := 0
		if t.id != "" {
			most = tenantChannelAccounts
		}
		h = hub.New(hub.Options{MaxAccounts: most,
			Tenant: hubTenant(t), Store: t.store, Turns: channelTurns{s: s, t: t},
			Transports: func(a channel.Account) (channel.Transport, error) { return s.channelTransport(t, t.runtimeNow(), a) },
			Tokens:     s.channelTokens, Log: s.log, Control: isChannelControl,
			// The env of the config in force, not of the first: a tenant
			// that changes its env changes the tokens its accounts hold.
			Env: func(k string) string { return s.secretEnv(t, t.runtimeNow())(k) },
		})
		t.channels = h
	}
	t.mu.Unlock()
	if h == nil {
		return
	}
	if err := h.Apply(rt.file.Config); err != nil {
		s.log.Error("applying channels", "tenant", t.id, "err", err)
	}
}

// hasChannels reports whether cfg configures a channel Talon runs.
func hasChannels(cfg *config.Config) bool {
	for _, ch := range chatChannelIDs {
		if _, ok := cfg.Channels[ch]; ok {
			return true
		}
	}
	return false
}

// chatChannelIDs are the channels Talon has adapters for, in the order
// channels.status lists them.
var chatChannelIDs = []string{"telegram", "slack", "discord"}

// runtimeNow is the runtime in force, without reloading.
func (t *tenant) runtimeNow() *runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rt
}

// secretEnv is where a tenant's config secrets are read from: the
// process environment for the operator's config, the tenant's own config
// env for a tenant.
func (s *Server) secretEnv(t *tenant, rt *runtime) func(string) string {
	if t.id == "" {
		return s.opts.Env
	}
	if rt == nil {
		return func(string) string { return "" }
	}
	vars := config.EnvVars(rt.file.Config)
	return func(k string) string { return vars[k] }
}

// channelTurns runs a hub's turns as chat runs of the tenant's sessions.
type channelTurns struct {
	s *Server
	t *tenant
}

func (c channelTurns) Turn(ctx context.Context, r hub.TurnRequest) (hub.TurnResult, error) {
	if approveCommand(r.Text) {
		return hub.TurnResult{Text: c.s.chatApprove(ctx, c.t, r)}, nil
	}
	e := r.Envelope
	chat := &agent.Chat{Channel: e.Channel, AccountID: e.AccountID, GuildID: e.GuildID,
		Sender: policy.Sender{ID: e.Sender.ID, E164: e.Sender.E164, Username: e.Sender.Username, Name: e.Sender.Name}}
	if e.Peer.Kind != channel.Direct {
		chat.GroupID = e.Peer.ID
	}
	if e.ParentPeer != nil {
		chat.ParentID = e.ParentPeer.ID
	}
	var owner bool
	if rt := c.t.runtimeNow(); rt != nil {
		owner = slices.Contains(channel.Owners(rt.file.Config, e.Channel), e.Sender.ID)
	}
	c.s.recordChatRoute(ctx, c.t, r)
	files, notes := c.media(ctx, e)
	if len(notes) > 0 {
		r.Text = strings.TrimSpace(r.Text + "\n\n" + strings.Join(notes, "\n"))
	}
	text, model, err := c.s.channelTurn(ctx, c.t, r.AgentID, r.SessionKey, r.Text, chat, owner, files)
	return hub.TurnResult{Text: text, Model: model}, err
}

// media downloads a message's attachments for its turn (R8.9): the files
// the run writes into the workspace, and a note for each one that could
// not be had.
func (c channelTurns) media(ctx context.Context, e channel.Envelope) ([]agent.InboundFile, []string) {
	h := c.t.hub()
	if h == nil || len(e.Media) == 0 {
		return nil, nil
	}
	var files []agent.InboundFile
	var notes []string
	for _, f := range h.FetchMedia(ctx, e) {
		name := tools.BaseName(cmp.Or(f.Name, f.Kind, "file"))
		if f.Err != nil {
			c.s.log.Info("channel attachment not downloaded", "tenant", c.t.id, "channel", e.Channel, "message", e.MessageID, "err", f.Err)
			notes = append(notes, fmt.Sprintf("[media unavailable: %s: %v]", name, f.Err))
			continue
		}
		files = append(files, agent.InboundFile{Name: name, MIME: f.MIME, Data: f.Data})
	}
	return files, notes
}

// startChannels starts the channels of every tenant whose config has a
// channel block, and then watches their configs. Tenants without one are
// not loaded: a tenant is cheap when idle.
func (s *Server) startChannels(ctx context.Context) {
	s.loadChannels(s.defaultTenant)
	dirs, _ := os.ReadDir(filepath.Join(s.opts.StateDir, "tenants"))
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if !needsChannels(filepath.Join(s.opts.StateDir, "tenants", d.Name())) {
			continue
		}
		if t, err := s.lookup(d.Name()); err == nil {
			s.loadChannels(t)
		}
	}
	go s.watchChannels(ctx)
}

// loadChannels loads t's config, which applies its channels.
func (s *Server) loadChannels(t *tenant) {
	if _, err := t.current(s); err != nil {
		s.log.Error("starting channels", "tenant", t.id, "err", err)
	}
}

// watchChannels reloads the configs of tenants with channels until ctx
// ends, so that an edit by hand starts, restarts or stops accounts.
func (s *Server) watchChannels(ctx context.Context) {
	tick := time.NewTicker(channelWatch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range s.channelTenants() {
			if _, err := t.current(s); err != nil && ctx.Err() == nil {
				s.log.Debug("reloading a tenant with channels", "tenant", t.id, "err", err)
			}
		}
	}
}

// channelTenants are the loaded tenants that have a hub.
func (s *Server) channelTenants() []*tenant {
	all := []*tenant{s.defaultTenant}
	s.tenants.mu.Lock()
	for _, t := range s.tenants.m {
		all = append(all, t)
	}
	s.tenants.mu.Unlock()
	var out []*tenant
	for _, t := range all {
		t.mu.Lock()
		if t.channels != nil && !t.closed {
			out = append(out, t)
		}
		t.mu.Unlock()
	}
	return out
}

// closeChannels stops t's channel accounts and waits for them. It must
// run before the tenant's store closes, and without t.mu held: a turn in
// flight reads the tenant's runtime.
func (s *Server) closeChannels(t *tenant) {
	t.mu.Lock()
	h := t.channels
	t.channels = nil
	t.mu.Unlock()
	if h != nil {
		if err := h.Close(); err != nil {
			s.log.Error("closing channels", "tenant", t.id, "err", err)
		}
	}
}

// recordChatRoute writes where a channel session's conversation is into
// its entry (spec channels.md R4.7): chatType, channel, displayName, and
// the last route (lastChannel, lastTo, lastAccountId, lastThreadId) —
// not for a DM the main-DM pinning keeps off the owner's route (R4.5).
// A failure is logged: the turn still runs.
func (s *Server) recordChatRoute(ctx context.Context, t *tenant, r hub.TurnRequest) {
	rt := t.runtimeNow()
	if rt == nil {
		return
	}
	e := r.Envelope
	label := e.Channel + ":" + e.Sender.ID
	switch {
	case e.Peer.Kind == channel.Direct && e.Sender.Name != "":
		label = e.Channel + ": " + e.Sender.Name
	case e.Peer.Kind != channel.Direct && e.RoomLabel != "":
		label = e.Channel + ": #" + e.RoomLabel
	case e.Peer.Kind != channel.Direct:
		label = e.Channel + ":g-" + e.Peer.ID
	}
	raw := func(v string) json.RawMessage { b, _ := json.Marshal(v); return b }
	_, err := rt.runner.Store.PatchSessionWith(ctx, r.AgentID, r.SessionKey, json.RawMessage(`{}`), time.Now(), func(_ session.Entry, next *session.Entry) error {
		next.ChatType = string(e.Peer.Kind)
		if next.DisplayName == "" && r.SessionKey != r.Route.MainSessionKey {
			next.DisplayName = label // the main session is the agent's, not a chat's
		}
		if next.Extra == nil {
			next.Extra = map[string]json.RawMessage{}
		}
		next.Extra["channel"] = raw(e.Channel)
		if r.Route.ParentSessionKey != "" {
			next.Extra["parentSessionKey"] = raw(r.Route.ParentSessionKey)
		}
		if !r.Route.SkipLastRoute {
			next.Extra["lastChannel"], next.Extra["lastTo"] = raw(e.Channel), raw(e.Peer.ID)
			next.Extra["lastAccountId"] = raw(e.AccountID)
			if e.ThreadID != "" {
				next.Extra["lastThreadId"] = raw(e.ThreadID)
			} else {
				delete(next.Extra, "lastThreadId")
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("recording a channel session's route", "tenant", t.id, "session", r.SessionKey, "err", err)
	}
}
