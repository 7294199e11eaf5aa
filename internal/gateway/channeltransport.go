package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/discord"
	"talon/internal/channel/slack"
	"talon/internal/channel/telegram"
	"talon/internal/config"
	"talon/internal/netguard"
)

// channelHTTPTimeout bounds one request of a channel adapter; Telegram's
// long poll fits inside it.
const channelHTTPTimeout = 60 * time.Second

// channelTransport builds the adapter of one channel account of tenant t.
// Its secrets come from the process environment for the operator's own
// config, and from the tenant's own config env for a tenant (never the
// process's). A tenant's connections go through netguard, held to the
// ceiling's network rules, and a tenant may not name a tokenFile: that
// is a file on the gateway's host.
func (s *Server) channelTransport(t *tenant, rt *runtime, a channel.Account) (channel.Transport, error) {
	env := s.opts.Env
	client := &http.Client{Timeout: channelHTTPTimeout}
	if t.id != "" {
		vars := config.EnvVars(rt.file.Config)
		env = func(k string) string { return vars[k] }
		guard := netguard.Options{Timeout: channelHTTPTimeout}
		if rt.root != nil && rt.root.ceil != nil {
			guard = rt.root.ceil.Net()
			guard.Timeout = channelHTTPTimeout
		}
		client = netguard.NewClient(guard)
		if a.TokenFile != "" {
			return nil, fmt.Errorf("channels.%s: tokenFile names a file on the gateway's host, which a tenant may not read; set botToken (a \"${NAME}\" of the tenant's env)", a.Channel)
		}
	}
	bot, app := a.FallbackEnv()
	secret := func(key string, sec *config.Secret, fallback string) (string, error) {
		v, err := sec.Resolve(env)
		if err != nil {
			return "", fmt.Errorf("channels.%s %s: %w", a.Channel, key, err)
		}
		if v == "" && fallback != "" {
			v = env(fallback)
		}
		return strings.TrimSpace(v), nil
	}
	log := s.log.With("tenant", t.id, "channel", a.Channel, "account", a.ID)
	switch a.Channel {
	case "telegram":
		token, err := secret("botToken", a.BotToken, bot)
		if err != nil {
			return nil, err
		}
		if token == "" && a.TokenFile != "" {
			if token, err = readTokenFile(a.TokenFile); err != nil {
				return nil, fmt.Errorf("channels.telegram tokenFile: %w", err)
			}
		}
		if token == "" {
			return nil, fmt.Errorf("channels.telegram account %q has no bot token: set botToken (or TELEGRAM_BOT_TOKEN for the default account)", a.ID)
		}
		var hook *telegram.Webhook
		if a.WebhookURL != "" {
			sec, err := secret("webhookSecret", a.WebhookSecret, "")
			if err != nil {
				return nil, err
			}
			hook = &telegram.Webhook{URL: a.WebhookURL, Secret: sec}
		}
		return telegram.New(telegram.Options{AccountID: a.ID, Token: token, APIRoot: a.APIRoot, HTTPClient: client, Webhook: hook, LinkPreview: a.LinkPreview, Log: log})
	case "slack":
		botToken, err := secret("botToken", a.BotToken, bot)
		if err != nil {
			return nil, err
		}
		appToken, err := secret("appToken", a.AppToken, app)
		if err != nil {
			return nil, err
		}
		signing, err := secret("signingSecret", a.SigningSecret, "")
		if err != nil {
			return nil, err
		}
		return slack.New(slack.Options{AccountID: a.ID, Mode: a.Mode, BotToken: botToken, AppToken: appToken, SigningSecret: signing, APIURL: a.APIURL, HTTPClient: client, Log: log})
	case "discord":
		token, err := secret("token", a.Token, bot)
		if err != nil {
			return nil, err
		}
		content, embeds := a.MessageContent, a.SuppressEmbeds
		return discord.New(discord.Options{AccountID: a.ID, Token: token, APIURL: a.APIURL, GatewayURL: a.GatewayURL, HTTPClient: client,
			Intents: discord.Intents{MessageContent: &content, GuildMembers: a.GuildMembers}, SuppressEmbeds: &embeds, Log: log})
	}
	return nil, fmt.Errorf("channels.%s: Talon has no adapter for this channel", a.Channel)
}

// readTokenFile reads a bot token from a regular file (not a symlink,
// spec channels.md §11), as the operator's config names it.
func readTokenFile(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file (symlinks are refused)")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
