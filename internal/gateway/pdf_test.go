package gateway

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"talon/internal/policy"
	"talon/protocol"
	"talon/protocol/client"
)

// TestPDFTool runs the pdf tool through the gateway and the agent loop
// with the inspect model, in an unsandboxed session (a file of the agent's
// workspace; a file that crashes the parser is a tool error and the
// gateway goes on) and in a bwrap-sandboxed one (a PDF written inside the
// sandbox by exec is read through the sandbox's view; remote URLs and
// escapes are refused).
func TestPDFTool(t *testing.T) {
	doc := textPDF("Quarterly revenue grew", "by 12 percent")
	cases := []struct {
		name    string
		sandbox bool
		files   map[string]string // in the agent's workspace on the host
		calls   []pdfCall         // in turn
		want    []string          // in the answer to each call
	}{
		{name: "unsandboxed", files: map[string]string{"docs/q3.pdf": doc, "bad.pdf": crashPDF()},
			calls: []pdfCall{
				{"pdf", map[string]any{"pdf": "docs/q3.pdf", "prompt": "What grew?"}},
				{"pdf", map[string]any{"pdf": "bad.pdf"}},
				{"pdf", map[string]any{"pdf": "docs/q3.pdf", "pages": "1"}},
			},
			want: []string{"Prompt: What grew?\n\n[PDF text] docs/q3.pdf: ", "stack overflowed", "by 12 percent"}},
		{name: "sandboxed", sandbox: true, files: map[string]string{"host-only.pdf": doc},
			calls: []pdfCall{
				{"exec", map[string]any{"command": "printf '%s' '" + doc + "' > in-box.pdf && id -u"}},
				{"pdf", map[string]any{"pdf": "in-box.pdf"}},
				{"pdf", map[string]any{"pdf": "host-only.pdf"}},
				{"pdf", map[string]any{"pdf": "https://example.com/a.pdf"}},
				{"pdf", map[string]any{"pdf": "../talon.json"}},
			},
			want: []string{"1000", "Quarterly revenue grew", `PDF "host-only.pdf": does not exist`,
				"Sandboxed PDF tool does not allow remote URLs.", "outside the workspace"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.sandbox {
				needBwrap(t)
			}
			dir := t.TempDir()
			for name, data := range c.files {
				writeFile(t, filepath.Join(dir, "workspace", name), []byte(data))
			}
			sandbox, boxTools := "", ""
			if c.sandbox {
				// pdf is not in OpenClaw's default sandbox allowlist.
				sandbox, boxTools = `,sandbox:{mode:"all"}`, `,sandbox:{tools:{allow:["exec","pdf"]}}`
			}
			writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{agents:{defaults:{model:"inspect"`+sandbox+`}},`+
				`tools:{alsoAllow:["pdf"],exec:{security:"full",ask:"off"}`+boxTools+`}}`))
			ts := startServer(t, dir, nil)
			for i, call := range c.calls {
				rep := ts.post(nil, callBody(t, call.tool, call.args))
				if rep.status != http.StatusOK {
					t.Fatalf("%s %v: status %d: %s", call.tool, call.args, rep.status, rep.body)
				}
				if !strings.Contains(rep.content, c.want[i]) {
					t.Errorf("%s %v: answer %q, want it to contain %q", call.tool, call.args, rep.content, c.want[i])
				}
			}
		})
	}
}

type pdfCall struct {
	tool string
	args map[string]any
}

// crashPDF's object 3, an object stream, is said (by its cross-reference
// stream) to be inside itself: the parser recurses until its stack
// overflows, a fatal error in any process.
func crashPDF() string {
	var b strings.Builder
	b.WriteString("%PDF-1.7\n")
	catalog := b.Len()
	b.WriteString("1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n")
	xref := b.Len()
	// W [1 4 2]: type, offset or stream, generation or index.
	rows := []byte{0, 0, 0, 0, 0, 0xff, 0xff, 1, 0, 0, 0, byte(catalog), 0, 0,
		2, 0, 0, 0, 3, 0, 0, 2, 0, 0, 0, 3, 0, 0, 1, 0, 0, byte(xref >> 8), byte(xref), 0, 0}
	fmt.Fprintf(&b, "4 0 obj\n<< /Type /XRef /Size 5 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n",
		len(rows), rows, xref)
	return b.String()
}

// textPDF is a one-page PDF of plain ASCII (so that a shell can write it),
// one text line per argument.
func textPDF(lines ...string) string {
	content := "BT /F1 12 Tf 72 720 Td"
	for i, l := range lines {
		if i > 0 {
			content += " 0 -14 Td"
		}
		content += " (" + l + ") Tj"
	}
	content += " ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	xref := fmt.Sprintf("xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for i, o := range objs {
		xref += fmt.Sprintf("%010d 00000 n \n", b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	fmt.Fprintf(&b, "%strailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", xref, len(objs)+1, b.Len())
	return b.String()
}

// TestPDFExplain: tools.explain counts pdf among the built tools, priced,
// and gates it as OpenClaw does (§1.3: constructed whenever the agent dir
// is known; in no group or profile): offered with no profile, removed by
// a restricting profile unless alsoAllow names it, and removed by the
// default sandbox allowlist.
func TestPDFExplain(t *testing.T) {
	cases := []struct {
		name      string
		extra     string
		sandboxed bool
		state     string
	}{
		{"no profile", ``, false, policy.StateAvailable},
		{"coding profile", `,"tools":{"profile":"coding"}`, false, policy.StateRemoved},
		{"coding profile and alsoAllow", `,"tools":{"profile":"coding","alsoAllow":["pdf"]}`, false, policy.StateAvailable},
		{"default sandbox allowlist", ``, true, policy.StateRemoved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, url := startWS(t, c.extra)
			cl, err := client.Dial(context.Background(), url, client.Options{Token: wsToken, Scopes: []string{protocol.ScopeRead}})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var x policy.Explanation
			if err := cl.Call(context.Background(), "tools.explain", map[string]any{"agentId": "main", "sandboxed": c.sandboxed}, &x); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(x.Tools, func(r policy.ToolRow) bool { return r.Name == "pdf" })
			if i < 0 {
				t.Fatalf("no pdf row in %+v", x.Tools)
			}
			if r := x.Tools[i]; r.State != c.state || r.Tokens == 0 {
				t.Fatalf("pdf row %+v, want state %s and a token cost", r, c.state)
			}
		})
	}
}
