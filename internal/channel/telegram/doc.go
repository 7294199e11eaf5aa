// Package telegram is the Telegram Bot API transport of a channel
// account (spec/channels.md §11): long polling or a webhook in, one
// sendMessage per reply chunk out, and the message tool's react, edit
// and delete (channel.Actor) on messages already in the chat.
//
// Inbound, only "message" updates with text or a caption become a
// channel.Envelope. Everything else Telegram sends for the subscribed
// allowed_updates (edited_message, channel_post, callback_query,
// message_reaction, my_chat_member) and messages without text (media
// alone, service messages) are acknowledged and dropped; a service
// message saying the group migrated to a supergroup is reported in
// Status. The poll offset moves past an update only after accept took
// it, and the webhook answers 200 only then, so an update is never
// acknowledged before the hub stored it.
//
// The bot makes every request through the http.Client its caller gives
// (for a tenant, one that refuses private addresses) and never listens:
// in webhook mode it is an http.Handler the gateway mounts. The token
// is in request URLs only, never in an error, a log line or Status.
//
// go-telegram/bot is not used: its poller advances the offset before the
// handler ran, and its webhook handler answers 200 whatever happened, so
// neither can give durable ingress.
package telegram
