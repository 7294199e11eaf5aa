// Package discord connects one Discord bot account to Talon: a
// channel.Transport over Discord's gateway WebSocket (API v10) for
// inbound messages and its REST API for replies and typing (spec
// channels.md §13).
//
// The client is Talon's own, not discordgo: every request and the
// gateway dial go through the *http.Client the caller passes (netguard
// for a tenant's apiUrl and gatewayUrl), the sequence number a RESUME
// sends advances only after accept stored a message, and nothing but a
// bounded cache of channel shapes and the bot's roles is kept.
//
// Run connects: it checks the token (GET /users/@me), finds the gateway
// (GET /gateway/bot unless gatewayUrl is set), IDENTIFYs with the
// intents of spec R13.1, heartbeats, and RESUMEs after a drop with
// backoff. A 401 or close 4004 (bad token), 4014 (a privileged intent the
// Developer Portal has not enabled) and the sharding and version codes
// end Run with an error and a Status issue that says the fix.
//
// Inbound: MESSAGE_CREATE becomes a channel.Envelope — a DM is a direct
// peer (the author), a guild channel a room, a thread a room whose
// ParentPeer is its channel. The bot's own messages and group DMs are
// not accepted. A message's attachments[] become Envelope.Media (kind
// from the MIME type Discord guessed; a voice message is "voice"), and a
// message with files and no text is accepted with Text "". Fetch
// downloads one from its signed CDN URL without the token (https only,
// or the apiUrl's own host), refusing a file over the limit whether
// announced, sent as Content-Length or counted while reading. Stickers
// (sticker_items) are not taken as media. Without the Message Content
// intent Discord strips attachments with the text, so an unmentioned
// guild message has no media either.
//
// Outbound: Send posts a chunk with a nonce derived from its key and
// enforce_nonce, so Discord posts a chunk once however often it is sent
// within Discord's nonce window (minutes); 429s are waited out (they
// post nothing); an outcome that stays unknown is ErrUnconfirmed. React,
// Edit and Delete (channel.Actor) are one request each, never repeated.
// SendFile (channel.Attacher) posts one file as multipart/form-data
// (payload_json + files[0]) with the caption as content, refusing a file
// over 25 MB (and Discord's own 413) with channel.ErrTooLarge; having no
// key, it is never repeated either. SendPoll (channel.Pollster) posts a
// poll object (question ≤300, 1–10 answers ≤55, duration rounded up to
// whole hours, 1–768). Read (channel.Reader) pages GET
// /channels/{id}/messages (limit 1–100, 0 for Discord's 50; one of
// before, after, around) newest first; Reactions reads a message's
// reactions[] (count, me, emoji) without listing who reacted.
//
// Buttons: Outbound.Buttons become one action row of up to five buttons
// (custom_id = Data; the first primary, a deny red, the rest grey). A
// press arrives as INTERACTION_CREATE type 3 and becomes an envelope
// (Pressed, Mentioned, Text = custom_id, MessageID = DeliveryID = the
// interaction id) from the presser in the button's conversation; it is
// acknowledged with DEFERRED_UPDATE_MESSAGE only after accept took it,
// and Discord waits 3 s for that answer: a slower accept leaves the
// presser a "This interaction failed" notice although the press was
// stored. A press that maps to no conversation is acknowledged and
// dropped; slash commands and other interactions are not handled.
//
// A Bot is safe for concurrent use: Run once at a time, Send, Typing,
// the actions and Status from any goroutine.
package discord
