package mcp

import (
	"strings"
	"sync"
	"testing"

	"talon/internal/config"
	"talon/internal/tools"
)

// TestConcurrentUse: simultaneous first uses start one process; a call in
// flight when the Manager closes ends with an error result, not a hang.
func TestConcurrentUse(t *testing.T) {
	bin := everythingBin(t)
	m := testManager(t)
	m.Configure(map[string]config.MCPServer{"everything": stdioConfig(bin, nil)})

	var wg sync.WaitGroup
	lists := make([][]tools.Tool, 8)
	errs := make([]error, 8)
	for i := range lists {
		wg.Go(func() { lists[i], errs[i] = m.Tools(t.Context(), "everything") })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Tools #%d: %v", i, err)
		}
	}
	pid := status(t, m, "everything").PID
	for i := range lists {
		wg.Go(func() {
			res, err := echoOf(lists[i]).Run(t.Context(), &tools.Env{}, []byte(`{"message":"m"}`))
			if err != nil || res.Text != "Echo: m" {
				t.Errorf("echo #%d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	if got := status(t, m, "everything").PID; got != pid {
		t.Fatalf("pid changed from %d to %d during concurrent use", pid, got)
	}

	long := toolByName(t, lists[0], "trigger_long_running_operation")
	done := make(chan tools.Result)
	go func() {
		res, err := long.Run(t.Context(), &tools.Env{}, []byte(`{"duration":600,"steps":2}`))
		if err != nil {
			res = tools.ErrorResult(err)
		}
		done <- res
	}()
	m.Close()
	res := <-done
	if !res.IsError || !(strings.Contains(res.Text, "ended during the call") || strings.Contains(res.Text, "closed")) {
		t.Fatalf("call across Close: %+v", res)
	}
	if alive(pid) {
		t.Fatalf("server %d exists after Close", pid)
	}
}

func echoOf(list []tools.Tool) tools.Tool {
	for _, tl := range list {
		if tl.Name() == "echo" {
			return tl
		}
	}
	return nil
}
