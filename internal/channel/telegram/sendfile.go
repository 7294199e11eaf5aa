package telegram

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"talon/internal/channel"
)

var _ channel.Attacher = (*Bot)(nil)

// Telegram's limits on uploads by a bot (Bot API "Sending files").
const (
	maxUpload      = 50 << 20 // any file
	maxPhotoUpload = 10 << 20 // sendPhoto
	maxCaption     = 1024     // UTF-16 units, after entities parsing
)

// SendFile implements channel.Attacher: sendVoice for a voice note
// (f.Voice) in a format Telegram plays as one, sendPhoto for a JPEG or
// PNG Telegram can show as a photo, else sendDocument, as multipart with
// the caption in HTML and its plain fallback as Send does. A photo
// Telegram cannot process (too big, odd dimensions, not really an image)
// or a voice note the recipient's privacy settings refuse goes again as
// a document, so the file still arrives.
func (b *Bot) SendFile(ctx context.Context, t channel.Target, f channel.File, replyTo string) (channel.Sent, error) {
	tg, up, err := b.checkFile(t, f)
	if err != nil {
		return channel.Sent{}, err
	}
	var reply int64
	if replyTo != "" {
		if reply, err = messageID("send file", "reply", replyTo); err != nil {
			return channel.Sent{}, err
		}
	}
	method, field := "sendDocument", "document"
	switch {
	case f.Voice && isVoice(up):
		method, field = "sendVoice", "voice"
	case f.Voice:
		b.log.Info("telegram plays only Ogg Opus, MP3 and M4A as a voice note; sending the audio as a document", "mime", up.mime, "name", up.name)
	case isPhoto(up):
		method, field = "sendPhoto", "photo"
	}
	at := sendAttempt{html: f.Caption != "", reply: reply != 0}
	params := func(at sendAttempt) map[string]any {
		p := b.fileParams(f, tg, reply, at)
		p[field] = up
		return p
	}
	var out message
	err = b.call(ctx, "send file", method, tg, at, f.CaptionPlain != "", params, &out)
	if err != nil && method != "sendDocument" && asDocument(method, err) {
		b.log.Info("telegram refused the file as "+field+"; sending it as a document", "err", err)
		params = func(at sendAttempt) map[string]any {
			p := b.fileParams(f, tg, reply, at)
			p["document"] = up
			return p
		}
		err = b.call(ctx, "send file", "sendDocument", tg, at, f.CaptionPlain != "", params, &out)
	}
	if err != nil {
		return channel.Sent{}, err
	}
	return b.sent(out)
}

// checkFile validates a file before anything is sent.
func (b *Bot) checkFile(t channel.Target, f channel.File) (target, upload, error) {
	tg, err := parseTarget(t)
	if err != nil {
		return target{}, upload{}, fmt.Errorf("telegram: send file: %w", err)
	}
	switch {
	case len(f.Data) == 0:
		return target{}, upload{}, errors.New("telegram: send file: the file is empty")
	case len(f.Data) > maxUpload:
		return target{}, upload{}, fmt.Errorf("telegram: send file: %w: %d bytes, a bot uploads at most %d", channel.ErrTooLarge, len(f.Data), maxUpload)
	case utf16Len(f.CaptionPlain) > maxCaption:
		return target{}, upload{}, fmt.Errorf("telegram: send file: caption is longer than Telegram's %d characters", maxCaption)
	}
	mt, err := checkUpload(f.Name, f.MIME)
	if err != nil {
		return target{}, upload{}, fmt.Errorf("telegram: send file: %w", err)
	}
	return tg, upload{name: f.Name, mime: mt, data: f.Data}, nil
}

// isPhoto says Telegram may show u as a photo: JPEG or PNG, under the
// photo limit.
func isPhoto(u upload) bool {
	mt, _, _ := strings.Cut(u.mime, ";")
	return (mt == "image/jpeg" || mt == "image/png") && len(u.data) <= maxPhotoUpload
}

// voiceMIME and voiceExt are the audio Telegram plays as a voice note
// (Bot API sendVoice: Ogg Opus, MP3, M4A), by type or, for a generic
// type, by name, as OpenClaw decides.
var (
	voiceMIME = []string{"audio/ogg", "audio/opus", "audio/mpeg", "audio/mp3", "audio/mp4", "audio/x-m4a", "audio/m4a"}
	voiceExt  = []string{".oga", ".ogg", ".opus", ".mp3", ".m4a"}
)

// isVoice says Telegram may play u as a voice note.
func isVoice(u upload) bool {
	mt, _, _ := strings.Cut(u.mime, ";")
	return slices.Contains(voiceMIME, strings.ToLower(strings.TrimSpace(mt))) ||
		slices.Contains(voiceExt, strings.ToLower(path.Ext(u.name)))
}

// asDocument says err is Telegram's refusal of the file in the form
// method sends it, which a document still delivers: sendPhoto's of the
// image itself, sendVoice's of a voice note by a recipient who accepts
// none from the bot (Premium privacy setting).
func asDocument(method string, err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != 400 {
		return false
	}
	d := strings.ToUpper(ae.Description)
	if method == "sendVoice" {
		return strings.Contains(d, "VOICE_MESSAGES_FORBIDDEN")
	}
	return strings.Contains(d, "IMAGE_PROCESS_FAILED") || strings.Contains(d, "PHOTO_INVALID_DIMENSIONS") ||
		strings.Contains(d, "PHOTO_SAVE_FILE_INVALID")
}

func (b *Bot) fileParams(f channel.File, t target, replyTo int64, at sendAttempt) map[string]any {
	p := map[string]any{"chat_id": t.chat}
	switch {
	case at.html:
		p["caption"], p["parse_mode"] = f.Caption, "HTML"
	case f.CaptionPlain != "":
		p["caption"] = f.CaptionPlain
	}
	if t.thread != 0 && t.thread != generalTopic {
		p["message_thread_id"] = t.thread
	}
	if at.reply {
		p["reply_parameters"] = map[string]any{"message_id": replyTo}
	}
	return p
}

// sent is the answer to a message request that made a message.
func (b *Bot) sent(out message) (channel.Sent, error) {
	if out.MessageID <= 0 {
		return channel.Sent{}, fmt.Errorf("%w: the answer had no message id", ErrUnconfirmed)
	}
	b.update(func(s *channel.Status) { s.LastOutboundAt = time.Now() })
	return channel.Sent{MessageID: strconv.FormatInt(out.MessageID, 10)}, nil
}
