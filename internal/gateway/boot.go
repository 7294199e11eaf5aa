package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/store"
)

// BOOT.md, OpenClaw's bundled boot-md hook (hooks.internal, config
// Hooks.BootMD): the first time the gateway takes a tenant up after it
// started — at start for the operator's and for tenants with automation,
// at first use for the others — each agent's non-empty BOOT.md runs once
// as a turn of a session of its own, one agent after another. Agents
// sharing a workspace run it once. The answer goes nowhere (the file says
// whom to tell, through the message tool), and the session is deleted
// after; a failure is logged and does not stop the next agent.

const (
	bootFile = "BOOT.md"
	// maxBootBytes bounds the checklist read into a prompt: a startup
	// checklist is short, and a tenant's file is input.
	maxBootBytes = 64 << 10
	// bootTimeout bounds one agent's boot turn.
	bootTimeout = 10 * time.Minute
)

// bootPrompt is the turn's message around the checklist.
func bootPrompt(checklist string) string {
	return "The gateway has just started. Carry out the startup checklist below (the agent's BOOT.md) exactly.\n\n" +
		"BOOT.md:\n" + checklist + "\n\n" +
		"Your final reply is not delivered to anyone: to tell someone something, use the message tool " +
		"(action send, with channel and target). When you are done, or when nothing needs doing, reply with exactly NO_REPLY."
}

// bootTask is one agent's checklist to run.
type bootTask struct {
	agentID, checklist string
}

// bootTasks are the checklists of cfg's agents, one per workspace, in
// agent order, and why any could not be read.
func (s *Server) bootTasks(t *tenant, cfg *config.Config) ([]bootTask, []error) {
	var (
		tasks []bootTask
		errs  []error
		seen  = map[string]bool{}
	)
	for _, id := range cfg.AgentIDs() {
		dir := cfg.AgentWorkspace(t.dir, id)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		text, err := s.readBoot(t, dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent %s: %w", id, err))
			continue
		}
		if text != "" {
			tasks = append(tasks, bootTask{id, text})
		}
	}
	return tasks, errs
}

// readBoot reads dir's BOOT.md, trimmed; "" when it is missing or blank.
func (s *Server) readBoot(t *tenant, dir string) (string, error) {
	ws, err := t.workspaces().Open(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("opening the workspace: %w", err)
	}
	defer ws.Close()
	fi, err := ws.Stat(bootFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", bootFile, err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", bootFile)
	case fi.Size() > maxBootBytes:
		return "", fmt.Errorf("%s is %d bytes, more than the %d a startup checklist may have", bootFile, fi.Size(), maxBootBytes)
	}
	b, err := ws.ReadFile(bootFile)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", bootFile, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// boot runs t's checklists in the background when its config turns
// boot-md on. It is called once per tenant and process, when the tenant
// is taken up (applyCron); a config changed later does not run it again
// before the next start, as in OpenClaw.
func (s *Server) boot(t *tenant, rt *runtime) {
	cfg := rt.file.Config
	if !cfg.Hooks.BootMD() {
		return
	}
	log := s.log.With("tenant", t.id, "hook", config.BootHook)
	tasks, errs := s.bootTasks(t, cfg)
	for _, err := range errs {
		log.Error("reading the startup checklist", "err", err)
	}
	if len(tasks) == 0 {
		return
	}
	release := s.enter(t)
	go func() {
		defer release()
		ctx, unbind := t.bind(context.Background())
		defer unbind()
		for _, task := range tasks {
			if ctx.Err() != nil {
				return
			}
			if err := s.bootAgent(ctx, t, task); err != nil {
				log.Error("running the startup checklist", "agent", task.agentID, "err", err)
				continue
			}
			log.Info("ran the startup checklist", "agent", task.agentID)
		}
	}()
}

// bootAgent runs one checklist in a fresh agent:<id>:boot:<run> session
// and deletes the session after, whatever the run did.
func (s *Server) bootAgent(ctx context.Context, t *tenant, task bootTask) error {
	rt, err := t.current(s)
	if err != nil {
		return fmt.Errorf("loading the config: %w", err)
	}
	runID := store.NewID()
	key := "agent:" + task.agentID + ":boot:" + runID
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: bootPrompt(task.checklist)}}, Owner: true, Kind: store.CallHook}
	_, failed := s.backgroundTurn(ctx, t, rt, "boot-"+runID, key, task.agentID, req, bootTimeout)
	var runErr error
	if failed != "" {
		runErr = errors.New(failed)
	}
	return errors.Join(runErr, s.dropSession(t, task.agentID, key))
}

// dropSession deletes a session the gateway made for itself; its
// transcript stays in the store, reachable by no key.
func (s *Server) dropSession(t *tenant, agentID, key string) error {
	t.mu.Lock()
	db := t.store
	t.mu.Unlock()
	if db == nil {
		return errors.New("deleting the session: the tenant is closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.DeleteSession(ctx, agentID, key); err != nil {
		return fmt.Errorf("deleting the session: %w", err)
	}
	return nil
}
