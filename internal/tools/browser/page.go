package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"talon/internal/netguard"
	"talon/internal/tools"
)

// Dir is the workspace directory screenshots and PDFs go to, one
// directory per day.
const Dir = "browser"

// do runs one action on the browser; b.mu is held.
func (b *instance) do(ctx context.Context, env *tools.Env, in request) (tools.Result, error) {
	mark := b.proxy.mark()
	res, err := b.dispatch(ctx, env, in)
	if err != nil || res.IsError {
		if refused := b.proxy.since(mark); len(refused) > 0 && err != nil {
			err = fmt.Errorf("%w (refused by the network rule: %s)", err, strings.Join(refusalTexts(refused), "; "))
		}
	}
	return res, err
}

func (b *instance) dispatch(ctx context.Context, env *tools.Env, in request) (tools.Result, error) {
	if in.action != "start" && in.action != "open" {
		if _, err := b.sync(ctx); err != nil {
			return tools.Result{}, err
		}
	}
	switch in.action {
	case "start":
		return tools.JSONResult(map[string]any{"ok": true, "running": true, "profile": profileName, "pid": b.pid, "tabCount": len(b.tabs)})
	case "tabs":
		return b.tabsResult(ctx)
	case "open":
		return b.open(ctx, env, in)
	}
	t, err := b.find(in.targetID)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch in.action {
	case "focus":
		if _, err := chromedp.CallBrowser(b.browserCtx, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.id}); err != nil {
			return tools.Result{}, err
		}
		b.current = t
		return tools.JSONResult(map[string]any{"ok": true, "targetId": string(t.id), "tabId": t.handle})
	case "close":
		if err := b.closeTab(ctx, t); err != nil {
			return tools.Result{}, err
		}
		return tools.JSONResult(map[string]any{"ok": true, "targetId": string(t.id), "tabId": t.handle})
	case "navigate":
		return b.navigate(ctx, env, t, in.targetURL)
	case "snapshot":
		return b.snapshotResult(ctx, t, snapOptions{
			interactive: in.interactive, compact: in.compact, depth: in.depth, query: in.query,
			maxChars: cmpOr(in.maxChars, DefaultMaxChars),
		})
	case "screenshot":
		return b.screenshot(ctx, env, t, in)
	case "pdf":
		return b.pdf(ctx, env, t)
	case "console":
		return t.consoleResult(in.level, cmpOr(in.limit, 50))
	case "act":
		return b.act(ctx, t, in.act)
	}
	return tools.Result{}, fmt.Errorf("action %q is not handled", in.action)
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// on is t's context bound to the call's ctx: it ends with either.
func on(ctx context.Context, t *tab) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(t.ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancelT context.CancelFunc
		c, cancelT = context.WithDeadline(c, d)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		return c, func() { stop(); cancelT(); cancel(nil) }
	}
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return c, func() { stop(); cancel(nil) }
}

// tabInfo is one tab as OpenClaw's tabs list it.
type tabInfo struct {
	TabID    string `json:"tabId"`
	TargetID string `json:"targetId"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	Type     string `json:"type"`
	Current  bool   `json:"current,omitempty"`
}

func (b *instance) tabsResult(ctx context.Context) (tools.Result, error) {
	infos, err := b.sync(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	list := []tabInfo{}
	for _, t := range b.tabs {
		i := slices.IndexFunc(infos, func(x *target.Info) bool { return x.TargetID == t.id })
		if i < 0 {
			continue
		}
		list = append(list, tabInfo{TabID: t.handle, TargetID: string(t.id), Title: infos[i].Title, URL: infos[i].URL, Type: "page", Current: t == b.current})
	}
	return tools.JSONResult(map[string]any{"ok": true, "tabs": list, "tabCount": len(list)})
}

// checkURL refuses what a navigation must not reach: any scheme but http
// and https (file:, data:, javascript:, chrome:, view-source:, …) and a
// literal address the rule refuses; a name is checked by the proxy when
// it is dialled.
func checkURL(raw string, g netguard.Options) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err == nil && u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("targetUrl %q: scheme %q is refused; only http and https pages may be opened", raw, u.Scheme)
	}
	if err != nil || u.Scheme == "" || u.Host == "" {
		if err == nil && u.Scheme == "" && !strings.Contains(raw, ":") {
			// A bare host ("example.com/x") means https, as a browser's
			// address bar would take it.
			return checkURL("https://"+raw, g)
		}
		if err == nil && u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("targetUrl %q: scheme %q is refused; only http and https pages may be opened", raw, u.Scheme)
		}
		return "", fmt.Errorf("targetUrl %q is not an absolute http(s) URL", raw)
	}
	if err := netguard.CheckURL(raw, g); err != nil {
		return "", fmt.Errorf("targetUrl %q: %w", raw, err)
	}
	return u.String(), nil
}

func (b *instance) open(ctx context.Context, env *tools.Env, in request) (tools.Result, error) {
	u, err := checkURL(in.targetURL, guard(env))
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if _, err := b.sync(ctx); err != nil {
		return tools.Result{}, err
	}
	t := b.current
	// The first tab of a fresh browser is blank: open there.
	if t == nil || len(b.tabs) > 1 || !b.blank(ctx, t) {
		if t, err = b.openTab(); err != nil {
			return tools.ErrorResult(err), nil
		}
	}
	if err := b.load(ctx, t, u); err != nil {
		return tools.ErrorResult(err), nil
	}
	return b.pageResult(ctx, t, false)
}

// blank says t shows nothing yet.
func (b *instance) blank(ctx context.Context, t *tab) bool {
	c, cancel := on(ctx, t)
	defer cancel()
	loc, err := chromedp.Run(c, chromedp.Location())
	return err == nil && (loc == "about:blank" || loc == "")
}

func (b *instance) navigate(ctx context.Context, env *tools.Env, t *tab, raw string) (tools.Result, error) {
	u, err := checkURL(raw, guard(env))
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if err := b.load(ctx, t, u); err != nil {
		return tools.ErrorResult(err), nil
	}
	b.current = t
	return b.pageResult(ctx, t, true)
}

// load navigates t to u and waits for the load event. A main document
// the proxy refused is an error naming the rule, also when the refusal
// came from a redirect.
func (b *instance) load(ctx context.Context, t *tab, u string) error {
	mark := b.proxy.mark()
	c, cancel := on(ctx, t)
	defer cancel()
	err := chromedp.Do(c, chromedp.Navigate(u))
	refused := b.proxy.since(mark)
	if err != nil {
		if len(refused) > 0 {
			return fmt.Errorf("navigation to %s blocked by the network rule: %s", u, strings.Join(refusalTexts(refused), "; "))
		}
		if ctx.Err() != nil {
			return fmt.Errorf("navigation to %s did not finish: %w", u, context.Cause(ctx))
		}
		return fmt.Errorf("navigation to %s failed: %w", u, err)
	}
	t.clearRefs()
	if len(refused) == 0 {
		return nil
	}
	loc, _ := chromedp.Run(c, chromedp.Location())
	if lu, err := url.Parse(loc); err == nil {
		for _, r := range refused {
			if strings.EqualFold(r.host, lu.Hostname()) {
				return fmt.Errorf("navigation to %s blocked by the network rule (at %s): %s", u, loc, r.text)
			}
		}
	}
	return nil
}

// pageResult is a tab's url and title, with a compact snapshot inline
// after a navigation (OpenClaw's navigate does so).
func (b *instance) pageResult(ctx context.Context, t *tab, withSnapshot bool) (tools.Result, error) {
	c, cancel := on(ctx, t)
	defer cancel()
	loc, err := chromedp.Run(c, chromedp.Location())
	if err != nil {
		return tools.Result{}, err
	}
	title, err := chromedp.Run(c, chromedp.Title())
	if err != nil {
		return tools.Result{}, err
	}
	out := map[string]any{"ok": true, "targetId": string(t.id), "tabId": t.handle, "url": loc, "title": title}
	if withSnapshot {
		s, err := t.snapshot(c, snapOptions{interactive: true, depth: -1, maxChars: navigateChars})
		if err != nil {
			return tools.Result{}, err
		}
		out["snapshot"], out["refs"], out["truncated"] = s.text, len(s.refs), s.truncated
	}
	return tools.JSONResult(out)
}

// snapshot renders t's accessibility tree and keeps its refs for act.
func (t *tab) snapshot(ctx context.Context, o snapOptions) (snapshot, error) {
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return snapshot{}, fmt.Errorf("reading the accessibility tree: %w", err)
	}
	s := render(axNodes(res.Nodes), o)
	t.mu.Lock()
	t.refs = s.refs
	t.mu.Unlock()
	return s, nil
}

func (t *tab) clearRefs() {
	t.mu.Lock()
	t.refs = map[string]int64{}
	t.mu.Unlock()
}

// axNodes converts the protocol's nodes.
func axNodes(in []*accessibility.Node) []axNode {
	out := make([]axNode, 0, len(in))
	for _, n := range in {
		if n == nil {
			continue
		}
		x := axNode{ID: string(n.NodeID), Ignored: n.Ignored, Role: axString(n.Role), Name: axString(n.Name),
			Value: axString(n.Value), Backend: int64(n.BackendDOMNodeID)}
		for _, c := range n.ChildIDs {
			x.Children = append(x.Children, string(c))
		}
		if len(n.Properties) > 0 {
			props := map[string]json.RawMessage{}
			for _, p := range n.Properties {
				if p != nil && p.Value != nil {
					props[string(p.Name)] = json.RawMessage(p.Value.Value)
				}
			}
			x.States = states(props)
		}
		out = append(out, x)
	}
	return out
}

// axString is an AX value as text.
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return strings.Trim(string(v.Value), `"`)
}

func (b *instance) snapshotResult(ctx context.Context, t *tab, o snapOptions) (tools.Result, error) {
	c, cancel := on(ctx, t)
	defer cancel()
	s, err := t.snapshot(c, o)
	if err != nil {
		return tools.Result{}, err
	}
	loc, _ := chromedp.Run(c, chromedp.Location())
	out := map[string]any{
		"ok": true, "format": "ai", "targetId": string(t.id), "tabId": t.handle, "url": loc,
		"snapshot": s.text, "refs": len(s.refs), "truncated": s.truncated,
		"stats": map[string]int{"lines": s.lines, "chars": len(s.text), "refs": len(s.refs), "interactive": s.interactive},
	}
	if o.query != "" {
		out["matches"] = s.matches
	}
	return tools.JSONResult(out)
}

func (b *instance) screenshot(ctx context.Context, env *tools.Env, t *tab, in request) (tools.Result, error) {
	if err := writable(env); err != nil {
		return tools.ErrorResult(err), nil
	}
	c, cancel := on(ctx, t)
	defer cancel()
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
	ext := ".png"
	if in.imgType == "jpeg" {
		q := int64(80)
		p.Format, p.Quality, ext = page.CaptureScreenshotFormatJpeg, &q, ".jpg"
	}
	if in.fullPage {
		m, err := chromedp.Call(c, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return tools.Result{}, err
		}
		if m.CSSContentSize != nil {
			beyond := true
			p.CaptureBeyondViewport = &beyond
			p.Clip = &page.Viewport{Width: m.CSSContentSize.Width, Height: min(m.CSSContentSize.Height, 16384), Scale: 1}
		}
	}
	res, err := chromedp.Call(c, page.CaptureScreenshot, p)
	if err != nil {
		return tools.Result{}, err
	}
	if len(res.Data) > MaxScreenshot {
		return tools.Errorf("the screenshot is %s, over the %d MiB limit: take the viewport (no fullPage) or type jpeg", tools.ByteSize(len(res.Data)), MaxScreenshot>>20), nil
	}
	return b.saved(c, env, t, "screenshot", ext, res.Data)
}

func (b *instance) pdf(ctx context.Context, env *tools.Env, t *tab) (tools.Result, error) {
	if err := writable(env); err != nil {
		return tools.ErrorResult(err), nil
	}
	c, cancel := on(ctx, t)
	defer cancel()
	data, err := chromedp.Run(c, chromedp.PrintToPDF(chromedp.PDFPrintBackground()))
	if err != nil {
		return tools.Result{}, err
	}
	if len(data) > MaxPDF {
		return tools.Errorf("the PDF is %s, over the %d MiB limit", tools.ByteSize(len(data)), MaxPDF>>20), nil
	}
	return b.saved(c, env, t, "page", ".pdf", data)
}

// writable says why a file cannot be saved in the workspace.
func writable(env *tools.Env) error {
	switch {
	case env.Workspace == nil:
		return errors.New("this run has no workspace to save the file in")
	case env.ReadOnly:
		return errors.New("the workspace is read-only (workspaceAccess \"ro\"): nothing was saved")
	}
	return nil
}

// saved writes data as a new file under Dir/<day>/ and returns its path.
func (b *instance) saved(ctx context.Context, env *tools.Env, t *tab, stem, ext string, data []byte) (tools.Result, error) {
	now := time.Now().UTC()
	p, err := tools.CreateNew(env.Workspace, path.Join(Dir, now.Format("2006-01-02")), stem+"-"+now.Format("150405")+ext, data)
	if err != nil {
		return tools.Errorf("saving the %s: %v", stem, tools.FSError(err)), nil
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return tools.JSONResult(map[string]any{"ok": true, "path": p, "targetId": string(t.id), "tabId": t.handle, "url": loc, "bytes": len(data)})
}

func (t *tab) consoleResult(level string, limit int) (tools.Result, error) {
	t.mu.Lock()
	msgs := slices.Clone(t.console)
	t.mu.Unlock()
	total := len(msgs)
	if level = strings.ToLower(strings.TrimSpace(level)); level != "" {
		if level == "warn" {
			level = "warning"
		}
		msgs = slices.DeleteFunc(msgs, func(m consoleMsg) bool { return m.Type != level })
	}
	if len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	if msgs == nil {
		msgs = []consoleMsg{}
	}
	return tools.JSONResult(map[string]any{"ok": true, "targetId": string(t.id), "tabId": t.handle, "messages": msgs, "total": total, "returned": len(msgs)})
}
