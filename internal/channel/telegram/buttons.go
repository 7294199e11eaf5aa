package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"talon/internal/channel"
)

// maxButtons is the most buttons Talon puts in its one row; Telegram
// takes 100 buttons in a keyboard, and a row wider than 8 is unreadable.
const maxButtons = 8

// checkButtons applies Telegram's limits: a label of its own (Telegram
// refuses an empty one) and callback_data of 1-64 bytes.
func checkButtons(bs []channel.Button) error {
	if len(bs) > maxButtons {
		return fmt.Errorf("%d buttons; at most %d fit in a row", len(bs), maxButtons)
	}
	for i, bt := range bs {
		switch {
		case strings.TrimSpace(bt.Label) == "":
			return fmt.Errorf("button %d has no label", i+1)
		case bt.Data == "" || len(bt.Data) > channel.MaxButtonData:
			return fmt.Errorf("button %d: data must be 1-%d bytes, not %d", i+1, channel.MaxButtonData, len(bt.Data))
		}
	}
	return nil
}

// keyboard is the reply_markup of one row of callback buttons.
func keyboard(bs []channel.Button) map[string]any {
	row := make([]map[string]any, len(bs))
	for i, bt := range bs {
		row[i] = map[string]any{"text": bt.Label, "callback_data": bt.Data}
	}
	return map[string]any{"inline_keyboard": [][]map[string]any{row}}
}

// pressEnvelope turns a button press into an inbound message from the
// presser, in the conversation of the message the button is on. ok is
// false for a press that cannot be placed: no presser, no data, or a
// message the bot can no longer see (Telegram sends it with date 0 and
// without its topic).
func pressEnvelope(id int64, q *callbackQuery, bot Info, accountID string, now time.Time) (channel.Envelope, bool) {
	if q.ID == "" || q.From == nil || q.Data == "" || q.Message == nil || q.Message.Date == 0 {
		return channel.Envelope{}, false
	}
	// The button's message is the bot's own; in a private chat the
	// conversation is the presser's, as for their messages (R11.5).
	m := *q.Message
	m.From = q.From
	peer, ok := peerOf(&m, bot)
	if !ok {
		return channel.Envelope{}, false
	}
	return channel.Envelope{
		Channel:    "telegram",
		AccountID:  accountID,
		DeliveryID: strconv.FormatInt(id, 10),
		MessageID:  q.ID,
		Peer:       peer,
		Sender:     senderOf(q.From),
		Text:       q.Data,
		Pressed:    true,
		Mentioned:  true,
		RoomLabel:  roomLabel(peer, &m),
		Time:       now.UTC(),
	}, true
}

// answerPress stops the spinner on the pressed button. The press is
// already stored (or dropped) when it is called, so a failure is only
// logged: Telegram ends the spinner by itself after a while.
func (b *Bot) answerPress(ctx context.Context, id string) {
	if err := b.api.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": id}, nil); err != nil {
		b.log.Warn("telegram answerCallbackQuery failed", "err", err)
	}
}
