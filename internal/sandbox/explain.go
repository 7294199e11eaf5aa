package sandbox

import (
	"context"
	"fmt"
	"strings"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/session"
)

// Layered is implemented by backends that can describe, one line each, the
// isolation a command gets here (bwrap: its namespaces, limits and whether
// the kernel has Landlock). Explain prints the lines.
type Layered interface {
	Layers() []string
}

// Explanation is `talon sandbox explain`: a session's sandbox plan, whether
// its backend can run here, and the sandbox tool policy.
type Explanation struct {
	Plan Plan `json:"plan"`
	// Sandbox is the plan's Spec, when the session is sandboxed.
	Sandbox *SpecReport   `json:"sandbox,omitempty"`
	Backend BackendReport `json:"backend"`
	// Policy is the agent's sandbox tool policy, with the key each list
	// came from; it applies only when the session is sandboxed.
	Policy policy.SandboxPolicy `json:"tool_policy"`
}

// SpecReport is a Spec as explain's JSON shows it.
type SpecReport struct {
	ID      string        `json:"id"`
	Root    string        `json:"root"`
	Workdir string        `json:"workdir"`
	Mounts  []MountReport `json:"mounts"`
	Network bool          `json:"network"`
	Limits  struct {
		Processes      int     `json:"processes"`
		OpenFiles      int     `json:"open_files"`
		FileSizeBytes  int64   `json:"file_size_bytes"`
		CPUSeconds     float64 `json:"cpu_seconds"`
		MemoryBytes    int64   `json:"memory_bytes"`
		TimeoutSeconds float64 `json:"timeout_seconds"`
	} `json:"limits"`
}

// MountReport is a Mount as explain's JSON shows it.
type MountReport struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only"`
}

func specReport(s *Spec) *SpecReport {
	r := &SpecReport{ID: s.ID, Root: s.Root, Workdir: Workdir, Network: s.Network, Mounts: []MountReport{}}
	for _, m := range s.Mounts {
		r.Mounts = append(r.Mounts, MountReport(m))
	}
	l := &r.Limits
	l.Processes, l.OpenFiles, l.FileSizeBytes, l.MemoryBytes = s.Limits.Processes, s.Limits.OpenFiles, s.Limits.FileSize, s.Limits.Memory
	l.CPUSeconds, l.TimeoutSeconds = s.Limits.CPUTime.Seconds(), s.Limits.Timeout.Seconds()
	return r
}

// BackendReport says whether a backend can run sandboxes here.
type BackendReport struct {
	Name   string `json:"name"`
	Usable bool   `json:"usable"`
	// Problem is Check's error (or why the backend could not be built).
	Problem string   `json:"problem,omitempty"`
	Layers  []string `json:"layers,omitempty"`
}

// Explain resolves the sandbox of one session and checks its backend. A
// config that does not resolve is an error; a backend that cannot run is
// part of the answer.
func Explain(ctx context.Context, cfg *config.Config, stateDir, agentID, sessionKey string) (*Explanation, error) {
	p, err := Resolve(cfg, stateDir, agentID, sessionKey)
	if err != nil {
		return nil, err
	}
	// The gateway runs an agent only in its own sessions; explaining
	// another agent's session for it would describe a run that never
	// happens.
	if owner := session.AgentOf(p.SessionKey, p.AgentID); owner != p.AgentID {
		return nil, fmt.Errorf("session %s belongs to agent %s, not %s", p.SessionKey, owner, p.AgentID)
	}
	x := &Explanation{Plan: p, Policy: policy.ResolveSandboxPolicy(cfg, p.AgentID)}
	if p.Sandboxed {
		x.Sandbox = specReport(&p.Spec)
	}
	x.Backend.Name = p.Backend.Value
	b, err := New(p.Backend.Value, p.BackendSettings)
	if err != nil {
		x.Backend.Problem = err.Error()
		return x, nil
	}
	if l, ok := b.(Layered); ok {
		x.Backend.Layers = l.Layers()
	}
	if err := b.Check(ctx); err != nil {
		x.Backend.Problem = err.Error()
	} else {
		x.Backend.Usable = true
	}
	return x, nil
}

// Text renders the explanation for people.
func (x *Explanation) Text() string {
	var b strings.Builder
	p := &x.Plan
	session := p.SessionKey
	if session == "" {
		session = "(none)"
	}
	fmt.Fprintf(&b, "agent     %s\nsession   %s\n", p.AgentID, session)
	if p.Sandboxed {
		fmt.Fprintf(&b, "sandboxed yes: %s\n", p.Reason)
	} else {
		fmt.Fprintf(&b, "sandboxed no: %s\n", p.Reason)
	}
	b.WriteString("\nsettings\n")
	setting := func(name string, s Setting, note string) {
		key := s.Key
		if key == "" {
			key = "default"
		}
		if note != "" {
			note = "  " + note
		}
		fmt.Fprintf(&b, "  %-16s %-12s (%s)%s\n", name, s.Value, key, note)
	}
	mode := ""
	if p.Mode.Value != p.EffectiveMode {
		mode = fmt.Sprintf("read as %q", p.EffectiveMode)
	}
	setting("mode", p.Mode, mode)
	setting("scope", p.Scope, "")
	setting("workspaceAccess", p.Access, "")
	setting("backend", p.Backend, "")
	setting("network", p.Network, "")
	setting("workspaceRoot", p.WorkspaceRoot, "")
	fmt.Fprintf(&b, "  main session     %s\n", p.MainSessionKey)
	for _, k := range p.Ignored {
		fmt.Fprintf(&b, "  ignored          %s: scope shared takes docker and limits from agents.defaults.sandbox only\n", k)
	}

	b.WriteString("\nworkspace\n")
	fmt.Fprintf(&b, "  agent workspace  %s\n", p.AgentWorkspace)
	if p.Sandboxed {
		s := &p.Spec
		fmt.Fprintf(&b, "  sandbox          %s (scope key %s)\n", s.ID, p.ScopeKey)
		how := "the agent workspace itself (workspaceAccess rw)"
		if p.Seed {
			how = "a sandbox workspace, seeded from the agent workspace"
		}
		fmt.Fprintf(&b, "  %-16s %s -> %s, read-write: %s\n", "root", s.Root, Workdir, how)
		for _, m := range s.Mounts {
			mode := "read-write"
			if m.ReadOnly {
				mode = "read-only"
			}
			fmt.Fprintf(&b, "  %-16s %s -> %s, %s, for commands only (the file tools stay in the root)\n", "mount", m.Source, m.Target, mode)
		}
		net := "none, loopback included"
		switch {
		case s.Network && p.Backend.Value == BackendDocker:
			net = fmt.Sprintf("docker network %q", p.Network.Value)
		case s.Network:
			net = fmt.Sprintf("the host's (sandbox.docker.network is %q)", p.Network.Value)
		}
		fmt.Fprintf(&b, "  %-16s %s\n", "network", net)
		l := s.Limits
		fmt.Fprintf(&b, "  %-16s processes %d, open files %d, file size %d MiB, CPU %s, memory %d MiB, timeout %s\n",
			"limits", l.Processes, l.OpenFiles, l.FileSize>>20, l.CPUTime, l.Memory>>20, l.Timeout)
	} else {
		fmt.Fprintf(&b, "  %-16s %s (not sandboxed: tools and commands work on the host)\n", "root", p.AgentWorkspace)
	}

	b.WriteString("\nbackend\n")
	switch {
	case x.Backend.Usable:
		fmt.Fprintf(&b, "  %s: usable here\n", x.Backend.Name)
	case p.Sandboxed:
		fmt.Fprintf(&b, "  %s: NOT usable here; runs of this session fail (Talon never falls back to the host):\n    %s\n", x.Backend.Name, x.Backend.Problem)
	default:
		fmt.Fprintf(&b, "  %s: not usable here (this session does not need it):\n    %s\n", x.Backend.Name, x.Backend.Problem)
	}
	for _, l := range x.Backend.Layers {
		fmt.Fprintf(&b, "  %s\n", l)
	}

	b.WriteString("\nsandbox tool policy")
	if !p.Sandboxed {
		b.WriteString(" (applies only to sandboxed sessions)")
	}
	b.WriteString("\n")
	list := func(name string, items []string, src policy.ListSource) {
		shown := strings.Join(items, ", ")
		if len(items) == 0 {
			shown = "(empty: no restriction)"
		}
		fmt.Fprintf(&b, "  %-6s %s\n         from %s (%s)\n", name, shown, src.Key, src.Source)
	}
	list("allow", x.Policy.Allow, x.Policy.Sources.Allow)
	list("deny", x.Policy.Deny, x.Policy.Sources.Deny)
	if x.Policy.ImageAdded {
		b.WriteString("  image was added to the allow list: neither list names it\n")
	}
	if p.Sandboxed && p.Access.Value == policy.AccessRO {
		fmt.Fprintf(&b, "  workspaceAccess ro also removes write, edit and apply_patch (%s)\n", orDefault(p.Access.Key))
	}
	return b.String()
}
