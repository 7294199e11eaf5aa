package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/testtier"
)

// testImage is the image the tests run: busybox-static alone, imported
// from a tar built here (no registry is reachable).
const testImage = "talon-busybox:test2"

var (
	engineOnce sync.Once
	engineErr  error
)

// needEngine returns settings for a backend on the local engine with the
// test image imported. Without an engine the test fails under CI=true and
// is skipped otherwise, with the reason and the fix.
func needEngine(tb testing.TB) map[string]any {
	tb.Helper()
	testtier.RequireFull(tb, "Docker")
	engineOnce.Do(func() { engineErr = prepareEngine() })
	if engineErr != nil {
		testtier.Unavailable(tb, "docker engine not usable: %v (scripts/dockerd.sh installs docker.io and busybox-static and starts dockerd, as root)", engineErr)
	}
	return map[string]any{"image": testImage}
}

func prepareEngine() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := New(map[string]any{"image": testImage})
	if err != nil {
		return err
	}
	err = b.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "not found locally") {
		return err
	}
	archive, err := busyboxImage()
	if err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(testImage, ":")
	q := url.Values{"fromSrc": {"-"}, "repo": {repo}, "tag": {tag}}
	v, err := b.engine.negotiate(ctx)
	if err != nil {
		return err
	}
	resp, err := b.engine.do(ctx, "POST", "/v"+v+"/images/create", q, "application/x-tar", bytes.NewReader(archive))
	if err != nil {
		return fmt.Errorf("importing %s: %w", testImage, err)
	}
	out := new(bytes.Buffer)
	_, _ = out.ReadFrom(resp.Body)
	resp.Body.Close()
	if strings.Contains(out.String(), `"error"`) {
		return fmt.Errorf("importing %s: %s", testImage, out)
	}
	return b.Check(ctx)
}

// busyboxImage is a root filesystem with a static busybox, a link for each
// of its applets, and the directories the sandbox mounts over.
func busyboxImage() ([]byte, error) {
	bin, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("busybox not found: apt-get install busybox-static")
	}
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", bin, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			f.Close()
			return nil, fmt.Errorf("%s is dynamically linked: apt-get install busybox-static", bin)
		}
	}
	f.Close()
	code, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	list, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bin, err)
	}
	buf := new(bytes.Buffer)
	tw := tar.NewWriter(buf)
	for _, d := range []string{"bin", "dev", "etc", "proc", "sys", "tmp", "var", "var/tmp", "run", "workspace", "agent"} {
		mode := int64(0o755)
		if d == "tmp" || d == "var/tmp" {
			// As in any distribution's image: runc gives a tmpfs the
			// mode of the directory it covers.
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(code))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(code); err != nil {
		return nil, err
	}
	for _, a := range strings.Fields(string(list)) {
		if a == "busybox" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644, Size: int64(len(passwd))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write([]byte(passwd)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
