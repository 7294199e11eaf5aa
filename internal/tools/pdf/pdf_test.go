package pdf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"talon/internal/tools"
)

// makePDF writes a PDF of pages, each page's lines as text, with fpdf (a
// real producer: Type1 fonts in WinAnsi, one BT..ET per line), encrypted
// when password is set ("-": encrypted with an empty user password, which
// readers open without asking).
func makePDF(t testing.TB, password string, pages ...[]string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	if password != "" {
		f.SetProtection(fpdf.CnProtectPrint, strings.TrimPrefix(password, "-"), "owner")
	}
	f.SetFont("Helvetica", "", 12)
	tr := f.UnicodeTranslatorFromDescriptor("") // UTF-8 to the core fonts' cp1252
	for _, lines := range pages {
		f.AddPage()
		for _, l := range lines {
			f.Cell(0, 8, tr(l))
			f.Ln(10)
		}
	}
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func workspace(t *testing.T, files map[string][]byte) *os.Root {
	t.Helper()
	dir := t.TempDir()
	for n, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestPDF(t *testing.T) {
	report := makePDF(t, "",
		[]string{"Quarterly report", "Revenue grew by 12 percent."},
		[]string{"Risks: supply chain delays."},
		[]string{"Appendix with café and naïve words."})
	other := makePDF(t, "", []string{"Second document"})
	locked := makePDF(t, "s3cret", []string{"Confidential terms"})
	ownerOnly := makePDF(t, "-", []string{"Print-protected terms"})
	corrupt := report[:len(report)/2]
	root := workspace(t, map[string][]byte{
		"docs/report.pdf": report, "other.pdf": other, "locked.pdf": locked, "owner-only.pdf": ownerOnly,
		"cut.pdf": corrupt, "notes.txt": []byte("just text, not a PDF"),
	})
	cases := []struct {
		name      string
		sandboxed bool
		args      string
		want      []string // in the result
		not       []string // not in the result
		isErr     bool
	}{
		{"all pages", false, `{"pdf":"docs/report.pdf"}`,
			[]string{"Prompt: Analyze this PDF document.", "[PDF text] docs/report.pdf", "3 pages; text of pages 1,2,3",
				"--- page 1 ---\nQuarterly report\nRevenue grew by 12 percent.", "--- page 2 ---\nRisks: supply chain delays.", "café and naïve"}, nil, false},
		{"page filter", false, `{"pdf":"docs/report.pdf","pages":"2-3","prompt":"List the risks"}`,
			[]string{"Prompt: List the risks", "text of pages 2,3", "supply chain"}, []string{"Quarterly"}, false},
		{"page past the end", false, `{"pdf":"docs/report.pdf","pages":"7"}`,
			[]string{"no requested PDF pages exist in this 3-page document"}, nil, true},
		{"bad page filter", false, `{"pdf":"docs/report.pdf","pages":"two"}`, []string{`invalid page number "two"`}, nil, true},
		{"two, deduplicated", false, `{"pdf":"other.pdf","pdfs":["docs/report.pdf","other.pdf"," other.pdf "]}`,
			[]string{"[PDF 1 text] other.pdf", "[PDF 2 text] docs/report.pdf"}, []string{"[PDF 3"}, false},
		{"absolute and file URL", false, `{"pdf":"file:///workspace/other.pdf"}`, []string{"Second document"}, nil, false},
		{"model is reported unused", false, `{"pdf":"other.pdf","model":"openai/gpt-5.4-mini"}`,
			[]string{`Model "openai/gpt-5.4-mini" was not called`}, nil, false},
		{"encrypted", false, `{"pdf":"locked.pdf"}`, []string{`PDF "locked.pdf": the PDF is encrypted, and Talon's pdf tool does not read encrypted PDFs`}, nil, true},
		{"encrypted, right password", false, `{"pdf":"locked.pdf","password":"s3cret"}`, []string{"passwords are not supported"}, []string{"Confidential"}, true},
		{"encrypted, no user password", false, `{"pdf":"owner-only.pdf"}`, []string{"the PDF is encrypted"}, nil, true},
		{"password on a plain PDF", false, `{"pdf":"other.pdf","password":"x"}`, []string{"Second document"}, nil, false},
		{"truncated file", false, `{"pdf":"cut.pdf"}`, []string{`PDF "cut.pdf": the PDF cannot be read`}, nil, true},
		{"not a PDF", false, `{"pdf":"notes.txt"}`, []string{"Expected PDF but got text/plain; charset=utf-8: notes.txt"}, nil, true},
		{"missing", false, `{"pdf":"nope.pdf"}`, []string{`PDF "nope.pdf": does not exist`}, nil, true},
		{"escape", false, `{"pdf":"../etc/passwd"}`, []string{"outside the workspace"}, nil, true},
		{"absolute outside", false, `{"pdf":"/etc/passwd"}`, []string{"outside the workspace"}, nil, true},
		{"no pdf", false, `{"prompt":"x"}`, []string{"pdf required: provide a path or URL to a PDF document"}, nil, true},
		{"too many", false, `{"pdfs":["1","2","3","4","5","6","7","8","9","10","11"]}`, []string{"Too many PDFs: 11 provided, maximum is 10."}, nil, true},
		{"unsupported scheme", false, `{"pdf":"ftp://example.com/a.pdf"}`, []string{"Unsupported PDF reference: ftp://example.com/a.pdf."}, nil, true},
		{"remote in sandbox", true, `{"pdf":"https://example.com/a.pdf"}`, []string{"Sandboxed PDF tool does not allow remote URLs."}, nil, true},
		{"size cap", false, `{"pdf":"docs/report.pdf","maxBytesMb":0.001}`, []string{"the limit is 1048 bytes"}, nil, true},
		{"size cap above ceiling", false, `{"pdf":"docs/report.pdf","maxBytesMb":51}`, []string{`"maxBytesMb" must be above 0 and at most 50`}, nil, true},
		{"unknown argument", false, `{"pdf":"other.pdf","depth":2}`, []string{"depth"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := &tools.Env{Workspace: root, Sandboxed: c.sandboxed}
			res, err := New().Run(context.Background(), env, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.isErr {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, c.isErr, res.Text)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result lacks %q:\n%s", w, res.Text)
				}
			}
			for _, w := range c.not {
				if strings.Contains(res.Text, w) {
					t.Errorf("result has %q:\n%s", w, res.Text)
				}
			}
		})
	}
}

// TestPDFRemote: a URL is fetched through the guard — refused on loopback
// unless the operator allows it — following redirects; sizes and statuses
// are checked.
func TestPDFRemote(t *testing.T) {
	doc := makePDF(t, "", []string{"Fetched over HTTP"})
	mux := http.NewServeMux()
	mux.HandleFunc("/a.pdf", func(w http.ResponseWriter, r *http.Request) { w.Write(doc) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a.pdf", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "ftp://x/a.pdf", http.StatusFound) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusNotFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("%PDF-"), 1<<20)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	root := workspace(t, nil)
	cases := []struct {
		name     string
		loopback bool
		path     string
		want     string
		isErr    bool
	}{
		{"fetched", true, "/a.pdf", "Fetched over HTTP", false},
		{"redirect followed", true, "/moved", "Fetched over HTTP", false},
		{"loopback refused", false, "/a.pdf", "netguard", true},
		{"redirect loop", true, "/loop", "more than 5 redirects", true},
		{"redirect scheme", true, "/ftp", `refusing a redirect to scheme "ftp"`, true},
		{"status", true, "/gone", "the server answered 404 Not Found", true},
		{"size", true, "/big", "the limit is 1048576", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := &tools.Env{Workspace: root, AllowLoopback: c.loopback}
			args, _ := json.Marshal(map[string]any{"pdf": srv.URL + c.path, "maxBytesMb": 1})
			res, err := New().Run(context.Background(), env, args)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.isErr || !strings.Contains(res.Text, c.want) {
				t.Fatalf("got IsError=%v %q, want %v with %q", res.IsError, res.Text, c.isErr, c.want)
			}
		})
	}
}

// TestExtractHostile: files built to hang or exhaust a parser are errors
// or bounded work, never a hang or a panic.
func TestExtractHostile(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string // in the error, or in a page's Err
	}{
		{"empty", nil, "does not start with %PDF-"},
		{"header only", []byte("%PDF-1.7\n"), "cannot be read"},
		{"huge page count, cyclic tree", handPDF(map[int]string{
			1: "<< /Type /Catalog /Pages 2 0 R >>",
			2: "<< /Type /Pages /Kids [2 0 R] /Count 1000000000 >>"}), "page tree is deeper than"},
		{"wide loop", handPDF(map[int]string{
			1: "<< /Type /Catalog /Pages 2 0 R >>",
			2: "<< /Type /Pages /Kids [2 0 R 2 0 R 2 0 R 2 0 R] /Count 20 >>"}), "page tree"},
		{"no pages", handPDF(map[int]string{
			1: "<< /Type /Catalog /Pages 2 0 R >>",
			2: "<< /Type /Pages /Kids [] /Count 0 >>"}), "declares no pages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Extract(context.Background(), c.data, nil, DefaultLimits)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				for _, p := range doc.Pages {
					got += p.Err
				}
			}
			if !strings.Contains(got, c.want) {
				t.Fatalf("got %q (doc %+v), want %q", got, doc, c.want)
			}
		})
	}
}

// TestExtractBomb: a page whose content inflates past the limit is
// skipped with a note, the hostile CMap counts do not allocate, and a
// cancelled context stops the extraction.
func TestExtractBomb(t *testing.T) {
	big := strings.Repeat("BT /F1 12 Tf (x) Tj ET\n", 1<<16) // 1.5 MB
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap 1 begincodespacerange <00> <ff> endcodespacerange " +
		"2000000000 beginbfchar <41> <0042> endbfchar endcmap end end"
	data := handPDF(map[int]string{
		1: "<< /Type /Catalog /Pages 2 0 R >>",
		2: "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		3: "<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>",
		4: "<< /Type /Page /Parent 2 0 R /Contents 6 0 R /Resources << /Font << /F1 7 0 R >> >> >>",
		5: stream(big),
		6: stream("BT /F1 12 Tf (AAA) Tj ET"),
		7: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 8 0 R >>",
		8: stream(cmap),
	})
	lim := DefaultLimits
	lim.MaxContentBytes = 1 << 20
	doc, err := Extract(context.Background(), data, nil, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 2 || !strings.Contains(doc.Pages[0].Err, "more than 1048576 bytes decompressed") {
		t.Fatalf("page 1 = %+v, want skipped for its size", doc.Pages)
	}
	if doc.Pages[1].Text != "BBB" {
		t.Fatalf("page 2 = %+v, want BBB through the ToUnicode map", doc.Pages[1])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Extract(ctx, data, nil, DefaultLimits); err != context.Canceled {
		t.Fatalf("cancelled Extract = %v, want context.Canceled", err)
	}
}

// handPDF assembles a PDF of the numbered objects with a correct xref.
func handPDF(objs map[int]string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	n := 0
	for k := range objs {
		n = max(n, k)
	}
	offs := make([]int, n+1)
	for i := 1; i <= n; i++ {
		if o, ok := objs[i]; ok {
			offs[i] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i, o)
		}
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", n+1)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%010d 00000 n \n", offs[i])
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", n+1, x)
	return b.Bytes()
}

func stream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)
}
