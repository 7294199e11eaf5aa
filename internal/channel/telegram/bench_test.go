package telegram

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

// envFakes makes the test binary a process serving that many fake Bot
// APIs over TLS (see fakeProcess), so that the memory of idle bots is
// measured without the fake's own in the same heap.
const envFakes = "TALON_TGTEST_FAKES"

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(envFakes)); err == nil && n > 0 {
		fakeProcess(n)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeProcess prints the certificate, then "URL TOKEN" per fake; each
// line read from stdin is answered with how many polls wait in all.
func fakeProcess(n int) {
	fakes := make([]*tgtest.Server, n)
	for i := range fakes {
		fakes[i] = tgtest.New(true)
		defer fakes[i].Close()
	}
	fmt.Println(base64.StdEncoding.EncodeToString(fakes[0].Certificate().Raw))
	for _, f := range fakes {
		fmt.Println(f.URL, f.Token)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		waiting := 0
		for _, f := range fakes {
			waiting += f.Idle()
		}
		fmt.Println(waiting)
	}
}

// BenchmarkIdlePollingMemory measures what an idle polling account
// costs: accounts bots long-poll over TLS (one shared client, as a
// tenant's) against fakes in another process; the heap and stacks in use
// after a GC, less what they were before the bots started, divided by
// the number of bots.
func BenchmarkIdlePollingMemory(b *testing.B) {
	const accounts = 200
	for b.Loop() {
		b.ReportMetric(idleBytes(b, accounts), "B/idle-account")
	}
}

func idleBytes(b *testing.B, accounts int) float64 {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envFakes+"="+strconv.Itoa(accounts))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	line := func() string {
		if !out.Scan() {
			b.Fatalf("fake process: %v", out.Err())
		}
		return out.Text()
	}
	der, _ := base64.StdEncoding.DecodeString(line())
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	type fake struct{ url, token string }
	fakes := make([]fake, accounts)
	for i := range fakes {
		u, tok, _ := strings.Cut(line(), " ")
		fakes[i] = fake{u, tok}
	}
	waiting := func() int {
		fmt.Fprintln(stdin, "?")
		n, _ := strconv.Atoi(line())
		return n
	}

	before := inUse()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, accounts)
	for i, f := range fakes {
		bot, err := New(Options{AccountID: "a" + strconv.Itoa(i), Token: f.token, APIRoot: f.url, HTTPClient: client})
		if err != nil {
			b.Fatal(err)
		}
		go func() { done <- bot.Run(ctx, func(context.Context, channel.Envelope) error { return nil }) }()
	}
	for deadline := time.Now().Add(time.Minute); waiting() < accounts; {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d bots polling after a minute", waiting(), accounts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := inUse()
	cancel()
	for range accounts {
		<-done
	}
	client.CloseIdleConnections()
	return float64(after-before) / float64(accounts)
}

// inUse is the heap and stack memory in use after a collection.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkInboundPolling is an update from the fake's queue to accept:
// getUpdates over loopback HTTP, decoding, mapping, the offset.
func BenchmarkInboundPolling(b *testing.B) {
	s := tgtest.New(false)
	defer s.Close()
	for i := range b.N {
		s.UserSays(tgtest.Say{From: ann, Chat: -1001, Text: "message " + strconv.Itoa(i) + " for @talon_test_bot"})
	}
	bot, err := New(Options{AccountID: "main", Token: s.Token, APIRoot: s.URL, HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		_ = bot.Run(ctx, func(context.Context, channel.Envelope) error {
			if got.Add(1) == int64(b.N) {
				close(all)
			}
			return nil
		})
	}()
	<-all
}

// BenchmarkInboundWebhook is one webhook post to accept, in process.
func BenchmarkInboundWebhook(b *testing.B) {
	bot, err := New(Options{AccountID: "main", Token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		HTTPClient: &http.Client{}, Webhook: &Webhook{URL: "https://x.test/hook", Secret: testSecret}})
	if err != nil {
		b.Fatal(err)
	}
	accept := channel.Accept(func(context.Context, channel.Envelope) error { return nil })
	bot.accept.Store(&accept)
	bot.info = Info{ID: 99, Username: "talon_bot"}
	body := `{"update_id":5,"message":{"message_id":1,"from":{"id":42,"is_bot":false,"first_name":"A"},"chat":{"id":-1001,"type":"supergroup","title":"Ops"},"date":1700000000,"text":"hi @talon_bot","entities":[{"type":"mention","offset":3,"length":10}]}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		req.Header.Set(secretHeader, testSecret)
		w := httptest.NewRecorder()
		bot.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}
