package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkMove measures a move's copy: a drained tenant of 64 MB in 512
// files streamed from one node's Export into another's Import over
// loopback (the platform pipes one into the other). The drain itself
// costs what the tenant's runs take to finish.
//
//	go test -run '^$' -bench Move -benchtime 5x ./internal/platform/node/
func BenchmarkMove(b *testing.B) {
	const files, size = 512, 128 << 10
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		src, dst := startNode(b, "", 0), startNode(b, "", 0)
		id := fmt.Sprintf("t%d", i)
		tn, err := src.client.CreateTenant(ctx, id, nil)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, size)
		for f := range files {
			_, _ = rand.Read(buf)
			writeFile(b, filepath.Join(tn.Dir, "agents", "main", fmt.Sprintf("d%d", f%16), fmt.Sprintf("f%d", f)), string(buf))
		}
		if err := src.client.Drain(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(src.client.Export(ctx, id, pw)) }()
		if err := dst.client.Import(ctx, id, pr); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(files * size)
	}
}
