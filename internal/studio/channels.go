package studio

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// channelsView is the Channels page: each account's state and what is
// wrong with it, the pairing requests waiting for an owner, and the
// sessions the channels made.
type channelsView struct {
	Accounts []channelAccount
	Issues   []channelIssue
	Warnings []string
	Requests []pairingRequest
	Sessions []channelSession
	Approved string // the sender just approved, for the notice
}

// channelAccount is one row of channels.status's channelAccounts.
type channelAccount struct {
	Channel          string `json:"-"`
	Label            string `json:"-"`
	AccountID        string `json:"accountId"`
	Enabled          *bool  `json:"enabled"`
	Configured       *bool  `json:"configured"`
	Running          bool   `json:"running"`
	Connected        bool   `json:"connected"`
	Mode             string `json:"mode"`
	DMPolicy         string `json:"dmPolicy"`
	LastError        string `json:"lastError"`
	LastInboundAt    *int64 `json:"lastInboundAt"`
	LastOutboundAt   *int64 `json:"lastOutboundAt"`
	LastConnectedAt  *int64 `json:"lastConnectedAt"`
	WebhookPath      string `json:"webhookPath"`
	ReconnectAttempt int    `json:"reconnectAttempts"`
}

// channelIssue is a statusIssues entry: the problem and its fix.
type channelIssue struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId"`
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Fix       string `json:"fix"`
}

// pairingRequest is a channels.pairing.list request (codes are never
// listed: the owner approves by requestId here, or by code with the CLI).
type pairingRequest struct {
	RequestID   string `json:"requestId"`
	Channel     string `json:"channel"`
	AccountID   string `json:"accountId"`
	SenderID    string `json:"senderId"`
	SenderLabel string `json:"senderLabel"`
	CreatedAt   int64  `json:"createdAt"`
	ExpiresAt   int64  `json:"expiresAt"`
}

// channelSession is a session a channel conversation made.
type channelSession struct {
	Agent, Channel string
	Row            sessionRow
}

// chatChannels are the channels Talon runs, in the order Studio lists
// them when the gateway gives none.
var chatChannels = []string{"telegram", "slack", "discord"}

func (s *Server) channelsPage(q *req) { s.showChannels(q, http.StatusOK, "", "") }

// showChannels renders the Channels page with an error or the sender an
// approval just admitted.
func (s *Server) showChannels(q *req, status int, errMsg, approved string) {
	v := &channelsView{Approved: approved}
	p := s.newPage(q, "Channels", "channels", v)
	p.Error = errMsg
	var st struct {
		ChannelOrder    []string                    `json:"channelOrder"`
		ChannelLabels   map[string]string           `json:"channelLabels"`
		ChannelAccounts map[string][]channelAccount `json:"channelAccounts"`
		StatusIssues    []channelIssue              `json:"statusIssues"`
		Warnings        []string                    `json:"warnings"`
	}
	if err := s.call(q, "channels.status", map[string]any{}, &st); err != nil {
		p.Error = s.errText(q, err)
		s.render(q.w, http.StatusBadGateway, "channels", p)
		return
	}
	for _, ch := range st.ChannelOrder {
		for _, a := range st.ChannelAccounts[ch] {
			a.Channel, a.Label = ch, st.ChannelLabels[ch]
			if a.Label == "" {
				a.Label = ch
			}
			v.Accounts = append(v.Accounts, a)
		}
	}
	v.Issues, v.Warnings = st.StatusIssues, st.Warnings
	var pl struct {
		Requests []pairingRequest `json:"requests"`
	}
	if err := s.call(q, "channels.pairing.list", map[string]any{}, &pl); err != nil && p.Error == "" {
		p.Error = s.errText(q, err)
	}
	v.Requests = pl.Requests
	sessions, err := s.channelSessions(q)
	if err != nil && p.Error == "" {
		p.Error = s.errText(q, err)
	}
	v.Sessions = sessions
	s.render(q.w, status, "channels", p)
}

// channelSessions are the sessions of every agent whose key a channel
// conversation made (agent:<id>:<channel>:…).
func (s *Server) channelSessions(q *req) ([]channelSession, error) {
	agents, err := s.agents(q)
	if err != nil {
		return nil, err
	}
	var out []channelSession
	for _, a := range agents.Agents {
		rows, err := s.sessions(q, a.ID)
		if err != nil {
			return out, err
		}
		for _, r := range rows {
			parts := strings.SplitN(r.Key, ":", 4)
			if len(parts) >= 4 && slices.Contains(chatChannels, parts[2]) {
				out = append(out, channelSession{Agent: a.ID, Channel: parts[2], Row: r})
			}
		}
	}
	return out, nil
}

// pairingIDRE is the shape of a requestId (R7.8: 32 base64url
// characters); answerPairing bounds the length.
var pairingIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// channelIDRE is the shape of the channel and account ids a form may
// carry; answerPairing bounds their length.
var channelIDRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// answerPairing approves or dismisses a pairing request.
func (s *Server) answerPairing(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	id, action := q.r.PathValue("request"), q.r.PathValue("action")
	ch, account := q.r.PostFormValue("channel"), q.r.PostFormValue("account")
	switch {
	case len(id) > 64 || !pairingIDRE.MatchString(id):
		s.showChannels(q, http.StatusBadRequest, "That is not a pairing request id.", "")
		return
	case len(ch) > 64 || len(account) > 64 || !channelIDRE.MatchString(ch) || !channelIDRE.MatchString(account):
		s.showChannels(q, http.StatusBadRequest, "The request names no channel account.", "")
		return
	case action != "approve" && action != "dismiss":
		s.showChannels(q, http.StatusNotFound, fmt.Sprintf("%q is not something a pairing request can do: approve or dismiss.", action), "")
		return
	}
	var res struct {
		SenderID string `json:"senderId"`
	}
	params := map[string]any{"channel": ch, "accountId": account, "requestId": id}
	if action == "approve" {
		params["notify"] = true
	}
	if err := s.call(q, "channels.pairing."+action, params, &res); err != nil {
		s.showChannels(q, http.StatusBadRequest, s.errText(q, err), "")
		return
	}
	if action == "approve" {
		s.showChannels(q, http.StatusOK, "", res.SenderID)
		return
	}
	http.Redirect(q.w, q.r, q.base+"/channels", http.StatusSeeOther)
}

// when shows an epoch-milliseconds time of a channel account, or "never".
func when(ms *int64) string {
	if ms == nil || *ms == 0 {
		return "never"
	}
	return time.UnixMilli(*ms).UTC().Format("2006-01-02 15:04 UTC")
}
