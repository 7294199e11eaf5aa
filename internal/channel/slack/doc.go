// Package slack is one Slack bot account as a channel.Transport: it receives
// messages over Socket Mode (a WebSocket the app opens) or the HTTP Events
// API (signed POSTs the gateway routes to App.ServeHTTP), turns them into
// channel.Envelope values, and posts replies with chat.postMessage. It
// also fetches inbound files, sends files, reads history and reactions, and
// posts buttons whose presses come back as messages.
//
// # Acknowledgement
//
// An event is acknowledged to Slack only after the hub's Accept returned
// nil — the Socket Mode envelope is answered with its envelope_id, the
// Events API request with 200 — so a crash between receiving and storing
// loses nothing: Slack redelivers what was not acknowledged (Socket Mode on
// the next connection, the Events API with X-Slack-Retry-Num, up to three
// times). Spec R12.1 says to ack at once, before processing; Talon acks
// after the durable store instead, which is still well inside Slack's 3 s.
//
// # Deduplication
//
// DeliveryID is Slack's event_id, the same on every redelivery of one event,
// so a retried delivery can be recognised. One user message can also arrive
// as two events with different event_ids: a `message` event and an
// `app_mention` event for the same message. Both envelopes carry the same
// Peer, ThreadID and MessageID (the message's ts) and differ only in
// DeliveryID and Mentioned. The hub must therefore dedupe by channel +
// account + peer + thread + MessageID (spec R2.1 step 2), not by DeliveryID
// alone; when the app_mention copy arrives second it carries no new
// information except that the bot was mentioned, which the message copy
// already says because its text contains <@BOT>.
//
// app_mention events carry no channel_type, so the adapter learns each
// conversation's kind from message events and, for one it has not seen, asks
// conversations.info once (scopes channels:read, groups:read, mpim:read,
// im:read); both copies of a message thus map to the same Peer.
//
// # Mentions
//
// Mentioned is set for <@BOT> in the text, an app_mention, a reply in a
// thread the bot started (parent_user_id), and a reply in a thread the bot
// has posted in since the process started (remembered in memory, bounded).
// MentionsOthers is set for any other <@U…> or <!subteam^…>.
//
// # Outbound
//
// Send posts one chunk with chat.postMessage (mrkdwn, unfurl_links and
// unfurl_media false) and returns the message's ts. A post is sent once: a
// lost response, a timeout or a 5xx is reported as unconfirmed and never
// retried, because Slack has no idempotency key and a resend can post twice
// (OpenClaw issue #22780). Only a 429 — Slack refused the post before doing
// it — is retried, after its Retry-After.
//
// React, Edit and Delete (channel.Actor) call reactions.add and
// reactions.remove, chat.update and chat.delete on the message's ts, under
// the same rule: only a 429 is retried. A reaction already there, or one
// to remove that is not, counts as done. These methods want a DM's own id
// (D…), not the user id Send posts to: it is learned from the user's
// inbound DMs, else asked of conversations.open (scope im:write).
//
// SendFile (channel.Attacher) shares a file as Slack's files.uploadV2
// does: files.getUploadURLExternal, the bytes POSTed to the upload URL
// (which carries its own authorisation: no token is sent there), then
// files.completeUploadExternal with channel_id, thread_ts and the caption
// as initial_comment (scope files:write). Slack answers the file's id and
// shares it in a message asynchronously, so Sent.MessageID is the file id
// (F…), which React, Edit and Delete refuse. Files over Slack's 1 GB are
// refused with channel.ErrTooLarge.
//
// # Buttons
//
// An Outbound with Buttons is posted with blocks: its text as section
// blocks (3,000 characters each, cut at a line end) and one actions block
// of buttons (label ≤ 75 characters, value = Data ≤ 2,000, action_id
// talon_button_<i>), keeping text as the notification fallback. A press
// arrives as a block_actions payload — a Socket Mode "interactive"
// envelope, or over HTTP a form POST whose payload field holds the JSON,
// signed and checked exactly as events — and becomes an Envelope from the
// presser with Pressed and Mentioned set, Text the button's value,
// MessageID the press's action_ts, DeliveryID its trigger_id, in the
// conversation and thread of the message the button is on. It is
// acknowledged (the envelope answered, or 200 with an empty body, which
// leaves the message as it is) only after Accept returned nil; a press
// without a user, a message or a button value, and any other interactive
// payload, is acknowledged and dropped.
//
// # History
//
// Read (channel.Reader) returns up to 100 messages (20 when no limit is
// given), newest first: conversations.history for a conversation,
// conversations.replies for a thread (Target.ThreadID), whose parent is
// included. Slack returns a thread oldest first, so Read walks it, 200
// replies a page, up to ten pages, and keeps the newest. Before and After
// map to latest and oldest (exclusive); After gives the newest messages
// after the one named, as Slack does, and Around is refused: Slack cannot
// read around a message. Reactions lists reactions.get (full) with the
// users Slack names and Me for the bot's own. Scopes: channels:history,
// groups:history, im:history, mpim:history, reactions:read.
//
// Typing shows nothing: Slack has no typing indicator for bot tokens outside
// assistant threads, and the typingReaction fallback needs the inbound
// message's ts, which channel.Target does not carry. Typing returns nil.
//
// # Files
//
// A message's files[] become Envelope.Media (Ref is url_private_download,
// Kind from the MIME type, Slack's audio clips are voice); a message with
// files and no text is admitted with Text "". A file Slack withholds
// (hidden_by_limit, tombstone) is left out. Fetch downloads one with the
// bot token (scope files:read) as a Bearer header, and only from an https
// URL on files.slack.com or from the configured apiUrl's scheme and host;
// Go's client drops the header on a redirect to another host. An announced
// size over the limit is refused before any request, a larger body after
// reading max+1 bytes, both wrapping channel.ErrTooLarge; Slack's sign-in
// page (what a token without files:read gets, with status 200) is an error.
//
// # Not built
//
// Polls (Slack has none, so App is no channel.Pollster); slash commands and
// interactive payloads other than button presses (answered, not acted
// on); updating the pressed message; reading around a message; relay
// mode; user tokens; Enterprise Grid org-wide keys
// (team:<T>:channel:<C>); user-group mentions (<!subteam^…>) containing
// the bot; and typingReaction.
//
// # Concurrency
//
// Run is called once per App; Send, SendFile, Fetch, Read, Reactions,
// React, Edit, Delete, Typing, Status and ServeHTTP may be called from any
// goroutine at any time.
package slack
