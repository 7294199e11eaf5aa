package pdf

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"talon/internal/tools"
)

// TestChildHostile: files that make the parser loop forever, overflow its
// stack or allocate without bound — each of which would hang a goroutine
// or end the gateway in process — end in the child, and the tool says why
// in a tool error. The CPU limit is one second (the kernel kills at two).
func TestChildHostile(t *testing.T) {
	catalog := "<< /Type /Catalog /Pages 2 0 R >>"
	cases := []struct {
		name string
		data []byte
		want string
	}{
		// Object 2 (the page tree) is in object stream 3, whose /N makes
		// the parser read tokens past its end for ever.
		{"object stream with huge /N", xrefStreamPDF(map[int]string{1: catalog,
			3: "<< /Type /ObjStm /N 9223372036854775807 /First 4 /Length 4 >>\nstream\n9 0 \nendstream"},
			map[int]int{2: 3}, 0), "used more than 1s of CPU"},
		// Stream 3 extends itself: the search for object 2 goes round.
		{"/Extends loop", xrefStreamPDF(map[int]string{1: catalog,
			3: "<< /Type /ObjStm /N 0 /First 4 /Extends 3 0 R /Length 4 >>\nstream\n9 0 \nendstream"},
			map[int]int{2: 3}, 0), "used more than 1s of CPU"},
		// The cross-reference section's /Prev is itself.
		{"/Prev loop", prevLoopPDF(), "used more than 1s of CPU"},
		// Object 3, the object stream, is said to be inside itself: each
		// lookup recurses.
		{"object stream inside itself", xrefStreamPDF(map[int]string{1: catalog},
			map[int]int{2: 3, 3: 3}, 0), "stack overflowed"},
		// A cross-reference stream of 2^36 entries is a 2.5 TB table.
		{"huge /Size", xrefStreamPDF(map[int]string{1: catalog}, nil, 1<<36), "needed more than 256 MiB of memory"},
	}
	root := workspace(t, nil)
	tool := &pdfTool{child: testChild(t, ChildLimits{CPU: time.Second, Memory: 256 << 20, Wall: time.Minute})}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(tmpPath(t, root, "h.pdf"), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := tool.Run(context.Background(), &tools.Env{Workspace: root}, json.RawMessage(`{"pdf":"h.pdf"}`))
			if err != nil {
				t.Fatalf("Run = %v, want a tool error", err)
			}
			if !res.IsError || !strings.Contains(res.Text, c.want) {
				t.Fatalf("got IsError=%v %q, want an error with %q", res.IsError, res.Text, c.want)
			}
		})
	}
}

// TestChildEnds: a child past the wall clock is killed and reported; the
// call's context ending kills it and returns the context's error; a child
// that dies is a tool error; and the child's stdout is bounded.
func TestChildEnds(t *testing.T) {
	doc := makePDF(t, "", []string{"Hello"})
	lim := ChildLimits{CPU: time.Second, Memory: 256 << 20, Wall: time.Minute}
	sh := func(script string, l ChildLimits) Child {
		return Child{Path: "/bin/sh", Args: []string{"-c", script}, Limits: l}
	}
	short := lim
	short.Wall = 200 * time.Millisecond
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		child Child
		ctx   context.Context
		want  string
		ctxEr bool
	}{
		{"wall clock", sh("exec sleep 60", short), context.Background(), "took longer than 200ms", false},
		{"cancelled", sh("exec sleep 60", lim), cancelled, "", true},
		{"killed", sh("kill -SEGV $$", lim), context.Background(), "killed by segmentation fault", false},
		{"exit status", sh("echo 'boom' >&2; exit 3", lim), context.Background(), "the PDF reader failed (exit status 3): boom", false},
		{"too much output", sh("cat >/dev/null; head -c 3000000 /dev/zero", lim), context.Background(), "wrote more than", false},
		{"garbage", sh("cat >/dev/null; echo nonsense", lim), context.Background(), "reading the PDF reader's answer", false},
		{"real child", *testChild(t, lim), context.Background(), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.child.Extract(c.ctx, doc, nil, DefaultLimits)
			switch {
			case c.ctxEr:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
			case c.want == "":
				if err != nil || len(d.Pages) != 1 || d.Pages[0].Text != "Hello" {
					t.Fatalf("got %+v, %v", d, err)
				}
			case err == nil || !strings.Contains(err.Error(), c.want):
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestChildConfined: the child's parsing thread can open no file, its
// CPU, file-size and core limits are set, and a child never starts
// another.
func TestChildConfined(t *testing.T) {
	c := testChild(t, DefaultChildLimits)
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = []string{probeEnv + "=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	var abi int
	if _, err := fmt.Sscanf(string(out), "abi %d", &abi); err != nil {
		t.Fatalf("probe printed %q", out)
	}
	want := []string{"cpu 1 2\n", "fsize 0 0\n", "core 0 0\n", "open: open /etc/hostname: permission denied\n"}
	if abi < 2 {
		want[3] = "open: allowed\n" // no Landlock in this kernel: the rlimits alone
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("probe printed %q, want %q in it", out, w)
		}
	}
	t.Setenv(childEnv, "1")
	if _, err := DefaultChild(); err == nil || !strings.Contains(err.Error(), "itself a PDF reader child") {
		t.Fatalf("DefaultChild in a child = %v, want a refusal", err)
	}
}

func testChild(t *testing.T, lim ChildLimits) *Child {
	t.Helper()
	c, err := DefaultChild()
	if err != nil {
		t.Fatal(err)
	}
	c.Limits = lim
	return &c
}

func tmpPath(t *testing.T, root *os.Root, name string) string {
	t.Helper()
	return root.Name() + "/" + name
}

// xrefStreamPDF assembles a PDF of the numbered objects with a
// cross-reference stream: packed maps an object to the object stream said
// to hold it. size, when not 0, is the stream's /Size.
func xrefStreamPDF(objs map[int]string, packed map[int]int, size int64) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	n := 0
	for k := range objs {
		n = max(n, k)
	}
	for k := range packed {
		n = max(n, k)
	}
	offs := map[int]int{}
	for i := 1; i <= n; i++ {
		if o, ok := objs[i]; ok {
			offs[i] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i, o)
		}
	}
	x := n + 1
	offs[x] = b.Len()
	var rows bytes.Buffer
	for i := 0; i <= x; i++ {
		row := [7]byte{}
		switch s, inStream := packed[i]; {
		case inStream:
			row[0] = 2
			binary.BigEndian.PutUint32(row[1:5], uint32(s))
		case i == 0:
			binary.BigEndian.PutUint16(row[5:7], 65535)
		default:
			row[0] = 1
			binary.BigEndian.PutUint32(row[1:5], uint32(offs[i]))
		}
		rows.Write(row[:])
	}
	if size == 0 {
		size = int64(x + 1)
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /Index [0 %d] /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n",
		x, size, x+1, rows.Len())
	b.Write(rows.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", offs[x])
	return b.Bytes()
}

// prevLoopPDF is handPDF's file with a trailer whose /Prev is its own
// cross-reference section.
func prevLoopPDF() []byte {
	data := handPDF(map[int]string{1: "<< /Type /Catalog /Pages 2 0 R >>", 2: "<< /Type /Pages /Kids [] /Count 0 >>"})
	i := bytes.LastIndex(data, []byte("startxref\n"))
	var off int
	fmt.Sscanf(string(data[i+len("startxref\n"):]), "%d", &off)
	return bytes.Replace(data, []byte("/Root 1 0 R"), fmt.Appendf(nil, "/Root 1 0 R /Prev %d", off), 1)
}

// TestChildReaders: with every reader slot taken a call waits, and its
// end stops the wait without starting a child; a freed slot lets it run.
func TestChildReaders(t *testing.T) {
	for range cap(readers) {
		readers <- struct{}{}
	}
	c := Child{Path: "/bin/sh", Args: []string{"-c", "exit 3"}, Limits: ChildLimits{Wall: 5 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Extract(ctx, []byte("%PDF"), nil, Limits{MaxChars: 100}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with no free reader: %v, want the call's deadline", err)
	}
	<-readers
	_, err := c.Extract(context.Background(), []byte("%PDF"), nil, Limits{MaxChars: 100})
	for range cap(readers) - 1 {
		<-readers
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a free reader: %v, want the child's own failure", err)
	}
}
