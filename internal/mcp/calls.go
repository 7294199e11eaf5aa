package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/tools"
)

// list reads the server's tools (all pages, at most maxListed) and adapts
// them.
func (s *server) list(ctx context.Context, rec *session) ([]tools.Tool, error) {
	rec.listMu.Lock()
	defer rec.listMu.Unlock()
	rec.stale.Store(false) // a notification from now on means list again
	var all []*sdk.Tool
	for t, err := range rec.cs.Tools(ctx, nil) {
		if err != nil {
			rec.stale.Store(true)
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		if len(all) == maxListed {
			s.m.log.Warn("mcp: tool list cut", "server", s.name, "limit", maxListed)
			break
		}
		all = append(all, t)
	}
	return s.m.adapt(s.name, all), nil
}

// tools returns the server's tools, starting it if needed and listing
// them again when the server said they changed.
func (s *server) tools(ctx context.Context) ([]tools.Tool, error) {
	rec, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if rec.stale.Load() {
		lctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
		defer cancel()
		defer context.AfterFunc(rec.ctx, cancel)()
		list, err := s.list(lctx, rec)
		if err != nil {
			if ctx.Err() == nil && rec.ctx.Err() == nil && !isServerAnswer(err) && lctx.Err() == nil {
				s.broken(rec, err)
			}
			return nil, fmt.Errorf("MCP server %q: %w", s.name, err)
		}
		s.mu.Lock()
		rec.tools = list
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(rec.tools), nil
}

// isServerAnswer reports whether err is an error response from the server
// (which is alive and answering), not a failure of the connection.
func isServerAnswer(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
}

// call runs one tool call. Whatever the server or its connection did is a
// Result with IsError naming the server; only the caller's own
// cancellation is an error.
func (s *server) call(ctx context.Context, mcpName string, args map[string]any) (tools.Result, error) {
	rec, err := s.ensure(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.ErrorResult(err), nil
	}
	timeout := s.toolTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(rec.ctx, cancel)()
	res, err := rec.cs.CallTool(cctx, &sdk.CallToolParams{Name: mcpName, Arguments: args})
	switch {
	case err == nil:
		s.succeeded()
		return render(res), nil
	case ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case isServerAnswer(err):
		return tools.Errorf("MCP server %q refused the call to %q: %v", s.name, mcpName, err), nil
	case rec.ctx.Err() != nil:
		return tools.Errorf("MCP server %q ended during the call to %q (%s); it is started again on next use",
			s.name, mcpName, s.endReason()), nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return tools.Errorf("MCP server %q: the call to %q got no answer within %s (toolTimeoutMs)", s.name, mcpName, timeout), nil
	default:
		s.broken(rec, err)
		return tools.Errorf("MCP server %q failed during the call to %q: %v; it is started again on next use",
			s.name, mcpName, err), nil
	}
}

func (s *server) endReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return "stopped: no longer configured"
	}
	if s.lastErr == "" {
		return "stopped"
	}
	return s.lastErr
}
