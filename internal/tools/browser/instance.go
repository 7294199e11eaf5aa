package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"talon/internal/netguard"
)

// maxConsole is how many console messages a tab keeps.
const maxConsole = 200

// maxTabs bounds the tabs one browser has open (OpenClaw caps at eight).
const maxTabs = 8

// instance is one running Chromium of one agent, with its proxy and tabs.
// Its mutex serialises the calls that use it: actions on one tab must not
// race, and a model calls one tool at a time anyway.
type instance struct {
	mu sync.Mutex

	profile string // the user data directory
	temp    bool   // profile is a temporary directory, removed on close
	exe     string
	proxy   *proxy

	allocCancel   context.CancelFunc
	browserCtx    context.Context
	browserCancel context.CancelFunc
	pid           int

	tabs    []*tab // in the order they were opened or adopted
	current *tab
	next    int // the number of the next tab handle (t1, t2, …)

	lastUsed time.Time
	closed   bool
}

// tab is one page target with its own chromedp context.
type tab struct {
	id     target.ID
	handle string // "t1"
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	console []consoleMsg
	refs    map[string]int64 // the last snapshot's refs
}

// consoleMsg is one console message or uncaught exception of a page.
type consoleMsg struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp,omitempty"`
	URL       string `json:"url,omitempty"`
	Line      int64  `json:"line,omitempty"`
}

// launch starts Chromium exe with the profile directory dir, all its
// traffic through a new proxy under guard, and attaches its first tab.
// start bounds how long starting may take.
func launch(ctx context.Context, exe, dir string, temp bool, guard netguard.Options, start time.Duration) (*instance, error) {
	px, err := startProxy(guard)
	if err != nil {
		return nil, err
	}
	in := &instance{profile: dir, temp: temp, exe: exe, proxy: px, next: 1}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(dir),
		// No variable of the gateway's environment (keys, proxies) reaches
		// the browser.
		chromedp.NoInheritEnv, chromedp.Env("HOME="+dir, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"),
		chromedp.ProxyServer("http://" + px.addr()),
		// Chromium sends loopback around a proxy unless told not to; the
		// rule decides about loopback too.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// WebRTC would send UDP around the proxy, QUIC too.
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 800),
	}
	opts = append(chromedp.DefaultExecAllocatorOptions[:], opts...)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	in.allocCancel = allocCancel
	first := &tab{refs: map[string]int64{}}
	bctx, bcancel := chromedp.NewContext(allocCtx, chromedp.WithListener(first.listen))
	in.browserCtx, in.browserCancel = bctx, bcancel
	first.ctx = bctx

	// The first Do starts the browser and binds it to bctx, which has no
	// deadline; the wait for it has one.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(bctx) }()
	t := time.NewTimer(start)
	defer t.Stop()
	select {
	case err = <-done:
	case <-t.C:
		err = fmt.Errorf("Chromium did not start within %s", start)
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err != nil {
		in.close()
		return nil, fmt.Errorf("starting Chromium (%s): %w", exe, err)
	}
	c := chromedp.FromContext(bctx)
	if c.Browser != nil && c.Browser.Process() != nil {
		in.pid = c.Browser.Process().Pid
	}
	first.id = c.Target.TargetID
	in.adopt(first)
	// Downloads would write files into the profile on the host; a page's
	// dialogs would block every action until answered.
	_, err = chromedp.CallBrowser(bctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny})
	if err != nil {
		in.close()
		return nil, fmt.Errorf("starting Chromium: refusing downloads: %w", err)
	}
	first.dismissDialogs()
	in.lastUsed = time.Now()
	return in, nil
}

// adopt makes t a tab of the browser with the next handle, and current.
func (in *instance) adopt(t *tab) {
	t.handle = fmt.Sprintf("t%d", in.next)
	in.next++
	in.tabs = append(in.tabs, t)
	in.current = t
}

// dead says the browser is gone: its process exited or its DevTools
// connection broke (chromedp then ends the browser context).
func (in *instance) dead() bool {
	return in.closed || in.browserCtx.Err() != nil
}

// close ends the browser, its proxy, and a temporary profile.
func (in *instance) close() {
	if in.closed {
		return
	}
	in.closed = true
	for _, t := range in.tabs {
		if t.cancel != nil {
			t.cancel()
		}
	}
	if in.browserCancel != nil {
		in.browserCancel()
	}
	if in.allocCancel != nil {
		in.allocCancel() // waits for the process
	}
	in.proxy.Close()
	if in.temp {
		os.RemoveAll(in.profile)
	}
}

// openTab opens a new tab at about:blank and makes it current.
func (in *instance) openTab() (*tab, error) {
	if n := len(in.tabs); n >= maxTabs {
		return nil, fmt.Errorf("%d tabs are open, the most one browser keeps: close one first", n)
	}
	t := &tab{refs: map[string]int64{}}
	ctx, cancel := chromedp.NewContext(in.browserCtx, chromedp.WithListener(t.listen))
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, err
	}
	t.ctx, t.cancel = ctx, cancel
	t.id = chromedp.FromContext(ctx).Target.TargetID
	t.dismissDialogs()
	in.adopt(t)
	return t, nil
}

// sync brings the tab list in line with the browser's page targets:
// pages a page opened (window.open) are adopted, closed ones dropped.
func (in *instance) sync(ctx context.Context) ([]*target.Info, error) {
	infos, err := chromedp.Targets(in.browserCtx)
	if err != nil {
		return nil, err
	}
	pages := map[target.ID]*target.Info{}
	var order []*target.Info
	for _, ti := range infos {
		if ti.Type == "page" {
			pages[ti.TargetID] = ti
			order = append(order, ti)
		}
	}
	kept := in.tabs[:0]
	for _, t := range in.tabs {
		if pages[t.id] != nil {
			kept = append(kept, t)
		} else if t.cancel != nil {
			t.cancel()
		}
	}
	in.tabs = kept
	for _, ti := range order {
		if in.byID(ti.TargetID) == nil && len(in.tabs) < maxTabs {
			t := &tab{id: ti.TargetID, refs: map[string]int64{}}
			t.ctx, t.cancel = chromedp.NewContext(in.browserCtx, chromedp.WithTargetID(ti.TargetID), chromedp.WithListener(t.listen))
			cur := in.current
			in.adopt(t)
			in.current = cur
		}
	}
	if in.current != nil && in.byID(in.current.id) == nil {
		in.current = nil
	}
	if in.current == nil && len(in.tabs) > 0 {
		in.current = in.tabs[len(in.tabs)-1]
	}
	return order, nil
}

func (in *instance) byID(id target.ID) *tab {
	for _, t := range in.tabs {
		if t.id == id {
			return t
		}
	}
	return nil
}

// find is the tab a targetId argument names: a handle ("t2"), a raw
// target id, or a unique prefix of one; "" is the current tab.
func (in *instance) find(ref string) (*tab, error) {
	if ref == "" {
		if in.current == nil {
			return nil, errors.New("no tab is open: open one (action \"open\" with targetUrl)")
		}
		return in.current, nil
	}
	var hit *tab
	for _, t := range in.tabs {
		switch {
		case t.handle == ref || string(t.id) == ref:
			return t, nil
		case strings.HasPrefix(string(t.id), strings.ToUpper(ref)) || strings.HasPrefix(string(t.id), ref):
			if hit != nil {
				return nil, fmt.Errorf("targetId %q names more than one tab: give more of it, or the tabId (t1, …) from action \"tabs\"", ref)
			}
			hit = t
		}
	}
	if hit == nil {
		return nil, fmt.Errorf("no tab %q: action \"tabs\" lists the open ones", ref)
	}
	return hit, nil
}

// closeTab closes t's page.
func (in *instance) closeTab(ctx context.Context, t *tab) error {
	if _, err := chromedp.CallBrowser(in.browserCtx, target.CloseTarget, target.CloseTargetParams{TargetID: t.id}); err != nil {
		return err
	}
	if t.cancel != nil {
		t.cancel()
	}
	for i, x := range in.tabs {
		if x == t {
			in.tabs = append(in.tabs[:i], in.tabs[i+1:]...)
			break
		}
	}
	if in.current == t {
		in.current = nil
		if n := len(in.tabs); n > 0 {
			in.current = in.tabs[n-1]
		}
	}
	return nil
}

// listen runs in the tab's event loop: it must return at once and send
// no command. It keeps console messages and exceptions.
func (t *tab) listen(ev any) {
	var m consoleMsg
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		parts := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			parts = append(parts, remoteText(a))
		}
		m = consoleMsg{Type: string(ev.Type), Text: strings.Join(parts, " ")}
		if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
			f := ev.StackTrace.CallFrames[0]
			m.URL, m.Line = f.URL, f.LineNumber+1
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		m = consoleMsg{Type: "error", Text: d.Text, URL: d.URL, Line: d.LineNumber + 1}
		if d.Exception != nil && d.Exception.Description != "" {
			m.Text = d.Exception.Description
		}
	case *page.EventJavascriptDialogOpening:
		m = consoleMsg{Type: "dialog", Text: string(ev.Type) + ": " + ev.Message + " (dismissed by Talon)"}
	default:
		return
	}
	m.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
	if r := []rune(m.Text); len(r) > 2000 {
		m.Text = string(r[:2000]) + "…"
	}
	t.mu.Lock()
	t.console = append(t.console, m)
	if len(t.console) > maxConsole {
		t.console = t.console[len(t.console)-maxConsole:]
	}
	t.mu.Unlock()
}

// dismissDialogs answers every alert, confirm and prompt of the tab with
// "cancel", from its own goroutine, for as long as the tab lives.
func (t *tab) dismissDialogs() {
	dialogs := chromedp.Events(t.ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(t.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
}

// remoteText is a console argument as text: a string as it is, another
// value as JSON, an object by its description.
func remoteText(a *runtime.RemoteObject) string {
	if a == nil {
		return ""
	}
	if len(a.Value) > 0 {
		s := string(a.Value)
		if a.Type == runtime.RemoteObjectTypeString && len(s) >= 2 {
			var v string
			if err := jsonUnmarshal(a.Value, &v); err == nil {
				return v
			}
		}
		return s
	}
	if a.UnserializableValue != "" {
		return string(a.UnserializableValue)
	}
	return a.Description
}

// pidAlive reports whether the process pid still runs (for status).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscallZero) == nil
}

// findChromium is the browser to run: the configured path, else Debian's
// chromium, else one on PATH.
func findChromium(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	for _, n := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found (install Debian's chromium, or set browser.executablePath in the operator's config)")
}
