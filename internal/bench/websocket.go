package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"talon/internal/procfs"
	"talon/protocol/client"
)

func init() {
	measurements = append(measurements, measurement{
		name: "websocket idle", figures: wsFigures, method: wsMethod, run: wsIdle,
	})
}

// WSDialers is how many WebSocket clients DialWS connects at a time.
const WSDialers = 32

// wsIdleEvents is the event buffer of an idle client: ticks only.
const wsIdleEvents = 16

// wsConns is how many idle clients the row holds: the plan's largest
// concurrency level, the number of clients a gateway of that load serves.
func wsConns(p Plan) int { return slices.Max(p.Talon.Concurrency) }

func wsGroup(p Plan) string {
	return thousands(int64(wsConns(p))) + " idle WebSocket clients"
}

func wsFigures(p Plan) []Figure {
	g, id := wsGroup(p), "websocket."+strconv.Itoa(wsConns(p))+"."
	return []Figure{
		{ID: id + "connect_ms", Group: g, What: "every handshake (connect with the token, hello-ok), 32 at a time", Unit: "ms"},
		{ID: id + "rss_mb", Group: g, What: "gateway RSS growth with them all open", Unit: "MB"},
		{ID: id + "goroutines", Group: g, What: "gateway goroutine growth with them open", Unit: "count"},
	}
}

func wsMethod(p Plan) string {
	return fmt.Sprintf("a fresh gateway; 50 connections opened and closed, then 1 s, then the baseline (VmRSS, goroutines "+
		"from GET /debug/runtime); %d operator clients (protocol/client: token, all four scopes) connect %d at a time and stay "+
		"idle; the figures 2 s after the last hello-ok, when every client is checked to be still open (at 1,000 clients, "+
		"the RSS growth in MB is KB per client). RSS at 2 s still holds the handshakes' garbage (the go-test benchmark in BENCHMARKS.md also reads it after Go's 2-minute forced GC); talon only",
		wsConns(p), WSDialers)
}

// wsIdle measures the memory and goroutines idle WebSocket clients cost a
// fresh talon gateway. OpenClaw is not measured (its clients must present
// another client id and mode, and a start costs it ≈ 20 s).
func wsIdle(e *env) (vals map[string]float64, err error) {
	if e.t.lenient || e.t.goroutines == nil {
		return map[string]float64{}, nil
	}
	p, err := e.t.start(filepath.Join(e.root, "websocket"), e.fakes.upstreams())
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(e.t, p); serr != nil && err == nil {
			err = fmt.Errorf("stopping the gateway: %w", serr)
		}
	}()
	url := "ws" + strings.TrimPrefix(p.URL, "http")
	warm, err := DialWS(e.ctx, url, e.t.token, 50, wsIdleEvents)
	closeAll(warm)
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	pid := p.Cmd.Process.Pid
	rss0, err := procfs.RSSMB(pid)
	if err != nil {
		return nil, err
	}
	g0, err := settle(e.ctx, func() (int, error) { return e.t.goroutines(e.ctx, p) })
	if err != nil {
		return nil, err
	}
	n := wsConns(e.plan)
	begin := time.Now()
	conns, err := DialWS(e.ctx, url, e.t.token, n, wsIdleEvents)
	connect := time.Since(begin)
	defer closeAll(conns)
	if err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	rss1, err := procfs.RSSMB(pid)
	if err != nil {
		return nil, err
	}
	g1, err := settle(e.ctx, func() (int, error) { return e.t.goroutines(e.ctx, p) })
	if err != nil {
		return nil, err
	}
	for _, c := range conns {
		if c.Err() != nil {
			return nil, fmt.Errorf("an idle WebSocket client was disconnected: %w", c.Err())
		}
	}
	e.logf("%s: %d idle WebSocket clients: connected in %v, RSS +%.1f MB, goroutines %d → %d", e.t.name, n, connect.Round(time.Millisecond), rss1-rss0, g0, g1)
	id := "websocket." + strconv.Itoa(n) + "."
	return map[string]float64{
		id + "connect_ms": ms(connect),
		id + "rss_mb":     rss1 - rss0,
		id + "goroutines": float64(g1 - g0),
	}, nil
}

// DialWS connects n operator clients to the gateway at url with token,
// WSDialers at a time, each buffering up to events events (an idle client
// gets only ticks; one that watches chats needs room for a burst). On
// error it closes those it opened.
func DialWS(ctx context.Context, url, token string, n, events int) ([]*client.Client, error) {
	out := make([]*client.Client, n)
	var mu sync.Mutex
	var errs []error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(WSDialers, n) {
		wg.Go(func() {
			for i := range next {
				dctx, cancel := context.WithTimeout(ctx, time.Minute)
				c, err := client.Dial(dctx, url, client.Options{Token: token, EventBuffer: events})
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				out[i] = c
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		closeAll(out)
		return nil, fmt.Errorf("connecting %d WebSocket clients: %d failed: %w", n, len(errs), errors.Join(errs[:min(len(errs), 3)]...))
	}
	return out, nil
}

func closeAll(cs []*client.Client) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}
