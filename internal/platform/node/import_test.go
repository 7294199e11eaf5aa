package node

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestImportRefusesEarly: an archive refused at its first entry is
// answered as refused (not as a broken connection) while the caller is
// still streaming the rest of it, as a move pipes Export into Import.
func TestImportRefusesEarly(t *testing.T) {
	n := startNode(t, "", 0)
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/"})
		chunk := strings.Repeat("x", 1<<20)
		for i := range 64 {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("f%d", i), Size: int64(len(chunk)), Mode: 0o600}); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := tw.Write([]byte(chunk)); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(tw.Close())
	}()
	err := n.client.Import(context.Background(), "acme", pr)
	pr.CloseWithError(errors.New("done"))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Import: %v, want ErrInvalid", err)
	}
}
