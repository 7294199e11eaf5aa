package discord

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

// TestMain serves fakes for TestIdleMemory from a child process, so the
// fakes' own connections are not counted in the bots' memory.
func TestMain(m *testing.M) {
	if n := os.Getenv("DISCORD_FAKES"); n != "" {
		serveFakes(n)
		return
	}
	os.Exit(m.Run())
}

// serveFakes starts n fakes, prints "rest gateway" per line and serves
// until stdin closes.
func serveFakes(n string) {
	var count int
	fmt.Sscan(n, &count)
	for range count {
		s := discordtest.New()
		defer s.Close()
		fmt.Println(s.URL, s.GatewayURL)
	}
	io.Copy(io.Discard, os.Stdin)
}

// TestIdleMemory measures what a connected, idle bot holds: heap and
// goroutine stacks after GC, with N bots connected to N fakes running in
// a child process, divided by N. Idle REST keep-alive connections are
// closed first: in production every account shares one pool to
// discord.com, so they are not per bot.
func TestIdleMemory(t *testing.T) {
	const bots = 50
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("DISCORD_FAKES=%d", bots))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	var urls [][2]string
	sc := bufio.NewScanner(stdout)
	for len(urls) < bots && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			urls = append(urls, [2]string{f[0], f[1]})
		}
	}
	if len(urls) != bots {
		t.Fatalf("child served %d fakes", len(urls))
	}
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	before := liveBytes()
	var all []*Bot
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	for _, u := range urls {
		b, err := New(Options{Token: discordtest.Token, APIURL: u[0], GatewayURL: u[1], HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
		go b.Run(runCtx, func(context.Context, channel.Envelope) error { return nil })
	}
	for _, b := range all {
		for !b.Status().Connected || b.cachedChannels() == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("bots did not connect")
			case <-time.After(time.Millisecond):
			}
		}
	}
	tr.CloseIdleConnections()
	after := liveBytes()
	perBot := float64(after-before) / bots
	t.Logf("idle connected bot: %.1f KB (heap + stacks after GC, %d bots)", perBot/1024, bots)
	if perBot > 100*1024 {
		t.Errorf("an idle bot holds %.1f KB, goal under 100 KB", perBot/1024)
	}
	runtime.KeepAlive(all)
}

func liveBytes() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

func (b *Bot) cachedChannels() int {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	return len(b.cache.channels)
}

// BenchmarkDispatch is the bot's own cost of one MESSAGE_CREATE frame:
// decode, map to an envelope, accept (a no-op), advance the sequence.
func BenchmarkDispatch(b *testing.B) {
	bot, err := New(Options{Token: "t", HTTPClient: http.DefaultClient})
	if err != nil {
		b.Fatal(err)
	}
	bot.botID = discordtest.BotID
	bot.cache.addChannel(channelObj{ID: discordtest.ChannelID, Type: chanGuildText, Name: "general"})
	bot.cache.setBotRoles(discordtest.GuildID, []string{discordtest.BotRoleID})
	g := &gwConn{bot: bot, sess: &session{}, accept: func(context.Context, channel.Envelope) error { return nil }}
	frame, _ := json.Marshal(map[string]any{"op": 0, "s": 42, "t": "MESSAGE_CREATE", "d": map[string]any{
		"id": "1600000000000000123", "channel_id": discordtest.ChannelID, "guild_id": discordtest.GuildID,
		"author":  map[string]any{"id": discordtest.UserID, "username": "alice", "global_name": "Alice"},
		"member":  map[string]any{"roles": []string{discordtest.OtherRoleID}, "nick": "al"},
		"content": "<@" + discordtest.BotID + "> what is the weather like in Lisbon tomorrow?", "timestamp": "2026-11-27T03:00:00.000000+00:00",
		"type": 0, "mentions": []map[string]any{{"id": discordtest.BotID, "username": "talon", "bot": true}}, "mention_roles": []string{},
	}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var p payload
		if err := json.Unmarshal(frame, &p); err != nil {
			b.Fatal(err)
		}
		if err := g.dispatch(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayRoundTrip is one message from the fake's UserSays to
// accept over loopback (the fake's encoding and the WebSocket included).
func BenchmarkGatewayRoundTrip(b *testing.B) {
	fake := discordtest.Start(b)
	bot, err := New(Options{Token: discordtest.Token, APIURL: fake.URL, HTTPClient: fake.Client()})
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go bot.Run(ctx, func(_ context.Context, e channel.Envelope) error { got <- e.MessageID; return nil })
	if err := fake.WaitReady(ctx, 1); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		id := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "hi", MentionBot: true})
		if <-got != id {
			b.Fatal("out of order")
		}
	}
}
