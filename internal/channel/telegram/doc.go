// Package telegram is the Telegram Bot API transport of a channel
// account (spec/channels.md §11): long polling or a webhook in, one
// sendMessage per reply chunk out (with an inline keyboard when the
// chunk has Buttons), the message tool's react, edit and delete
// (channel.Actor), attachments in (channel.Fetcher) and out
// (channel.Attacher), and polls (channel.Pollster).
//
// Inbound, "message" updates with text, a caption or a file (photo — its
// largest size —, document, audio, voice, video, video note, sticker)
// become a channel.Envelope, Text "" for a file without a caption; and
// "callback_query" updates, the press of one of the bot's buttons,
// become an Envelope from the presser with Pressed set, answered with
// answerCallbackQuery once accept took it. A press that cannot be placed
// (on an inline message, on a message the bot can no longer see, without
// data) is answered and dropped. Everything else Telegram sends for the
// subscribed allowed_updates (edited_message, channel_post,
// message_reaction, my_chat_member) and service messages are
// acknowledged and dropped; a service message saying the group migrated
// to a supergroup is reported in Status. The poll offset moves past an
// update only after accept took it, and the webhook answers 200 only
// then, so an update is never acknowledged before the hub stored it.
//
// Fetch downloads with getFile and GET <apiRoot>/file/bot<token>/<path>,
// refusing a file over the limit from its announced size, getFile's, the
// Content-Length, or by counting (never reading more than limit+1
// bytes). The cloud Bot API serves files up to 20 MB only; its "file is
// too big" is ErrTooLarge too. A local-mode Bot API server's absolute
// file paths are not read. SendFile uploads multipart: sendVoice for a
// File.Voice in Ogg Opus, MP3 or M4A (a recipient who refuses voice
// notes, VOICE_MESSAGES_FORBIDDEN, gets it again by sendDocument),
// sendPhoto for a JPEG or PNG up to 10 MB (a photo Telegram cannot
// process goes again by sendDocument), sendDocument for the rest, up to
// Telegram's 50 MB; sendAudio is not used.
// SendPoll sends an anonymous poll; Telegram keeps a poll open for 5 s
// to 10 min or until closed, so a longer Duration is refused.
//
// Telegram has no history API for bots: channel.Reader is not
// implemented. Album grouping (media_group_id), animations as such (they
// arrive as their document), sending files by URL or file_id, quiz polls
// and keyboards of more than one row are not built.
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
