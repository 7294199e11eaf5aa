package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"talon/internal/tools"
)

// settleWindow is how long an act waits for a navigation it may have
// started to begin; one that begins is then awaited to its load event.
const settleWindow = 400 * time.Millisecond

func (b *instance) act(ctx context.Context, t *tab, x actInput) (tools.Result, error) {
	if x.kind == "close" {
		if err := b.closeTab(ctx, t); err != nil {
			return tools.Result{}, err
		}
		return tools.JSONResult(map[string]any{"ok": true, "targetId": string(t.id), "tabId": t.handle})
	}
	c, cancel := on(ctx, t)
	defer cancel()
	var node cdp.BackendNodeID
	if x.ref != "" {
		t.mu.Lock()
		id, ok := t.refs[x.ref]
		t.mu.Unlock()
		if !ok {
			return tools.Errorf("unknown ref %q for this tab: take a snapshot and use one of its refs", x.ref), nil
		}
		node = cdp.BackendNodeID(id)
	}
	nav := watchNavigation(c)
	defer nav.stop()
	if err := b.perform(c, x, node); err != nil {
		if stale(err) {
			return tools.Errorf("ref %s is no longer on the page: take a new snapshot", x.ref), nil
		}
		var me modelError
		if errors.As(err, &me) {
			return tools.ErrorResult(me), nil
		}
		return tools.Result{}, err
	}
	navigated := nav.settle(c)
	if navigated {
		t.clearRefs()
	}
	loc, err := chromedp.Run(c, chromedp.Location())
	if err != nil {
		return tools.Result{}, err
	}
	out := map[string]any{"ok": true, "kind": x.kind, "targetId": string(t.id), "tabId": t.handle, "url": loc}
	if navigated {
		out["navigated"] = true
	}
	return tools.JSONResult(out)
}

// modelError is a problem of the call the model can fix.
type modelError struct{ error }

// stale says err means the node of a ref is gone.
func stale(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No node with given id") || strings.Contains(s, "Could not find node") ||
		strings.Contains(s, "Node is detached")
}

func (b *instance) perform(c context.Context, x actInput, node cdp.BackendNodeID) error {
	switch x.kind {
	case "click":
		px, py, err := center(c, node)
		if err != nil {
			return err
		}
		opts := []chromedp.MouseOption{chromedp.Button(cmpStr(x.button, "left"))}
		if x.double {
			opts = append(opts, chromedp.ClickCount(2))
		}
		return chromedp.Do(c, chromedp.MouseClickXY(px, py, opts...))
	case "hover":
		px, py, err := center(c, node)
		if err != nil {
			return err
		}
		_, err = chromedp.Call(c, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: px, Y: py})
		return err
	case "scrollIntoView":
		_, err := chromedp.Call(c, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node})
		return err
	case "type":
		return typeInto(c, node, x.text, x.submit)
	case "press":
		return press(c, x.key)
	case "select":
		return selectValues(c, node, x.values)
	case "resize":
		_, err := chromedp.Call(c, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: int64(x.width), Height: int64(x.height), DeviceScaleFactor: 1})
		return err
	case "wait":
		return wait(c, x)
	}
	return fmt.Errorf("act kind %q is not handled", x.kind)
}

func cmpStr(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// center scrolls the node into view and returns the middle of its first
// box, in viewport coordinates.
func center(c context.Context, node cdp.BackendNodeID) (float64, float64, error) {
	if _, err := chromedp.Call(c, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node}); err != nil {
		return 0, 0, err
	}
	q, err := chromedp.Call(c, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: node})
	if err != nil {
		return 0, 0, err
	}
	for _, quad := range q.Quads {
		if len(quad) == 8 {
			return (quad[0] + quad[2] + quad[4] + quad[6]) / 4, (quad[1] + quad[3] + quad[5] + quad[7]) / 4, nil
		}
	}
	return 0, 0, modelError{errors.New("the element has no box on the page (hidden or empty): try another ref")}
}

// call runs fn (a JavaScript function) with the node as this and args,
// and returns its result's JSON.
func call(c context.Context, node cdp.BackendNodeID, fn string, args ...any) (json.RawMessage, error) {
	obj, err := chromedp.Call(c, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node})
	if err != nil {
		return nil, err
	}
	defer chromedp.Call(c, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.Object.ObjectID})
	var cargs []*runtime.CallArgument
	for _, a := range args {
		v, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: v})
	}
	yes := true
	res, err := chromedp.Call(c, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn, ObjectID: obj.Object.ObjectID, Arguments: cargs, ReturnByValue: &yes, AwaitPromise: &yes,
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if e := res.ExceptionDetails.Exception; e != nil && e.Description != "" {
			msg = e.Description
		}
		return nil, modelError{errors.New(strings.TrimPrefix(msg, "Error: "))}
	}
	if res.Result == nil {
		return nil, nil
	}
	return json.RawMessage(res.Result.Value), nil
}

// typeInto focuses the field, selects what it holds so the text replaces
// it (as OpenClaw's type does), inserts text, and presses Enter when
// submit.
func typeInto(c context.Context, node cdp.BackendNodeID, text string, submit bool) error {
	if _, err := chromedp.Call(c, dom.Focus, dom.FocusParams{BackendNodeID: node}); err != nil {
		if strings.Contains(err.Error(), "not focusable") {
			return modelError{errors.New("the element cannot take text (not focusable): use the ref of a text field")}
		}
		return err
	}
	if _, err := call(c, node, `function() {
		if (typeof this.select === "function") { this.select(); return; }
		if (this.isContentEditable) { document.execCommand("selectAll"); return; }
		throw new Error("the element is not a text field: use the ref of a textbox");
	}`); err != nil {
		return err
	}
	if text == "" {
		if err := chromedp.Do(c, chromedp.KeyEvent(kb.Delete)); err != nil {
			return err
		}
	} else if _, err := chromedp.Call(c, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		return err
	}
	if submit {
		return chromedp.Do(c, chromedp.KeyEvent(kb.Enter))
	}
	return nil
}

// keyNames are the key names press takes (OpenClaw's, with its aliases).
var keyNames = map[string]string{
	"enter": kb.Enter, "return": kb.Enter, "escape": kb.Escape, "esc": kb.Escape, "tab": kb.Tab,
	"backspace": kb.Backspace, "delete": kb.Delete, "del": kb.Delete, "space": " ",
	"arrowdown": kb.ArrowDown, "arrowup": kb.ArrowUp, "arrowleft": kb.ArrowLeft, "arrowright": kb.ArrowRight,
	"home": kb.Home, "end": kb.End, "pagedown": kb.PageDown, "pageup": kb.PageUp, "insert": kb.Insert,
}

var modifierNames = map[string]chromedp.Modifier{
	"control": chromedp.ModifierCtrl, "ctrl": chromedp.ModifierCtrl, "alt": chromedp.ModifierAlt,
	"shift": chromedp.ModifierShift, "meta": chromedp.ModifierMeta, "cmd": chromedp.ModifierMeta,
	"command": chromedp.ModifierMeta,
}

// parseKey reads "Enter", "a", "Control+Shift+T" into the key and its
// modifiers.
func parseKey(s string) (string, []chromedp.Modifier, error) {
	parts := strings.Split(s, "+")
	if strings.HasSuffix(s, "++") || s == "+" {
		parts = append(strings.Split(strings.TrimSuffix(s, "++"), "+"), "+")
		if s == "+" {
			parts = []string{"+"}
		}
	}
	var mods []chromedp.Modifier
	for _, m := range parts[:len(parts)-1] {
		mod, ok := modifierNames[strings.ToLower(strings.TrimSpace(m))]
		if !ok {
			return "", nil, fmt.Errorf("key %q: %q is not a modifier (Control, Alt, Shift, Meta)", s, m)
		}
		mods = append(mods, mod)
	}
	last := parts[len(parts)-1]
	if k, ok := keyNames[strings.ToLower(last)]; ok {
		return k, mods, nil
	}
	if r := []rune(last); len(r) == 1 {
		return last, mods, nil
	}
	if len(last) >= 2 && last[0] == 'F' {
		return "", nil, fmt.Errorf("key %q: function keys are not supported", s)
	}
	return "", nil, fmt.Errorf("key %q is not a key name Talon knows (Enter, Escape, Tab, Backspace, Delete, Arrow…, Home, End, PageUp, PageDown, Space, or one character)", s)
}

func press(c context.Context, key string) error {
	k, mods, err := parseKey(key)
	if err != nil {
		return modelError{err}
	}
	return chromedp.Do(c, chromedp.KeyEvent(k, chromedp.KeyModifiers(mods...)))
}

// selectValues selects the options of a select element whose value or
// label is one of values, and fires input and change as a user's choice
// would.
func selectValues(c context.Context, node cdp.BackendNodeID, values []string) error {
	_, err := call(c, node, `function(vals) {
		if (this.tagName !== "SELECT") throw new Error("the element is not a select (a "+this.tagName.toLowerCase()+"): use the ref of a combobox or listbox");
		const want = new Set(vals); let n = 0;
		for (const o of this.options) {
			const hit = want.has(o.value) || want.has(o.label) || want.has(o.text.trim());
			o.selected = hit && (this.multiple || n === 0);
			if (hit) n++;
		}
		if (n === 0) throw new Error("no option of the select matches " + JSON.stringify(vals));
		this.dispatchEvent(new Event("input", {bubbles: true}));
		this.dispatchEvent(new Event("change", {bubbles: true}));
		return n;
	}`, values)
	return err
}

// wait waits timeMs, or until the page's text shows text or no longer
// shows textGone, polling every 100 ms within the call's timeout.
func wait(c context.Context, x actInput) error {
	if x.wait > 0 {
		t := time.NewTimer(x.wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.Done():
			return context.Cause(c)
		}
	}
	if x.text == "" && x.textGone == "" {
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := chromedp.Run(c, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		if err != nil {
			return err
		}
		if (x.text == "" || strings.Contains(body, x.text)) && (x.textGone == "" || !strings.Contains(body, x.textGone)) {
			return nil
		}
		select {
		case <-tick.C:
		case <-c.Done():
			return modelError{fmt.Errorf("the text did not appear (or disappear) before the timeout: %w", context.Cause(c))}
		}
	}
}

// navWatch sees whether an act starts a navigation of the tab.
type navWatch struct {
	cancel  context.CancelFunc
	started chan struct{}
	loaded  chan struct{}
}

// watchNavigation subscribes, before the act, to the tab's navigation
// start and load events.
func watchNavigation(c context.Context) *navWatch {
	sc, cancel := context.WithCancel(c)
	w := &navWatch{cancel: cancel, started: make(chan struct{}, 1), loaded: make(chan struct{}, 1)}
	starts := chromedp.Events(sc, page.FrameStartedLoading)
	loads := chromedp.Events(sc, page.LoadEventFired)
	go func() {
		for _, err := range starts {
			if err != nil {
				return
			}
			select {
			case w.started <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		for _, err := range loads {
			if err != nil {
				return
			}
			select {
			case w.loaded <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

// settle waits settleWindow for a navigation to start and, when one did,
// for its load event (within the call's time); it says whether one did.
func (w *navWatch) settle(c context.Context) bool {
	t := time.NewTimer(settleWindow)
	defer t.Stop()
	select {
	case <-w.started:
	case <-w.loaded:
		return true
	case <-t.C:
		return false
	case <-c.Done():
		return false
	}
	select {
	case <-w.loaded:
	case <-c.Done():
	}
	return true
}

func (w *navWatch) stop() { w.cancel() }
